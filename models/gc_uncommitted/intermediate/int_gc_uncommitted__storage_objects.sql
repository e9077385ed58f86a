-- One row per object storage holds under the namespace (the runner's storage inventory: an S3
-- Inventory report or a listing), with the normalised address it is compared by and its
-- address relative to the namespace. Canonical URIs without doubled slashes (nearly all of
-- them) skip the regular expressions.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

storage_inventory as (

    select * from {{ ref('stg_lakewarden__storage_inventory') }}

),

located as (

    select
        storage_inventory.physical_address,
        case
            when
                startswith(storage_inventory.physical_address, 's3://')
                and instr(substr(storage_inventory.physical_address, 6), '//') = 0
                then storage_inventory.physical_address
            when
                startswith(storage_inventory.physical_address, 'file:///')
                and instr(substr(storage_inventory.physical_address, 8), '//') = 0
                then storage_inventory.physical_address
            else {{ normalize_uri('storage_inventory.physical_address') }}
        end as compared_address,
        storage_inventory.size as size_bytes,
        storage_inventory.last_modified as last_modified_at,
        repository.storage_namespace_root
    from storage_inventory
    cross join repository

),

final as (

    select
        physical_address,
        compared_address,
        case
            when startswith(physical_address, concat(storage_namespace_root, '/'))
                then substr(physical_address, length(storage_namespace_root) + 2)
        end as address,
        size_bytes,
        last_modified_at,
        {{ is_deletable_address('compared_address', 'storage_namespace_root') }}
        and startswith(physical_address, concat(storage_namespace_root, '/')) as is_inside_namespace
    from located

)

select * from final
