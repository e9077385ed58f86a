-- One row per candidate written since the previous run (optimized runs) that some committed
-- entry references, in any range: read before or not. An optimized run subtracts only the
-- ranges it had not read before and trusts storage times to tell new objects from old ones, but
-- an object written after the previous run's cutoff can still be referenced by a range read
-- before: rewritten in place (same key, a later LastModified), or linked by an entry before it
-- was uploaded. Such an object must leave the uncommitted inventory, not only the marks: the
-- next run takes that inventory's objects as referenced by no range read before (ranges never
-- change) and checks them against no range again. The entries are met by a 64-bit key of their
-- address (no absolute URI built per entry), then compared by address, so the check is exact;
-- with no candidate written since (a no-op run) the key list is empty and no entry is read. A
-- clean run subtracts every range already: this model is empty then.

{%- set optimized = var('gc_uncommitted_mode', 'clean') == 'optimized' %}

with

candidate_objects as (

    select * from {{ ref('int_gc_uncommitted__candidate_objects') }}

),

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

written_since as (

    select
        candidate_objects.physical_address,
        candidate_objects.compared_address,
        {{ physical_key('candidate_objects.compared_address', 'repository.storage_namespace_root') }} as address_key
    from candidate_objects
    cross join repository
    where
        {{ 'true' if optimized else 'false' }}
        and candidate_objects.candidate_source = 'created_since_previous_run'

),

-- The keys written since, as a key list: the runner puts up to a few thousand of them in the
-- SQL, and none (a no-op run) as a null, so no entry is read at all.
entry_keys as (

    select
        ranges.address,
        ranges.address_type,
        {{ address_key('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }} as address_key
    from ranges
    cross join repository
    {%- if optimized %}
    where {{ address_key('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }} in ({{ key_list(
        "select " ~ physical_key('candidates.compared_address', 'namespace.storage_namespace_root')
        ~ " from " ~ ref('int_gc_uncommitted__candidate_objects') ~ " as candidates"
        ~ " cross join " ~ ref('stg_lakefs__repository') ~ " as namespace"
        ~ " where candidates.candidate_source = 'created_since_previous_run'"
    ) }})
    {%- endif %}

),

final as (

    select distinct written_since.physical_address
    from entry_keys
    cross join repository
    inner join written_since on entry_keys.address_key = written_since.address_key
    where
        {{ physical_address('entry_keys.address', 'entry_keys.address_type', 'repository.storage_namespace_root') }}
        = written_since.compared_address

)

select * from final
