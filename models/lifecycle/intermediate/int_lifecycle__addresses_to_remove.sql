-- Step 4 of the design, second half: one row per (path, physical address) held by a range a
-- potential commit lists, that the policy expires now in every branch context reaching it and
-- that had not matched in the last deleting run (expired in every context at last_deleted).
-- Only the paths of newly expired entries can qualify (int_lifecycle__newly_expired_entries:
-- such a group holds one), and each of those paths is judged over every potential range
-- holding it (int_lifecycle__candidate_references), read or not: an entry of a range not read
-- may veto its group, or add rules and contexts to it, so the groups and their rules are the
-- ones a scan of every potential range gives.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

candidate_references as (

    select * from {{ ref('int_lifecycle__candidate_references') }}
    {{- lifecycle_unless_no_range_read() }}

),

newly_expired_entries as (

    select * from {{ ref('int_lifecycle__newly_expired_entries') }}
    {{- lifecycle_unless_no_range_read() }}

),

rule_contexts as (

    select * from {{ ref('int_lifecycle__rule_contexts') }}

),

rule_list as (

    {{ lifecycle_rule_list('rule_contexts') }}

),

candidate_paths as (

    select distinct path
    from newly_expired_entries

),

potential_entries as (

    select
        candidate_references.range_id,
        candidate_references.path,
        candidate_references.address,
        candidate_references.address_type,
        candidate_references.size_bytes,
        candidate_references.last_modified_at,
        candidate_references.branch_contexts
    from candidate_references
    left semi join candidate_paths on candidate_references.path = candidate_paths.path
    where
        candidate_references.reference_kind = 'committed'
        and candidate_references.is_potential

),

judged_entries as (

    {{ lifecycle_judged_entries('potential_entries') }}

),

grouped as (

    {{ lifecycle_entry_groups('judged_entries') }}

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
