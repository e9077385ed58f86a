-- One row per retention walk start point: every branch HEAD, and every dangling commit
-- (nobody's first parent and no branch's HEAD), which gets the default retention.

with

commits as (

    select * from {{ ref('stg_lakefs__commits') }}

),

branch_retention as (

    select * from {{ ref('int_gc_committed__branch_retention') }}

),

rules as (

    select * from {{ ref('stg_lakewarden__gc_rules') }}

),

first_parents as (

    select distinct first_parent_commit_id as commit_id
    from commits
    where first_parent_commit_id is not null

),

dangling_commits as (

    select commits.commit_id
    from commits
    left anti join first_parents on commits.commit_id = first_parents.commit_id
    left anti join branch_retention on commits.commit_id = branch_retention.head_commit_id

),

default_rule as (

    select retention_days
    from rules
    where is_default

),

branch_heads as (

    select
        head_commit_id as start_commit_id,
        branch_id,
        'branch_head' as start_kind,
        retention_days,
        expiration_threshold
    from branch_retention

),

dangling_starts as (

    select
        dangling_commits.commit_id as start_commit_id,
        cast(null as string) as branch_id,
        'dangling' as start_kind,
        default_rule.retention_days,
        timestampadd(day, -default_rule.retention_days, {{ run_now() }}) as expiration_threshold
    from dangling_commits
    left join default_rule on true

),

final as (

    select * from branch_heads
    union all
    select * from dangling_starts

)

select * from final
