-- Step 1 of the design, the policy table: one row per (run, rule, branch) of every lifecycle
-- run's policy. A rule's days give its all-branches row (branch_id null), each branch_days entry a
-- row of its own; disabled rules have none. Earlier runs' rows come from the state dir's history
-- (the runner appends this run's rows to it after the build); this run's are computed here.

with

history as (

    select * from {{ ref('stg_lakewarden__lifecycle_policy_history') }}

),

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

this_run_rows as (

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

),

earlier_runs_rows as (

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
    from history
    where run_id != '{{ var("run_id") }}'

),

final as (

    select * from earlier_runs_rows
    union all
    select * from this_run_rows

)

select * from final
