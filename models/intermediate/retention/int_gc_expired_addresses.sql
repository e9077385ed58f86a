-- One row per physical object referenced by an entry of a range that only expired commits
-- reference: the candidates for deletion. Ranges no commit lists (e.g. written by a commit
-- still in progress) are never candidates.

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

expired_range_entries as (

    select ranges.*
    from ranges
    left semi join range_liveness
        on ranges.range_id = range_liveness.range_id and not range_liveness.is_live

),

located as (

    select
        expired_range_entries.address,
        expired_range_entries.address_type,
        expired_range_entries.path,
        expired_range_entries.size_bytes,
        expired_range_entries.last_modified_at,
        {{ physical_address('expired_range_entries.address', 'expired_range_entries.address_type', 'repository.storage_namespace') }}
            as physical_address,
        {{ is_deletable_address(
            physical_address('expired_range_entries.address', 'expired_range_entries.address_type', 'repository.storage_namespace'),
            'repository.storage_namespace') }}
            as is_inside_namespace
    from expired_range_entries
    cross join repository

),

final as (

    select
        physical_address,
        min(address) as address,
        min_by(address_type, address) as address_type,
        max(size_bytes) as size_bytes,
        max(last_modified_at) as last_modified_at,
        min(path) as example_path,
        count(distinct path) as path_count,
        bool_and(is_inside_namespace) as is_inside_namespace
    from located
    group by physical_address

)

select * from final
