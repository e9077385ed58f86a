-- Safety net run with every committed GC build, computed independently of the GC's own
-- intermediate models: no marked object may be referenced by an entry of an active commit's
-- ranges or by a staged entry. Returns the offending rows (none expected). Checked on the
-- marked rows and compared by full normalised address. The entries of the active ranges (a
-- broadcast of range ids) are narrowed by a 64-bit hash (xxhash64) of their address to those
-- sharing a hash with a marked address: equal addresses have equal hashes, so the narrowing
-- cannot drop an offender, and the verdict is the full-address comparison. Neither narrowing
-- moves an entry between tasks: both small sides are broadcast.

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

marked_hashes as (

    select distinct xxhash64(physical_address) as address_hash
    from marked

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

active_objects_sharing_a_hash as (

    select
        {{ physical_address('active_range_entries.address', 'active_range_entries.address_type', 'repository.storage_namespace_root') }}
            as physical_address
    from active_range_entries
    cross join repository

),

active_objects as (

    select active_objects_sharing_a_hash.physical_address
    from active_objects_sharing_a_hash
    left semi join marked_hashes on xxhash64(active_objects_sharing_a_hash.physical_address) = marked_hashes.address_hash

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
