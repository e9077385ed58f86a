-- One row per commit of the repository: whether committed GC keeps it active, and why.
-- A table (one row per commit): gc_committed_commits and the ranges' liveness both read it.

{{ config(materialized='table') }}

with

commits as (

    select * from {{ ref('stg_lakefs__commits') }}

),

active_commits as (

    select * from {{ ref('int_gc_committed__active_commits') }}

),

tags as (

    select * from {{ ref('stg_lakefs__tags') }}

),

tagged_commits as (

    select
        commit_id,
        min(tag_id) as tag_id
    from tags
    group by commit_id

),

classified as (

    select
        commits.commit_id,
        commits.created_at,
        commits.meta_range_id,
        active_commits.activated_by_branch_id,
        active_commits.activated_by_commit_id,
        tagged_commits.tag_id,
        case
            when active_commits.commit_id is not null then true
            when {{ 'true' if var('retain_tags') else 'false' }} and tagged_commits.commit_id is not null then true
            else false
        end as is_active,
        case
            when active_commits.activation_kind = 'start' and active_commits.activated_by_branch_id is not null
                then 'HEAD of branch ' || active_commits.activated_by_branch_id
            when active_commits.activated_by_branch_id is not null
                then 'within the retention of branch ' || active_commits.activated_by_branch_id
            when active_commits.commit_id is not null
                then 'dangling, within the default retention (walk from ' || active_commits.activated_by_commit_id || ')'
            when {{ 'true' if var('retain_tags') else 'false' }} and tagged_commits.commit_id is not null
                then 'tagged ' || tagged_commits.tag_id
            else 'expired'
        end as reason
    from commits
    left join active_commits on commits.commit_id = active_commits.commit_id
    left join tagged_commits on commits.commit_id = tagged_commits.commit_id

),

final as (

    select
        '{{ var("run_id") }}' as run_id,
        commit_id,
        created_at,
        meta_range_id,
        is_active,
        not is_active as is_expired,
        reason,
        activated_by_branch_id,
        tag_id
    from classified

)

select * from final
