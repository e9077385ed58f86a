-- Safety net run with every committed GC build, computed independently of the GC's own
-- intermediate models: no marked object may be referenced by an entry of an active commit's
-- ranges or by a staged entry. Returns the offending rows (none expected). Checked on the
-- marked rows: live references are streamed once against the (small) marked set, compared by
-- their full normalised address (no hashing here, unlike the GC itself).

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

active_commits as (

    select * from {{ ref('gc_commits') }}
    where is_active

),

active_ranges as (

    select distinct metaranges.range_id
    from active_commits
    inner join {{ ref('stg_lakefs__metaranges') }} as metaranges
        on active_commits.meta_range_id = metaranges.meta_range_id

),

active_entries as (

    select
        ranges.address,
        ranges.address_type
    from {{ ref('stg_lakefs__ranges') }} as ranges
    left semi join active_ranges on ranges.range_id = active_ranges.range_id

),

staged_entries as (

    select
        address,
        address_type
    from {{ ref('stg_lakefs__staged') }}

),

live_entries as (

    select * from active_entries
    union all
    select * from staged_entries

),

live_objects as (

    select
        {{ physical_address('live_entries.address', 'live_entries.address_type', 'repository.storage_namespace_root') }}
            as physical_address
    from live_entries
    cross join repository

),

marked as (

    select physical_address from {{ ref('gc_marked_addresses') }}

)

select live_objects.physical_address
from live_objects
left semi join marked on live_objects.physical_address = marked.physical_address
