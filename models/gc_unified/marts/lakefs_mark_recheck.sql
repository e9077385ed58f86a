-- The re-check of a mark lakeFS's GC wrote, before `lakewarden sweep --mark-id` deletes it: one
-- row per address of the mark, with why it must be kept (null: it may go). Kept: an address an
-- active commit's entries reference (committed GC's own gc_committed_commits, with this run's rules and
-- clock), one a staged entry references, or one no job may delete (outside the namespace,
-- under _lakefs/, lakeFS's dummy). Addresses are compared by their normalised physical form, as
-- the committed GC's safety test compares them.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

mark as (

    select
        lakefs_mark.address,
        {{ physical_address('lakefs_mark.address', "'RELATIVE'", 'repository.storage_namespace_root') }}
            as physical_address,
        repository.storage_namespace_root
    from {{ ref('stg_lakewarden__lakefs_mark') }} as lakefs_mark
    cross join repository

),

active_ranges as (

    select
        metaranges.range_id,
        min(gc_committed_commits.commit_id) as commit_id
    from {{ ref('gc_committed_commits') }} as gc_committed_commits
    inner join {{ ref('stg_lakefs__metaranges') }} as metaranges
        on gc_committed_commits.meta_range_id = metaranges.meta_range_id
    where gc_committed_commits.is_active
    group by metaranges.range_id

),

referencing_entries as (

    select
        ranges.address,
        ranges.address_type,
        active_ranges.commit_id,
        cast(null as string) as branch_id,
        false as is_staged
    from {{ ref('stg_lakefs__ranges') }} as ranges
    inner join active_ranges on ranges.range_id = active_ranges.range_id

    union all

    select
        staged.address,
        staged.address_type,
        cast(null as string) as commit_id,
        staged.branch_id,
        true as is_staged
    from {{ ref('stg_lakefs__staged') }} as staged

),

mark_references as (

    select
        mark.physical_address,
        min(referencing_entries.commit_id) as commit_id,
        count_if(referencing_entries.is_staged) as staged_entries,
        min(referencing_entries.branch_id) as branch_id
    from referencing_entries
    cross join repository
    inner join mark
        on
            {{ physical_address(
                'referencing_entries.address',
                'referencing_entries.address_type',
                'repository.storage_namespace_root'
            ) }}
            = mark.physical_address
    group by mark.physical_address

),

final as (

    select
        mark.address,
        'RELATIVE' as address_type,
        mark.physical_address,
        case
            when not {{ is_deletable_address('mark.physical_address', 'mark.storage_namespace_root') }}
                then 'outside the namespace, under _lakefs/ or lakeFS''s dummy'
            when mark_references.commit_id is not null
                then concat('an active commit references it (', mark_references.commit_id, ')')
            -- lakeFS's uncommitted listing names no branch: extract leaves branch_id null then
            when mark_references.staged_entries > 0
                then concat(
                    'a staged entry references it',
                    coalesce(concat(' (branch ', mark_references.branch_id, ')'), '')
                )
        end as kept_reason
    from mark
    left join mark_references on mark.physical_address = mark_references.physical_address

)

select * from final
