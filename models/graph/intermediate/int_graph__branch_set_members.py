"""One row per (branch set, member branch); the empty set has one row with a null branch."""

from lakewarden.runtime.dbt_python import branch_set_members_frame


def model(dbt, session):
    dbt.config(materialized="table", file_format="parquet")
    return branch_set_members_frame(session, dbt.ref("stg_lakefs__commits"), dbt.ref("stg_lakefs__branches"))
