-- One row per branch: its HEAD, the retention days that apply and the expiration threshold.

with

branches as (

    select * from {{ ref('stg_lakefs__branches') }}

),

rules as (

    select * from {{ ref('stg_lakewarden__gc_rules') }}

),

default_rule as (

    select retention_days
    from rules
    where is_default

),

branch_rules as (

    select
        branch_id,
        retention_days
    from rules
    where not is_default

),

resolved as (

    select
        branches.branch_id,
        branches.head_commit_id,
        coalesce(branch_rules.retention_days, default_rule.retention_days) as retention_days,
        case
            when branch_rules.retention_days is not null then 'branch rule'
            when default_rule.retention_days is not null then 'default rule'
            else 'no rules'
        end as retention_source
    from branches
    left join branch_rules on branches.branch_id = branch_rules.branch_id
    left join default_rule on true

),

final as (

    select
        branch_id,
        head_commit_id,
        retention_days,
        retention_source,
        timestampadd(day, -retention_days, {{ run_now() }}) as expiration_threshold
    from resolved

)

select * from final
