-- Uncommitted GC's result: one row per stored object marked for deletion -- in the uncommitted
-- inventory, referenced by no staged entry, at least --min-age old (the upload-token expiry),
-- strictly inside the storage namespace and not under _lakefs/, and (optimized runs) referenced
-- by no committed entry at all. The report's addresses.csv is this table.

{%- set optimized = var('uncommitted_gc_mode', 'clean') == 'optimized' %}

with

uncommitted_inventory as (

    select * from {{ ref('uncommitted_gc_inventory') }}

),

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

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

-- An optimized run subtracts only the ranges it had not read before and trusts storage times to
-- tell new objects from old ones; an object rewritten in place (same key, later LastModified)
-- that an old range references would pass for new. So every candidate is checked once more
-- against every committed entry: one scan of the entries' addresses against the candidates.
-- A clean run subtracted every range already.
committed_candidates as (

    select distinct candidates.physical_address
    from ranges
    cross join repository
    inner join candidates
        on
            {{ physical_address('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }}
            = candidates.compared_address
    where {{ 'true' if optimized else 'false' }}

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
    left anti join committed_candidates on candidates.physical_address = committed_candidates.physical_address

)

select * from final
