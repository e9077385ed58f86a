-- One row per physical object still referenced: by an entry of a live range (a range of an
-- active commit) or by a staged entry of any branch. Nothing listed here may be deleted.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

range_liveness as (

    select * from {{ ref('int_gc_range_liveness') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

staged as (

    select * from {{ ref('stg_lakefs__staged') }}

),

live_range_entries as (

    select
        ranges.address,
        ranges.address_type,
        'committed' as referenced_by
    from ranges
    left semi join range_liveness
        on ranges.range_id = range_liveness.range_id and range_liveness.is_live

),

staged_entries as (

    select
        address,
        address_type,
        'staged' as referenced_by
    from staged

),

all_references as (

    select * from live_range_entries
    union all
    select * from staged_entries

),

final as (

    select
        {{ physical_address('all_references.address', 'all_references.address_type', 'repository.storage_namespace') }}
            as physical_address,
        min(all_references.referenced_by) as referenced_by
    from all_references
    cross join repository
    group by 1

)

select * from final
