-- One row per candidate written since the previous run (optimized runs) that some committed
-- entry of a range read before references (those of the ranges this run reads are subtracted by
-- address in gc_uncommitted_inventory, so they are left out here). An optimized run subtracts only the
-- ranges it had not read before and trusts storage times to tell new objects from old ones, but
-- an object written after the previous run's cutoff can still be referenced by a range read
-- before: rewritten in place (same key, a later LastModified), or linked by an entry before it
-- was uploaded. Such an object must leave the uncommitted inventory, not only the marks: the
-- next run takes that inventory's objects as referenced by no range read before (ranges never
-- change) and checks them against no range again. The entries are met by a 64-bit key of their
-- address (no absolute URI built per entry), then compared by address, so the check is exact;
-- with no candidate written since (a no-op run) the key list is empty and no entry is read. A
-- clean run subtracts every range already: this model is empty then.
--
-- When the previous runs kept the keys of every entry of the ranges they had read (var
-- gc_uncommitted_kept_entry_keys: gc_uncommitted_entry_keys, saved beside each run's outputs),
-- the objects written since are tested against those keys instead: one column of longs read,
-- where keying every entry means reading and hashing every entry's address (8.45M entries: most
-- of this model's 2.9 s). That test is by key alone, and a key only ever keeps an object: a
-- collision leaves an unreferenced object out of the inventory, which a clean run finds again;
-- it never makes a referenced one a candidate. The ranges this run reads need no test here:
-- int_gc_uncommitted__committed_references subtracts their entries by address.
-- depends_on: {{ ref('stg_lakewarden__gc_uncommitted_previous_entry_keys') }}

{%- set optimized = var('gc_uncommitted_mode', 'clean') == 'optimized' %}
{%- set kept_keys = optimized and var('gc_uncommitted_kept_entry_keys', false) %}
{#- written_since's keys (below) as a query of their own, for the key list: the runner runs it
    before the statement, where the statement's CTEs do not exist -#}
{%- set written_since_keys =
    "select " ~ physical_key('candidates.compared_address', 'namespace.storage_namespace_root')
    ~ " from " ~ ref('int_gc_uncommitted__candidate_objects') ~ " as candidates"
    ~ " cross join " ~ ref('stg_lakefs__repository') ~ " as namespace"
    ~ " left anti join " ~ ref('int_gc_uncommitted__committed_references') ~ " as read_now"
    ~ " on candidates.compared_address = read_now.compared_address"
    ~ " where candidates.candidate_source = 'created_since_previous_run'" %}

with

candidate_objects as (

    select * from {{ ref('int_gc_uncommitted__candidate_objects') }}

),

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

committed_references as (

    select * from {{ ref('int_gc_uncommitted__committed_references') }}

),

-- Only the objects written since that no range this run reads references: those it does are
-- subtracted by address anyway (gc_uncommitted_inventory). At 1% churn most objects written since
-- are the new commits' own (9,000 of 10,000 at 1M stored objects), so this leaves a key list of
-- the few abandoned ones, short enough for the runner to hold in a local view (key_list).
written_since as (

    select
        candidate_objects.physical_address,
        candidate_objects.compared_address,
        {{ physical_key('candidate_objects.compared_address', 'repository.storage_namespace_root') }} as address_key
    from candidate_objects
    cross join repository
    left anti join committed_references
        on candidate_objects.compared_address = committed_references.compared_address
    where
        {{ 'true' if optimized else 'false' }}
        and candidate_objects.candidate_source = 'created_since_previous_run'

),

{% if kept_keys -%}
-- The keys written since, as a key list (below), met among the kept keys of the entries of
-- every range read before: none (a no-op run) reads no key at all. Up to 20,000 keys are
-- held in a local view the kept keys meet in a broadcast semi join (macros/range_list.sql).
kept_keys as (

    select previous_entry_keys.address_key
    from {{ ref('stg_lakewarden__gc_uncommitted_previous_entry_keys') }} as previous_entry_keys
    where previous_entry_keys.address_key in ({{ key_list(written_since_keys) }})

),

-- one row per candidate already (candidate_objects' grain): a semi join adds none
final as (

    select written_since.physical_address
    from written_since
    left semi join kept_keys on written_since.address_key = kept_keys.address_key

)
{%- else -%}
ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

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
    where {{ address_key('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }} in ({{ key_list(written_since_keys) }})
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
{%- endif %}

select * from final
