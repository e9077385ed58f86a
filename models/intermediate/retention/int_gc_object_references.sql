-- One row per physical object that an entry of a listed range or a staged entry references,
-- with the kinds of reference it has: a live range (an active commit lists it), an expired
-- range (only expired commits list it), a staged entry. One pass over the entries and one
-- shuffle: liveness was decided per range, so each entry only carries its range's flag.

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

listed_range_entries as (

    select
        ranges.path,
        ranges.address,
        ranges.address_type,
        ranges.size_bytes,
        ranges.last_modified_at,
        range_liveness.is_live as is_in_live_range,
        not range_liveness.is_live as is_in_expired_range,
        false as is_staged
    from ranges
    inner join range_liveness on ranges.range_id = range_liveness.range_id

),

staged_entries as (

    select
        path,
        address,
        address_type,
        cast(null as bigint) as size_bytes,
        last_modified_at,
        false as is_in_live_range,
        false as is_in_expired_range,
        true as is_staged
    from staged

),

all_references as (

    select * from listed_range_entries
    union all
    select * from staged_entries

),

located as (

    select
        {{ physical_address('all_references.address', 'all_references.address_type', 'repository.storage_namespace_root') }}
            as physical_address,
        repository.storage_namespace_root,
        all_references.*
    from all_references
    cross join repository

),

grouped as (

    select
        physical_address,
        min(storage_namespace_root) as storage_namespace_root,
        min(address) as address,
        min_by(address_type, address) as address_type,
        max(size_bytes) as size_bytes,
        max(last_modified_at) as last_modified_at,
        min(path) as example_path,
        count(distinct path) as path_count,
        bool_or(is_in_live_range) as is_in_live_range,
        bool_or(is_in_expired_range) as is_in_expired_range,
        bool_or(is_staged) as is_staged
    from located
    group by physical_address

),

final as (

    select
        physical_address,
        address,
        address_type,
        size_bytes,
        last_modified_at,
        example_path,
        path_count,
        is_in_live_range,
        is_in_expired_range,
        is_staged,
        {{ is_deletable_address('physical_address', 'storage_namespace_root') }} as is_inside_namespace
    from grouped

)

select * from final
