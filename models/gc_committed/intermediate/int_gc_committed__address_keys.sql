-- One row per object the snapshot references, by a 64-bit key of its address (macro address_key): every
-- entry of every range and every staged entry, in ONE pass (an aggregate of fixed-width values
-- keyed by the address's xxhash64, never a shuffle of the addresses themselves). It tells the
-- mark which candidates a live reference rescues and gives the report the ages of the objects
-- that stay. Keys are hashes: two objects sharing one count as one here, so a collision keeps
-- an object (a live reference to either rescues both), never marks one.
-- A table: the mark reads it and the report's kept ages read it (gc_committed_kept_addresses).

{{ config(materialized='table') }}

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

staged as (

    select * from {{ ref('stg_lakefs__staged') }}

),

range_entries as (

    select
        ranges.address,
        ranges.address_type,
        ranges.last_modified_at,
        ranges.size_bytes,
        coalesce(range_liveness.is_live, false) as is_live,
        -- a range no commit lists (a commit in progress) neither rescues nor offers candidates
        coalesce(not range_liveness.is_live, false) as is_expired,
        true as is_committed
    from ranges
    left join range_liveness on ranges.range_id = range_liveness.range_id

),

staged_entries as (

    select
        address,
        address_type,
        cast(null as timestamp) as last_modified_at,
        cast(null as bigint) as size_bytes,
        true as is_live,
        false as is_expired,
        false as is_committed
    from staged

),

all_references as (

    select * from range_entries
    union all
    select * from staged_entries

),

keyed as (

    select
        {{ address_key('all_references.address', 'all_references.address_type', 'repository.storage_namespace_root') }}
            as address_key,
        all_references.is_live,
        all_references.is_expired,
        all_references.is_committed,
        all_references.last_modified_at,
        all_references.size_bytes
    from all_references
    cross join repository

),

final as (

    select
        address_key,
        bool_or(is_live) as is_live,
        bool_or(is_expired) as is_candidate,
        bool_or(is_committed) as is_committed,
        min(last_modified_at) as earliest_modified_at,
        max(size_bytes) as size_bytes
    from keyed
    group by address_key

)

select * from final
