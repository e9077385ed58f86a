-- One row per address marked in a lifecycle run: the policy expires every path referencing it
-- in every branch context that reaches it, at least one of those paths newly (since the last
-- deleting run), nothing that should survive references it (int_lifecycle__deduplications), it
-- lies inside the storage namespace and not under _lakefs/. The report's addresses.csv and the
-- lakeFS-style output under _lakefs/retention/lc/addresses are this table.

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

final as (

    select
        cast('{{ var("run_id") }}' as string) as run_id,
        address,
        address_type,
        physical_address,
        size_bytes,
        last_modified_at,
        paths,
        size(paths) as path_count,
        matched_rules,
        matched_rule_contexts
    from marked

)

select * from final
