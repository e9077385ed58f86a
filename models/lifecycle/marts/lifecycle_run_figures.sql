-- One row per lifecycle run: what the run looked at (commits and ranges, how many were
-- potential), how many paths newly expired, how many addresses were kept for a surviving
-- reference, and the run it continued from. The runner's summary and console line read it.

with

potential_commits as (

    select * from {{ ref('int_lifecycle__potential_commits') }}

),

range_branches as (

    select * from {{ ref('int_lifecycle__range_branches') }}

),

current_rule as (

    select * from {{ ref('int_lifecycle__current_rule') }}

),

addresses_to_remove as (

    select * from {{ ref('int_lifecycle__addresses_to_remove') }}

),

deduplications as (

    select * from {{ ref('int_lifecycle__deduplications') }}

),

commit_figures as (

    select
        count(*) as commits,
        coalesce(sum(cast(is_potential as int)), 0) as potential_commits
    from potential_commits

),

range_figures as (

    select
        count(*) as ranges,
        coalesce(sum(cast(is_potential as int)), 0) as potential_ranges
    from range_branches

),

previous_run as (

    select max(last_deleted_run_id) as last_deleting_run_id
    from current_rule

),

final as (

    select
        '{{ var("run_id") }}' as run_id,
        commit_figures.commits,
        commit_figures.potential_commits,
        range_figures.ranges,
        range_figures.potential_ranges,
        (select count(*) from addresses_to_remove) as paths_newly_expired,
        (select count(*) from deduplications) as addresses_kept_for_duplicates,
        previous_run.last_deleting_run_id
    from commit_figures
    cross join range_figures
    cross join previous_run

)

select * from final
