-- One row per candidate key (int_gc_expired_entries.address_key) that a live reference also
-- has: an entry of a range an active commit lists, or a staged entry. Only keys of candidates
-- are kept (a semi join against the small candidate side), so the live side is streamed once
-- and never shuffled whole. Keys are 64-bit hashes of the normalised address: a collision
-- rescues an object that is not live (it is kept), never the reverse.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

range_liveness as (

    select * from {{ ref('int_gc_range_liveness') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

staged as (

    select * from {{ ref('stg_lakefs__staged') }}

),

candidates as (

    select distinct address_key from {{ ref('int_gc_expired_entries') }}

),

live_ranges as (

    select range_id
    from range_liveness
    where is_live

),

live_range_entries as (

    select
        ranges.address,
        ranges.address_type
    from ranges
    left semi join live_ranges on ranges.range_id = live_ranges.range_id

),

staged_entries as (

    select
        address,
        address_type
    from staged

),

live_references as (

    select * from live_range_entries
    union all
    select * from staged_entries

),

live_keys as (

    select
        xxhash64(
            {{ physical_address('live_references.address', 'live_references.address_type', 'repository.storage_namespace_root') }}
        ) as address_key
    from live_references
    cross join repository

),

final as (

    select distinct live_keys.address_key
    from live_keys
    left semi join candidates on live_keys.address_key = candidates.address_key

)

select * from final
