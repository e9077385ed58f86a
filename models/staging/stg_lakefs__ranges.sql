with

source as (

    select * from {{ source('lakefs', 'ranges') }}

),

renamed as (

    select
        range_id,
        key as path,
        address,
        {{ upper_address_type('address_type') }} as address_type,
        last_modified as last_modified_at,
        size as size_bytes,
        etag
    from source

)

select * from renamed
