with

source as (

    select * from {{ source('lakefs', 'metaranges') }}

),

renamed as (

    select distinct
        meta_range_id,
        range_id
    from source

)

select * from renamed
