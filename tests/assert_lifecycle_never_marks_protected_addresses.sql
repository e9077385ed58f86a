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
        ranges.address,
        ranges.address_type,
        {{ address_key('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }} as address_key,
        'committed' as reference_kind
    from {{ ref('stg_lakefs__ranges') }} as ranges
    cross join repository

    union all

    select
        staged.path,
        staged.last_modified_at,
        staged.address,
        staged.address_type,
        {{ address_key('staged.address', 'staged.address_type', 'repository.storage_namespace_root') }} as address_key,
        'staged' as reference_kind
    from {{ ref('stg_lakefs__staged') }} as staged
    cross join repository

),

marked_keys as (

    select {{ physical_key('marked.physical_address', 'repository.storage_namespace_root') }} as address_key
    from marked
    cross join repository

),

-- every reference whose 64-bit key is a marked object's: a narrowing only (equal objects have
-- equal keys; a collision adds a row the physical address comparison below drops), so the
-- absolute URI is built for these few rows, not for every entry
keyed_references as (

    select address_references.*
    from address_references
    left semi join marked_keys on address_references.address_key = marked_keys.address_key

),

located_references as (

    select
        keyed_references.path,
        keyed_references.last_modified_at,
        {{ physical_address('keyed_references.address', 'keyed_references.address_type', 'repository.storage_namespace_root') }}
            as physical_address,
        keyed_references.reference_kind
    from keyed_references
    cross join repository

),

offending as (

    select located_references.*
    from located_references
    inner join marked on located_references.physical_address = marked.physical_address
    cross join policy_summary
    where
        located_references.reference_kind = 'staged'
        or not exists(policy_summary.prefixes, prefix -> startswith(located_references.path, prefix))
        or coalesce(located_references.last_modified_at >= policy_summary.latest_cutoff, true)

)

select * from offending
