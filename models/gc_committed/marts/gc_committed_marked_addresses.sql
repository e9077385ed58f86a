-- One row per physical object marked for deletion by a committed GC run: referenced only by
-- entries of expired-only ranges, by no live range entry and no staged entry, inside the
-- storage namespace, not under _lakefs/, not lakeFS's dummy; with the ranges holding it (the
-- report draws its branches from them without reading the entries again).
-- The keys decide (int_gc_committed__address_keys: a candidate no live reference shares a key
-- with); only the candidates' own entries are then read with their addresses, moved once by
-- key, and grouped twice on that one partitioning (by path, then by object): the grouping
-- keys all start with the key, so neither grouping moves the rows again.

with

expired_entries as (

    select * from {{ ref('int_gc_committed__expired_entries') }}

),

address_keys as (

    select * from {{ ref('int_gc_committed__address_keys') }}

),

unreferenced_keys as (

    select address_key
    from address_keys
    where is_candidate and not is_live

),

unreferenced_entries as (

    select /*+ repartition(address_key) */ expired_entries.*
    from expired_entries
    left semi join unreferenced_keys on expired_entries.address_key = unreferenced_keys.address_key

),

object_paths as (

    select
        address_key,
        physical_address,
        path,
        min(address) as address,
        min_by(address_type, address) as address_type,
        max(size_bytes) as size_bytes,
        max(last_modified_at) as last_modified_at,
        collect_set(range_id) as range_ids,
        bool_and(is_inside_namespace) as is_inside_namespace
    from unreferenced_entries
    group by address_key, physical_address, path

),

objects as (

    select
        physical_address,
        min(address) as address,
        min_by(address_type, address) as address_type,
        max(size_bytes) as size_bytes,
        max(last_modified_at) as last_modified_at,
        min(path) as example_path,
        count(*) as path_count,
        array_sort(array_distinct(flatten(collect_list(range_ids)))) as range_ids
    from object_paths
    where is_inside_namespace
    group by address_key, physical_address

),

final as (

    select
        '{{ var("run_id") }}' as run_id,
        address,
        address_type,
        physical_address,
        size_bytes,
        last_modified_at,
        example_path,
        path_count,
        range_ids
    from objects

)

select * from final
