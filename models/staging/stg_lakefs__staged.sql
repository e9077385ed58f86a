with

source as (

    select * from {{ source('lakefs', 'staged') }}

),

renamed as (

    select
        branch_id,
        key as path,
        address,
        {{ upper_address_type('address_type') }} as address_type,
        last_modified as last_modified_at
    from source

)

select * from renamed
