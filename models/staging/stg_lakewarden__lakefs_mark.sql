with

source as (

    select * from {{ source('lakewarden', 'lakefs_mark') }}

),

renamed as (

    select distinct address
    from source
    where address is not null

)

select * from renamed
