with

source as (

    select * from {{ source('lakefs', 'branches') }}

),

renamed as (

    select
        branch_id,
        commit_id as head_commit_id,
        coalesce(hidden, false) as is_hidden
    from source

)

select * from renamed
