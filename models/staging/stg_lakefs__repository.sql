with

source as (

    select * from {{ source('lakefs', 'repository') }}

),

renamed as (

    select
        repository_id,
        storage_namespace,
        {{ namespace_root('storage_namespace') }} as storage_namespace_root,
        default_branch as default_branch_id
    from source

)

select * from renamed
