-- One row per committed entry this run reads, with the normalised address it references. A
-- clean run reads every range of the snapshot: all ranges of all commits from genesis, and
-- (the safe reading) ranges no commit lists yet, such as a commit's in progress. An optimized
-- run reads only ranges the previous run had not read: those commits newer than its Last Commit
-- introduced (and any that arrived late or are still unlisted); objects of the ranges it had
-- read are in neither its uncommitted inventory nor among the objects written since.

{%- set optimized = var('uncommitted_gc_mode', 'clean') == 'optimized' %}

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

previously_read_ranges as (

    select distinct range_id
    from {{ source('lakewarden', 'uncommitted_gc_previous_ranges') }}
    where {{ 'true' if optimized else 'false' }}

),

read_ranges as (

    select ranges.*
    from ranges
    left anti join previously_read_ranges on ranges.range_id = previously_read_ranges.range_id

),

final as (

    select
        read_ranges.range_id,
        read_ranges.path,
        read_ranges.address,
        read_ranges.address_type,
        {{ physical_address('read_ranges.address', 'read_ranges.address_type', 'repository.storage_namespace_root') }}
            as compared_address
    from read_ranges
    cross join repository

)

select * from final
