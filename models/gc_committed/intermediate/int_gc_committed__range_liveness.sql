-- One row per range referenced by any commit: whether an active commit references it.
-- Ranges are shared between commits, so liveness is decided once per range, not per commit.
-- A table (one row per range: small): the mark reads it three times (expired and live ranges,
-- and the candidates' keys), and a view would compute the commits' states three times over.

{{ config(materialized='table') }}

with

commit_states as (

    select * from {{ ref('int_gc_committed__commit_states') }}

),

metaranges as (

    select * from {{ ref('stg_lakefs__metaranges') }}

),

commit_ranges as (

    select
        metaranges.range_id,
        commit_states.is_active
    from commit_states
    inner join metaranges on commit_states.meta_range_id = metaranges.meta_range_id

),

final as (

    select
        range_id,
        bool_or(is_active) as is_live,
        count(*) as referencing_commits
    from commit_ranges
    group by range_id

)

select * from final
