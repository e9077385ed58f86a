with

source as (

    select * from {{ source('lakefs', 'commits') }}

),

renamed as (

    select
        commit_id,
        coalesce(parents, array()) as parent_commit_ids,
        -- lakeFS's main ("first") parent: version-0 commits list it last (CommitVersionParentSwitch)
        case
            when version = 0 and size(parents) > 1 then element_at(parents, -1)
            else try_element_at(parents, 1)
        end as first_parent_commit_id,
        coalesce(size(parents), 0) > 1 as is_merge,
        creation_date as created_at,
        nullif(meta_range_id, '') as meta_range_id,
        committer,
        message,
        version
    from source

)

select * from renamed
