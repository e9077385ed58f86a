"""One row per commit kept active by a retention walk (branch HEADs and dangling commits).

The first-parent walk is sequential per start point, so it runs on the driver over the commit
graph (lakewarden.commit_graph); see that module for semantics and scale limits.
"""

from lakewarden.runtime.dbt_python import active_commits_frame


def model(dbt, session):
    dbt.config(materialized="table", file_format="parquet")
    commits = dbt.ref("stg_lakefs__commits")
    start_points = dbt.ref("int_gc_committed__start_points")
    return active_commits_frame(session, commits, start_points)
