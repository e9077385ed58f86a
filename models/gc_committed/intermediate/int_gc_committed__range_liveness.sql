-- One row per range referenced by any commit: whether an active commit references it.
-- Ranges are shared between commits, so liveness is decided once per range, not per commit.

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
