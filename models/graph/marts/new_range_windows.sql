-- One row per range whose window this run computed (a range no earlier run on this state dir
-- had seen, with at least one entry): what the runner appends to the range_windows state table.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

range_windows as (

    select * from {{ ref('int_graph__range_windows') }}

),

final as (

    select
        repository.storage_namespace_root as storage_namespace,
        range_windows.range_id,
        range_windows.min_last_modified_at as min_last_modified,
        range_windows.max_last_modified_at as max_last_modified,
        range_windows.entry_count,
        range_windows.age_windows,
        '{{ var("run_id") }}' as first_seen_run_id
    from range_windows
    cross join repository
    where range_windows.is_computed

)

select * from final
