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
-- tell new objects from old ones. An object written after the previous run's cutoff can still be
-- referenced by a range read before: rewritten in place (same key, later LastModified), or
-- linked by an entry before it was uploaded. So each candidate written since is checked once
-- more against every committed entry. Only those: an object of the previous uncommitted
-- inventory (not rewritten since, or it would be one written since) was referenced by no range
-- read before, and ranges never change. The entries are met by a 64-bit key of their address
-- (no absolute URI built per entry), then compared by address, so the check is exact; with no
-- candidate written since (a no-op run) the empty side ends the join before any entry is read.
-- A clean run subtracted every range already.
written_since as (

    select
        candidates.physical_address,
        candidates.compared_address,
        {{ physical_key('candidates.compared_address', 'repository.storage_namespace_root') }} as address_key
    from candidates
    cross join repository
    where
        {{ 'true' if optimized else 'false' }}
        and candidates.candidate_source = 'created_since_previous_run'

),

entry_keys as (

    select
        ranges.address,
        ranges.address_type,
        {{ address_key('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }} as address_key
    from ranges
    cross join repository

),

committed_candidates as (

    select distinct written_since.physical_address
    from entry_keys
    cross join repository
    inner join written_since on entry_keys.address_key = written_since.address_key
    where
        {{ physical_address('entry_keys.address', 'entry_keys.address_type', 'repository.storage_namespace_root') }}
        = written_since.compared_address

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
