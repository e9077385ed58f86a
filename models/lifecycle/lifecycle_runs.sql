-- The run ledger: one row per lifecycle run, folded from the events the runner appends.
-- A run "deleted" when its sweep (or, for a dry run, a later sweep of its report) deleted every marked address; only
-- such a run's policy is a later run's last_deleted (int_lifecycle__current_rule).

with

events as (

    select * from {{ ref('stg_lakewarden__lifecycle_run_events') }}

),

ranked as (

    select
        *,
        row_number() over (partition by run_id order by recorded_at desc, status desc) as recency
    from events

),

latest as (

    select *
    from ranked
    where recency = 1

),

per_run as (

    select
        run_id,
        min(recorded_at) as started_at,
        max(num_marked) as num_marked,
        max(num_deleted) as num_deleted,
        max(num_failed) as num_failed
    from events
    group by run_id

),

final as (

    select
        latest.run_id,
        latest.repository_id,
        latest.storage_namespace,
        latest.status,
        latest.is_dry_run,
        latest.is_full_run,
        latest.potential_mode,
        latest.run_at,
        per_run.started_at,
        case
            when latest.status in ('swept', 'sweep_failed', 'failed') or (latest.status = 'marked' and latest.is_dry_run)
                then latest.recorded_at
        end as finished_at,
        per_run.num_marked,
        per_run.num_deleted,
        per_run.num_failed,
        latest.error,
        -- 'swept' means a sweep deleted every marked address; a dry run reaches it only through a
        -- later 'lakewarden sweep' of its report (lakewarden.sweep.ledger), which counts alike
        coalesce(latest.status = 'swept', false) as has_deleted
    from latest
    inner join per_run on latest.run_id = per_run.run_id

)

select * from final
