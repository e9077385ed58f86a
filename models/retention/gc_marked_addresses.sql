-- One row per physical object marked for deletion by a committed GC run: referenced only by
-- expired commits, by no active commit and no staged entry, inside the storage namespace and
-- not under _lakefs/.

with

expired_addresses as (

    select * from {{ ref('int_gc_expired_addresses') }}

),

live_addresses as (

    select * from {{ ref('int_gc_live_addresses') }}

),

unreferenced as (

    select expired_addresses.*
    from expired_addresses
    left anti join live_addresses
        on expired_addresses.physical_address = live_addresses.physical_address

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
        path_count
    from unreferenced
    where is_inside_namespace

)

select * from final
