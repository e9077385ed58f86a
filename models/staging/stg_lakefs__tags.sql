with

source as (

    select * from {{ source('lakefs', 'tags') }}

),

renamed as (

    select
        tag_id,
        commit_id
    from source

)

select * from renamed
