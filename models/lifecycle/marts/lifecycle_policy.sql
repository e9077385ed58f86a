-- Step 1 of the design, the policy table: one row per (run, rule, branch) of every lifecycle
-- run's policy, dry runs and failed runs included. A rule's days give its all-branches row
-- (branch_id null), each branch_days entry a row of its own; disabled rules have none.
-- Appended per run (insert_overwrite on run_id: re-running a run id replaces its rows).

{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        partition_by=['run_id'],
        on_schema_change='fail'
    )
}}

with

rules as (

    select * from {{ ref('stg_lakewarden__lifecycle_policy_rules') }}

),

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

enabled_rules as (

    select *
    from rules
    where is_enabled

),

all_branches_rows as (

    select
        rule_id,
        prefix,
        cast(null as string) as branch_id,
        days
    from enabled_rules
    where days is not null

),

branch_day_entries as (

    select
        rule_id,
        prefix,
        explode(map_entries(branch_days)) as branch_day
    from enabled_rules

),

branch_rows as (

    select
        branch_day_entries.rule_id,
        branch_day_entries.prefix,
        branch_day_entries.branch_day.key as branch_id,
        branch_day_entries.branch_day.value as days
    from branch_day_entries

),

policy_rows as (

    select * from all_branches_rows
    union all
    select * from branch_rows

),

final as (

    select
        repository.repository_id,
        repository.storage_namespace_root as storage_namespace,
        policy_rows.rule_id,
        policy_rows.prefix,
        policy_rows.branch_id,
        policy_rows.days,
        timestampadd(day, -policy_rows.days, {{ run_now() }}) as date_to_be_deleted,
        {{ run_now() }} as run_at,
        '{{ var("run_id") }}' as run_id
    from policy_rows
    cross join repository

)

select * from final
