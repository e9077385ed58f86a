"""One row per commit: the id of the set of branches that reach it through any parent.

Reachability is stored as commit -> branch-set id (plus int_graph__branch_set_members), never as
commit x branch rows: thousands of branches times a million commits would not fit.
"""

from lakewarden.runtime.dbt_python import commit_branch_sets_frame


def model(dbt, session):
    dbt.config(materialized="table", file_format="parquet")
    return commit_branch_sets_frame(session, dbt.ref("stg_lakefs__commits"), dbt.ref("stg_lakefs__branches"))
