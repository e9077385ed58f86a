-- Safety net run with every lifecycle build, computed independently of the job's intermediate
-- models: no marked address may be referenced by a staged entry, by an entry whose path no rule
-- of this run's policy covers, or by an entry younger than every rule's days could expire
-- (newer than the latest date_to_be_deleted). Returns the offending rows (none expected).

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

policy as (

    select * from {{ ref('lifecycle_policy') }}
    where run_id = '{{ var("run_id") }}'

),

marked as (

    select * from {{ ref('lifecycle_marked_addresses') }}

),

policy_summary as (

    select
        collect_set(prefix) as prefixes,
        max(date_to_be_deleted) as latest_cutoff
    from policy

),

address_references as (

    select
        ranges.path,
        ranges.last_modified_at,
        {{ physical_address('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }}
            as physical_address,
        'committed' as reference_kind
    from {{ ref('stg_lakefs__ranges') }} as ranges
    cross join repository

    union all

    select
        staged.path,
        staged.last_modified_at,
        {{ physical_address('staged.address', 'staged.address_type', 'repository.storage_namespace_root') }}
            as physical_address,
        'staged' as reference_kind
    from {{ ref('stg_lakefs__staged') }} as staged
    cross join repository

),

offending as (

    select address_references.*
    from address_references
    inner join marked on address_references.physical_address = marked.physical_address
    cross join policy_summary
    where
        address_references.reference_kind = 'staged'
        or not exists(policy_summary.prefixes, prefix -> startswith(address_references.path, prefix))
        or coalesce(address_references.last_modified_at >= policy_summary.latest_cutoff, true)

)

select * from offending
