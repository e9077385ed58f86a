with

source as (

    select * from {{ source('lakewarden', 'lifecycle_policy_rules') }}

),

renamed as (

    select
        rule_id,
        prefix,
        coalesce(enabled, true) as is_enabled,
        days,
        branch_days
    from source

)

select * from renamed
