-- One row per commit of the repository: whether committed GC keeps it active, and why
-- (published from int_gc_committed__commit_states; the report's commits.csv is this table).

with

commit_states as (

    select * from {{ ref('int_gc_committed__commit_states') }}

),

final as (

    select
        run_id,
        commit_id,
        created_at,
        meta_range_id,
        is_active,
        is_expired,
        reason,
        activated_by_branch_id,
        tag_id
    from commit_states

)

select * from final
