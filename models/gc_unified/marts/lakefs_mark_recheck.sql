-- The re-check of a mark lakeFS's GC wrote, before `lakewarden sweep --mark-id` deletes it: one
-- row per address of the mark, with why it must be kept (null: it may go). Kept: an address an
-- active commit's entries reference (committed GC's own gc_commits, with this run's rules and
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
        min(gc_commits.commit_id) as commit_id
    from {{ ref('gc_commits') }} as gc_commits
    inner join {{ ref('stg_lakefs__metaranges') }} as metaranges
        on gc_commits.meta_range_id = metaranges.meta_range_id
    where gc_commits.is_active
    group by metaranges.range_id

),

active_references as (

    select
        mark.physical_address,
        min(active_ranges.commit_id) as commit_id
    from {{ ref('stg_lakefs__ranges') }} as ranges
    inner join active_ranges on ranges.range_id = active_ranges.range_id
    cross join repository
    inner join mark
        on
            {{ physical_address('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }}
            = mark.physical_address
    group by mark.physical_address

),

staged_references as (

    select
        mark.physical_address,
        count(*) as staged_entries,
        min(staged.branch_id) as branch_id
    from {{ ref('stg_lakefs__staged') }} as staged
    cross join repository
    inner join mark
        on
            {{ physical_address('staged.address', 'staged.address_type', 'repository.storage_namespace_root') }}
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
            when active_references.commit_id is not null
                then concat('an active commit references it (', active_references.commit_id, ')')
            -- lakeFS's uncommitted listing names no branch: extract leaves branch_id null then
            when staged_references.staged_entries > 0
                then concat(
                    'a staged entry references it',
                    coalesce(concat(' (branch ', staged_references.branch_id, ')'), '')
                )
        end as kept_reason
    from mark
    left join active_references on mark.physical_address = active_references.physical_address
    left join staged_references on mark.physical_address = staged_references.physical_address

)

select * from final
