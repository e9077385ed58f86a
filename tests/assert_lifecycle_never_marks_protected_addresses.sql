-- Safety net run with every lifecycle build: no marked address may be referenced by a staged
-- entry, by an entry whose path no rule of this run's policy covers, or by an entry younger than
-- every rule's days could expire (newer than the latest date_to_be_deleted). Returns the
-- offending rows (none expected).
--
-- What it judges is independent of the job's decisions (expiry per branch context, groups,
-- deduplications): its own three conditions, on this run's policy as recorded. Where it finds
-- the references it shares the job's one pass over every entry: int_lifecycle__candidate_references
-- holds every committed and staged entry whose 64-bit object key is a newly expired entry's
-- (int_lifecycle__newly_expired_entries). So that sharing cannot hide a reference, a marked
-- object whose key was not among those searched for is itself offending ('references not
-- gathered'): every marked object is then one whose every reference, in every range and staged,
-- is in hand. The physical address of each reference is recomputed here from its address and
-- type, not taken from the job's column. (An independent second pass cost an incremental run
-- 0.6 s at 1M entries and 3.5 s at 8.45M; docs/lifecycle.md, "Safety net".)

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

newly_expired_entries as (

    select * from {{ ref('int_lifecycle__newly_expired_entries') }}

),

candidate_references as (

    select * from {{ ref('int_lifecycle__candidate_references') }}

),

policy_summary as (

    select
        collect_set(prefix) as prefixes,
        max(date_to_be_deleted) as latest_cutoff
    from policy

),

marked_objects as (

    select
        marked.physical_address,
        {{ physical_key('marked.physical_address', 'repository.storage_namespace_root') }} as address_key
    from marked
    cross join repository

),

-- the keys whose every reference the job's pass gathered
searched_keys as (

    select distinct address_key
    from newly_expired_entries

),

ungathered as (

    select
        cast(null as string) as path,
        cast(null as timestamp) as last_modified_at,
        marked_objects.physical_address,
        'references not gathered' as reference_kind
    from marked_objects
    left anti join searched_keys on marked_objects.address_key = searched_keys.address_key

),

-- the gathered references to a marked object's key (a collision adds a row the physical
-- address comparison below drops)
keyed_references as (

    select candidate_references.*
    from candidate_references
    left semi join marked_objects on candidate_references.address_key = marked_objects.address_key

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

protected_references as (

    select located_references.*
    from located_references
    inner join marked on located_references.physical_address = marked.physical_address
    cross join policy_summary
    where
        located_references.reference_kind = 'staged'
        or not exists(policy_summary.prefixes, prefix -> startswith(located_references.path, prefix))
        or coalesce(located_references.last_modified_at >= policy_summary.latest_cutoff, true)

),

offending as (

    select * from protected_references
    union all
    select * from ungathered

)

select * from offending
