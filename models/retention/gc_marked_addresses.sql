-- One row per physical object marked for deletion by a committed GC run: referenced only by
-- expired commits, by no active commit and no staged entry, inside the storage namespace and
-- not under _lakefs/.

with

object_references as (

    select * from {{ ref('int_gc_object_references') }}

),

unreferenced as (

    select *
    from object_references
    where
        is_in_expired_range
        and not is_in_live_range
        and not is_staged
        and is_inside_namespace

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

)

select * from final
