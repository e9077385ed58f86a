-- One row per entry of a range whose reference keys this run computed (a range of the snapshot
-- without kept keys: int_lifecycle__ranges_without_keys), in the columns of the
-- range_reference_keys state table, which the runner appends them to under the state lock, a
-- range's rows in one file: a later run looks its candidates up there and reads only the
-- ranges that may hold them. The keys are those int_lifecycle__candidate_references filters
-- by: xxhash64 of the path, and the object's 64-bit key (macro address_key) relative to this
-- namespace. A view: the runner's append computes it, once.

{{ config(materialized='view') }}

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

ranges_without_keys as (

    select * from {{ ref('int_lifecycle__ranges_without_keys') }}

),

final as (

    select
        repository.storage_namespace_root as storage_namespace,
        ranges.range_id,
        xxhash64(ranges.path) as path_key,
        {{ address_key('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }} as address_key,
        '{{ var("run_id") }}' as first_seen_run_id
    from ranges
    inner join ranges_without_keys on ranges.range_id = ranges_without_keys.range_id
    cross join repository
    -- the same ranges again, as a list the Parquet reader can skip the others' files and row groups by
    where {{ skip_to_ranges('ranges.range_id', "select range_id from " ~ ref('int_lifecycle__ranges_without_keys')) }}

)

select * from final
