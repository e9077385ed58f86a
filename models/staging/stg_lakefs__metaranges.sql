with

source as (

    select * from {{ source('lakefs', 'metaranges') }}

),

renamed as (

    select distinct
        meta_range_id,
        range_id
    from source
    -- an empty metarange is one row with range_id null: it lists no range
    where range_id is not null

)

select * from renamed
