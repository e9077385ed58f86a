-- Step 2 of the design, current_rule: one row per row of this run's policy, with last_deleted,
-- the date_to_be_deleted of the same (prefix, branch) in the last run on this namespace that
-- finished and deleted (not a dry run, every marked address swept). Objects older than
-- last_deleted matched that run already. Null last_deleted = from the beginning (no such run,
-- a (prefix, branch) it did not have, or a --full run).

{%- set full_run = var('lifecycle_full', false) %}

with

policy as (

    select * from {{ ref('lifecycle_policy') }}

),

runs as (

    select * from {{ ref('lifecycle_runs') }}

),

this_run as (

    select *
    from policy
    where run_id = '{{ var("run_id") }}'

),

this_namespace as (

    select distinct storage_namespace
    from this_run

),

ranked_deleting_runs as (

    select
        runs.run_id,
        row_number() over (order by runs.finished_at desc, runs.run_id desc) as recency
    from runs
    inner join this_namespace on runs.storage_namespace = this_namespace.storage_namespace
    where
        runs.has_deleted
        and runs.run_id != '{{ var("run_id") }}'

),

last_deleting_run as (

    select run_id
    from ranked_deleting_runs
    where recency = 1

),

last_deleted_rows as (

    select
        policy.prefix,
        policy.branch_id,
        max(policy.date_to_be_deleted) as last_deleted,
        max(policy.run_id) as last_deleted_run_id
    from policy
    inner join last_deleting_run on policy.run_id = last_deleting_run.run_id
    group by policy.prefix, policy.branch_id

),

final as (

    select
        this_run.rule_id,
        this_run.prefix,
        this_run.branch_id,
        this_run.days,
        this_run.date_to_be_deleted,
        {% if full_run -%}
        cast(null as timestamp) as last_deleted,
        cast(null as string) as last_deleted_run_id
        {%- else -%}
        last_deleted_rows.last_deleted,
        last_deleted_rows.last_deleted_run_id
        {%- endif %}
    from this_run
    left join last_deleted_rows
        on
            this_run.prefix = last_deleted_rows.prefix
            and this_run.branch_id <=> last_deleted_rows.branch_id

)

select * from final
