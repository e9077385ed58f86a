with

source as (

    select * from {{ source('lakewarden', 'gc_rules') }}

),

renamed as (

    select
        branch_id,
        retention_days,
        branch_id is null as is_default
    from source

)

select * from renamed
