-- One row per (storage namespace, range) whose age window an earlier run on this state dir
-- computed. Two runs may have appended the same range; its rows are identical (the range's
-- entries never change), so any one of them stands for the range.

with

source as (

    select * from {{ source('lakewarden', 'range_windows') }}

),

renamed as (

    select
        storage_namespace,
        range_id,
        min(min_last_modified) as min_last_modified_at,
        max(max_last_modified) as max_last_modified_at,
        max(entry_count) as entry_count,
        max(age_windows) as age_windows,
        min(first_seen_run_id) as first_seen_run_id
    from source
    group by storage_namespace, range_id

)

select * from renamed
