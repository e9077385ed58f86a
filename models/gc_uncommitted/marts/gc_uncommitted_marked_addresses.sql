-- Uncommitted GC's result: one row per stored object marked for deletion -- in the uncommitted
-- inventory, referenced by no staged entry, at least --min-age old (the upload-token expiry),
-- strictly inside the storage namespace and not under _lakefs/. The report's addresses.csv is
-- this table.

with

uncommitted_inventory as (

    select * from {{ ref('gc_uncommitted_inventory') }}

),

candidates as (

    select *
    from uncommitted_inventory
    where
        not is_staged
        and not is_too_young
        and is_inside_namespace
        and address is not null

),

final as (

    select
        candidates.run_id,
        candidates.address,
        'RELATIVE' as address_type,
        candidates.physical_address,
        candidates.size_bytes,
        candidates.last_modified_at,
        candidates.candidate_source
    from candidates

)

select * from final
