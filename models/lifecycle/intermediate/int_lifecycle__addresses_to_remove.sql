-- Step 4 of the design, second half: one row per (path, physical address) held by a range a
-- potential commit lists, that the policy expires now in every branch context reaching it and
-- that had not matched in the last deleting run (expired in every context at last_deleted).
-- Each entry is judged against the rules in one pass (the rules travel with every task as one
-- small array), then grouped by (path, address) with the union of the branch contexts of
-- every range holding it.
--
-- Only the ranges int_lifecycle__read_ranges reads are scanned in full: an entry of another
-- potential range is expired now exactly when it was at last_deleted, so it is never newly
-- expired itself. It can still take part in a group a read range makes newly expired (it may
-- veto it, or add rules and contexts), so for the paths of those groups, and only for them,
-- the entries of the other potential ranges are added before the groups are decided: the
-- result is the one a scan of every potential range gives. A run that reads no range plans
-- no scan at all (macro lifecycle_unless_no_range_read).

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

read_ranges as (

    select * from {{ ref('int_lifecycle__read_ranges') }}
    {{- lifecycle_unless_no_range_read() }}

),

rule_contexts as (

    select * from {{ ref('int_lifecycle__rule_contexts') }}

),

rule_list as (

    {{ lifecycle_rule_list('rule_contexts') }}

),

scanned_ranges as (

    select
        range_id,
        branch_contexts
    from read_ranges
    where is_read

),

skipped_ranges as (

    select
        range_id,
        branch_contexts
    from read_ranges
    where not is_read

),

scanned_entries as (

    select
        ranges.path,
        ranges.address,
        ranges.address_type,
        ranges.size_bytes,
        ranges.last_modified_at,
        scanned_ranges.branch_contexts
    from ranges
    inner join scanned_ranges on ranges.range_id = scanned_ranges.range_id

),

judged_scanned_entries as (

    {{ lifecycle_judged_entries('scanned_entries') }}

),

scanned_groups as (

    {{ lifecycle_entry_groups('judged_scanned_entries') }}

),

candidate_paths as (

    select distinct path
    from scanned_groups
    where is_expired_now and not was_expired_last_run

),

skipped_candidate_entries as (

    select
        ranges.path,
        ranges.address,
        ranges.address_type,
        ranges.size_bytes,
        ranges.last_modified_at,
        skipped_ranges.branch_contexts
    from ranges
    inner join skipped_ranges on ranges.range_id = skipped_ranges.range_id
    left semi join candidate_paths on ranges.path = candidate_paths.path

),

judged_skipped_entries as (

    {{ lifecycle_judged_entries('skipped_candidate_entries') }}

),

candidate_groups as (

    select scanned_groups.*
    from scanned_groups
    left semi join candidate_paths on scanned_groups.path = candidate_paths.path

    union all

    {{ lifecycle_entry_groups('judged_skipped_entries') }}

),

grouped as (

    {{ lifecycle_entry_groups('candidate_groups') }}

),

final as (

    select
        path,
        physical_address,
        address,
        address_type,
        size_bytes,
        last_modified_at,
        array_sort(array_distinct(transform(matched, pair -> pair.rule_id))) as matched_rules,
        matched as matched_rule_contexts,
        branch_contexts
    from grouped
    where is_expired_now and not was_expired_last_run

)

select * from final
