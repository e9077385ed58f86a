with

source as (

    select * from {{ source('lakewarden', 'lifecycle_policy_history') }}

),

renamed as (

    select
        repository_id,
        storage_namespace,
        rule_id,
        prefix,
        branch_id,
        days,
        date_to_be_deleted,
        run_at,
        run_id
    from source

)

select * from renamed
