-- Safety net run with every committed GC build, computed independently of the GC's own
-- intermediate models: no marked object may be referenced by an entry of an active commit's
-- ranges or by a staged entry. Returns the offending rows (none expected). Checked on the
-- marked rows and compared by full normalised address. The entries of the active ranges (a
-- broadcast of range ids) are narrowed by their 64-bit address key (the address_key macro: the
-- xxhash64 of the address as stored for nearly every entry, no string built) to those sharing a
-- key with a marked address (physical_key of its URI): equal addresses have equal keys
-- (python/tests/test_address_macros.py checks the two macros agree), so the narrowing cannot
-- drop an offender, and the verdict is the full-address comparison, the URI built only for the
-- entries that share a key (building it for every entry first took most of this test: 8.45M
-- entries, 2 cores). Neither narrowing moves an entry between tasks: both small sides are broadcast.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

active_commits as (

    select * from {{ ref('gc_committed_commits') }}
    where is_active

),

active_ranges as (

    select distinct metaranges.range_id
    from active_commits
    inner join {{ ref('stg_lakefs__metaranges') }} as metaranges
        on active_commits.meta_range_id = metaranges.meta_range_id

),

marked as (

    select physical_address from {{ ref('gc_committed_marked_addresses') }}

),

marked_keys as (

    -- one key per marked object (a semi join needs no distinct keys: two objects sharing one
    -- narrow the entries to the same rows)
    select {{ physical_key('marked.physical_address', 'repository.storage_namespace_root') }} as address_key
    from marked
    cross join repository

),

active_range_entries as (

    -- range ids (as many as the snapshot has ranges, never its objects) go to every task
    select /*+ broadcast(active_ranges) */
        ranges.address,
        ranges.address_type
    from {{ ref('stg_lakefs__ranges') }} as ranges
    left semi join active_ranges on ranges.range_id = active_ranges.range_id
    -- the same ranges again, as a list the Parquet reader can skip the others' files and row groups by
    where {{ skip_to_ranges('ranges.range_id',
        "select distinct metaranges.range_id from " ~ ref('gc_committed_commits') ~ " as commits"
        ~ " inner join " ~ ref('stg_lakefs__metaranges') ~ " as metaranges"
        ~ " on commits.meta_range_id = metaranges.meta_range_id where commits.is_active"
    ) }}

),

active_keyed_entries as (

    select
        active_range_entries.address,
        active_range_entries.address_type,
        {{ address_key('active_range_entries.address', 'active_range_entries.address_type', 'repository.storage_namespace_root') }}
            as address_key
    from active_range_entries
    cross join repository

),

active_entries_sharing_a_key as (

    select
        active_keyed_entries.address,
        active_keyed_entries.address_type
    from active_keyed_entries
    left semi join marked_keys on active_keyed_entries.address_key = marked_keys.address_key

),

active_objects as (

    select
        {{ physical_address('active_entries_sharing_a_key.address', 'active_entries_sharing_a_key.address_type', 'repository.storage_namespace_root') }}
            as physical_address
    from active_entries_sharing_a_key
    cross join repository

),

staged_objects as (

    select
        {{ physical_address('staged.address', 'staged.address_type', 'repository.storage_namespace_root') }}
            as physical_address
    from {{ ref('stg_lakefs__staged') }} as staged
    cross join repository

),

live_objects as (

    select physical_address from active_objects
    union all
    select physical_address from staged_objects

),

final as (

    select live_objects.physical_address
    from live_objects
    left semi join marked on live_objects.physical_address = marked.physical_address

)

select * from final
