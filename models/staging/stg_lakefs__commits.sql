with

source as (

    select * from {{ source('lakefs', 'commits') }}

),

renamed as (

    select
        commit_id,
        coalesce(parents, array()) as parent_commit_ids,
        try_element_at(parents, 1) as first_parent_commit_id,
        coalesce(size(parents), 0) > 1 as is_merge,
        creation_date as created_at,
        nullif(meta_range_id, '') as meta_range_id,
        committer,
        message,
        version
    from source

)

select * from renamed
