-- Step 4 of the design, second half: one row per (path, physical address) held by a range a
-- potential commit lists, that the policy expires now in every branch context reaching it and
-- that had not matched in the last deleting run (expired in every context at last_deleted).
-- Only ranges of potential commits are read; each entry is judged against the rules in one
-- pass (the rules travel with every task as one small array), then grouped by (path, address)
-- with the union of the branch contexts of every range holding it.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

range_branches as (

    select * from {{ ref('int_lifecycle__range_branches') }}

),

rule_contexts as (

    select * from {{ ref('int_lifecycle__rule_contexts') }}

),

rule_list as (

    {{ lifecycle_rule_list('rule_contexts') }}

),

potential_ranges as (

    select
        range_id,
        branch_contexts
    from range_branches
    where is_potential

),

potential_entries as (

    select
        ranges.path,
        ranges.address,
        ranges.address_type,
        ranges.size_bytes,
        ranges.last_modified_at,
        potential_ranges.branch_contexts
    from ranges
    inner join potential_ranges on ranges.range_id = potential_ranges.range_id

),

-- A path no rule prefix matches can never be expired; (path, address) groups share the path,
-- so dropping those entries here cannot hide a veto from a group that could still qualify.
judged_entries as (

    select
        {{ physical_address('potential_entries.address', 'potential_entries.address_type', 'repository.storage_namespace_root') }}
            as physical_address,
        potential_entries.path,
        potential_entries.address,
        potential_entries.address_type,
        potential_entries.size_bytes,
        potential_entries.last_modified_at,
        potential_entries.branch_contexts,
        {{ lifecycle_expired_everywhere('potential_entries.path', 'potential_entries.last_modified_at', 'potential_entries.branch_contexts', 'rule_list.rules') }}
            as is_expired_now,
        {{ lifecycle_expired_everywhere('potential_entries.path', 'potential_entries.last_modified_at', 'potential_entries.branch_contexts', 'rule_list.rules', 'last_deleted') }}
            as was_expired_last_run,
        {{ lifecycle_matched_rules('potential_entries.path', 'potential_entries.last_modified_at', 'potential_entries.branch_contexts', 'rule_list.rules') }}
            as matched
    from potential_entries
    cross join rule_list
    cross join repository
    where exists(rule_list.prefixes, prefix -> startswith(potential_entries.path, prefix))

),

grouped as (

    select
        path,
        physical_address,
        min(address) as address,
        min_by(address_type, address) as address_type,
        max(size_bytes) as size_bytes,
        max(last_modified_at) as last_modified_at,
        bool_and(is_expired_now) as is_expired_now,
        bool_and(was_expired_last_run) as was_expired_last_run,
        array_distinct(flatten(collect_list(matched))) as matched,
        array_sort(array_distinct(flatten(collect_list(branch_contexts)))) as branch_contexts
    from judged_entries
    group by path, physical_address

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
