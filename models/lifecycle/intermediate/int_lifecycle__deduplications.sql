-- Step 5 of the design, deduplications: one row per address to remove that must be kept
-- because something that should survive still references it: an entry, in any range of any
-- commit (potential or not), whose path the policy does not expire in every branch context
-- reaching it (no rule matches it there, or it is too young); an entry of a range no commit
-- lists (written by a commit in progress); or a staged entry on any branch.
-- Judging every occurrence, not "any occurrence in a non-potential commit", is stricter than
-- the design only in deleting what the design would keep for no reason; it keeps everything
-- the design keeps for a reason.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

staged as (

    select * from {{ ref('stg_lakefs__staged') }}

),

range_branches as (

    select * from {{ ref('int_lifecycle__range_branches') }}

),

rule_contexts as (

    select * from {{ ref('int_lifecycle__rule_contexts') }}

),

addresses_to_remove as (

    select * from {{ ref('int_lifecycle__addresses_to_remove') }}
    {{- lifecycle_unless_no_range_read() }}

),

rule_list as (

    {{ lifecycle_rule_list('rule_contexts') }}

),

candidate_addresses as (

    select distinct physical_address
    from addresses_to_remove

),

located_entries as (

    select
        {{ physical_address('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }}
            as physical_address,
        ranges.range_id,
        ranges.path,
        ranges.last_modified_at
    from ranges
    cross join repository

),

occurrences as (

    select
        located_entries.physical_address,
        located_entries.path,
        located_entries.last_modified_at,
        range_branches.range_id is not null as is_listed,
        range_branches.branch_contexts
    from located_entries
    inner join candidate_addresses on located_entries.physical_address = candidate_addresses.physical_address
    left join range_branches on located_entries.range_id = range_branches.range_id

),

surviving_paths as (

    select
        occurrences.physical_address,
        occurrences.path,
        case
            when not occurrences.is_listed then 'in a range no commit lists'
            when not exists(rule_list.prefixes, prefix -> startswith(occurrences.path, prefix)) then 'no rule matches the path'
            else 'path not expired on every branch reaching it'
        end as kept_reason
    from occurrences
    cross join rule_list
    where
        not occurrences.is_listed
        or not {{ lifecycle_expired_everywhere('occurrences.path', 'occurrences.last_modified_at', 'occurrences.branch_contexts', 'rule_list.rules') }}

),

staged_references as (

    select
        candidate_addresses.physical_address,
        staged.path,
        coalesce(concat('staged on branch ', staged.branch_id), 'staged (lakeFS uncommitted listing)') as kept_reason
    from staged
    cross join repository
    inner join candidate_addresses
        on
            {{ physical_address('staged.address', 'staged.address_type', 'repository.storage_namespace_root') }}
            = candidate_addresses.physical_address

),

all_reasons as (

    select * from surviving_paths
    union all
    select * from staged_references

),

final as (

    select
        physical_address,
        min_by(kept_reason, path) as kept_reason,
        min(path) as surviving_path,
        count(*) as surviving_references
    from all_reasons
    group by physical_address

)

select * from final
