-- One row per entry of a range that only expired commits list: the candidates of committed GC.
-- Liveness was decided per range, so only the entries of expired-only ranges are read here, each
-- with its object's normalised address and a 64-bit key of it for the joins that follow.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

range_liveness as (

    select * from {{ ref('int_gc_committed__range_liveness') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

expired_ranges as (

    select range_id
    from range_liveness
    where not is_live

),

expired_range_entries as (

    select ranges.*
    from ranges
    left semi join expired_ranges on ranges.range_id = expired_ranges.range_id
    -- the same ranges again, as a list the Parquet reader can skip the others' files and row groups by
    where {{ skip_to_ranges('ranges.range_id', "select range_id from " ~ ref('int_gc_committed__range_liveness') ~ " where not is_live") }}

),

located as (

    select
        expired_range_entries.range_id,
        expired_range_entries.path,
        expired_range_entries.address,
        expired_range_entries.address_type,
        expired_range_entries.size_bytes,
        expired_range_entries.last_modified_at,
        repository.storage_namespace_root,
        {{ physical_address('expired_range_entries.address', 'expired_range_entries.address_type', 'repository.storage_namespace_root') }}
            as physical_address
    from expired_range_entries
    cross join repository

),

final as (

    select
        range_id,
        path,
        address,
        address_type,
        size_bytes,
        last_modified_at,
        physical_address,
        {{ physical_key('physical_address', 'storage_namespace_root') }} as address_key,
        {{ is_deletable_address('physical_address', 'storage_namespace_root') }} as is_inside_namespace
    from located

)

select * from final
