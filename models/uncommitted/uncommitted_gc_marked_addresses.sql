-- Uncommitted GC's result: one row per stored object marked for deletion -- in the uncommitted
-- inventory, referenced by no staged entry, at least --min-age old (the upload-token expiry),
-- strictly inside the storage namespace and not under _lakefs/. The report's addresses.csv is
-- this table.

with

uncommitted_inventory as (

    select * from {{ ref('uncommitted_gc_inventory') }}

),

final as (

    select
        run_id,
        address,
        'RELATIVE' as address_type,
        physical_address,
        size_bytes,
        last_modified_at,
        candidate_source
    from uncommitted_inventory
    where
        not is_staged
        and not is_too_young
        and is_inside_namespace
        and address is not null

)

select * from final
