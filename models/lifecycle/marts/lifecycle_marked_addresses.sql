-- One row per address marked in a lifecycle run: the policy expires every path referencing it
-- in every branch context that reaches it, at least one of those paths newly (since the last
-- deleting run), nothing that should survive references it (int_lifecycle__deduplications), it
-- lies inside the storage namespace and not under _lakefs/; with the ranges holding it (the
-- report draws its branches from them). The report's addresses.csv and the lakeFS-style output
-- under _lakefs/retention/lc/addresses are this table.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

addresses_to_remove as (

    select * from {{ ref('int_lifecycle__addresses_to_remove') }}
    {{- lifecycle_unless_no_range_read() }}

),

deduplications as (

    select * from {{ ref('int_lifecycle__deduplications') }}

),

candidate_references as (

    select * from {{ ref('int_lifecycle__candidate_references') }}
    {{- lifecycle_unless_no_range_read() }}

),

grouped as (

    select
        physical_address,
        min(address) as address,
        min_by(address_type, address) as address_type,
        max(size_bytes) as size_bytes,
        max(last_modified_at) as last_modified_at,
        array_sort(collect_set(path)) as paths,
        array_sort(array_distinct(flatten(collect_list(matched_rules)))) as matched_rules,
        array_distinct(flatten(collect_list(matched_rule_contexts))) as matched_rule_contexts
    from addresses_to_remove
    group by physical_address

),

marked as (

    select grouped.*
    from grouped
    cross join repository
    left anti join deduplications on grouped.physical_address = deduplications.physical_address
    where {{ is_deletable_address('grouped.physical_address', 'repository.storage_namespace_root') }}

),

holding_ranges as (

    select
        candidate_references.physical_address,
        array_sort(collect_set(candidate_references.range_id)) as range_ids
    from candidate_references
    left semi join marked on candidate_references.physical_address = marked.physical_address
    where candidate_references.reference_kind = 'committed'
    group by candidate_references.physical_address

),

final as (

    select
        cast('{{ var("run_id") }}' as string) as run_id,
        marked.address,
        marked.address_type,
        marked.physical_address,
        marked.size_bytes,
        marked.last_modified_at,
        marked.paths,
        size(marked.paths) as path_count,
        marked.matched_rules,
        marked.matched_rule_contexts,
        holding_ranges.range_ids
    from marked
    left join holding_ranges on marked.physical_address = holding_ranges.physical_address

)

select * from final
