-- One row per staged (uncommitted) entry of any branch, with the normalised address it
-- references. Staged entries are always read in full: they change between runs.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

staged as (

    select * from {{ ref('stg_lakefs__staged') }}

),

final as (

    select
        staged.branch_id,
        staged.path,
        staged.address,
        staged.address_type,
        {{ physical_address('staged.address', 'staged.address_type', 'repository.storage_namespace_root') }}
            as compared_address
    from staged
    cross join repository

)

select * from final
