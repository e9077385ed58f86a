-- One row per range of the snapshot's ranges table (listed by a commit or not) whose reference
-- keys no earlier run on this state dir kept for this namespace
-- (stg_lakewarden__range_reference_keys): int_lifecycle__searched_ranges reads every such range
-- whatever it looks for, and this run computes and keeps their keys
-- (lifecycle_new_range_reference_keys). Only the range id column of the entries is read. A run
-- that reads no range looks nothing up and plans no scan (macro lifecycle_unless_no_range_read).

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}
    {{- lifecycle_unless_no_range_read() }}

),

all_kept_keys as (

    select * from {{ ref('stg_lakewarden__range_reference_keys') }}

),

-- object keys are relative to the namespace root: another namespace's keys say nothing here
kept_keys as (

    select all_kept_keys.range_id
    from all_kept_keys
    inner join repository on all_kept_keys.storage_namespace = repository.storage_namespace_root

),

entry_ranges as (

    select distinct range_id
    from ranges

),

final as (

    select entry_ranges.range_id
    from entry_ranges
    left anti join kept_keys on entry_ranges.range_id = kept_keys.range_id

)

select * from final
