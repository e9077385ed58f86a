-- One row per physical object marked for deletion by a committed GC run: referenced only by
-- entries of expired-only ranges, by no live range entry and no staged entry, inside the
-- storage namespace, not under _lakefs/, not lakeFS's dummy.

with

expired_entries as (

    select * from {{ ref('int_gc_expired_entries') }}

),

rescued as (

    select * from {{ ref('int_gc_rescued_addresses') }}

),

unreferenced as (

    select expired_entries.*
    from expired_entries
    left anti join rescued on expired_entries.address_key = rescued.address_key
    where expired_entries.is_inside_namespace

),

final as (

    select
        '{{ var("run_id") }}' as run_id,
        min(address) as address,
        min_by(address_type, address) as address_type,
        physical_address,
        max(size_bytes) as size_bytes,
        max(last_modified_at) as last_modified_at,
        min(path) as example_path,
        count(distinct path) as path_count
    from unreferenced
    group by physical_address

)

select * from final
