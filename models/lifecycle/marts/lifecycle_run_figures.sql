-- One row per lifecycle run: what the run looked at (commits and ranges, how many were
-- potential, how many of those were read: new, or with an age window that crossed a rule's
-- threshold since the last deleting run), how many paths newly expired, how many addresses were kept for a surviving
-- reference, and the run it continued from. The runner's summary and console line read it.

with

potential_commits as (

    select * from {{ ref('int_lifecycle__potential_commits') }}

),

range_branches as (

    select * from {{ ref('int_lifecycle__range_branches') }}

),

read_ranges as (

    select * from {{ ref('int_lifecycle__read_ranges') }}

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

read_figures as (

    select
        coalesce(sum(cast(is_new as int)), 0) as ranges_new,
        coalesce(sum(cast(is_crossed and not is_new as int)), 0) as ranges_crossed,
        coalesce(sum(cast(is_read as int)), 0) as ranges_read
    from read_ranges

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
        read_figures.ranges_new,
        read_figures.ranges_crossed,
        read_figures.ranges_read,
        (select count(*) from addresses_to_remove) as paths_newly_expired,
        -- deduplications judges every object the references hold: count those of addresses to remove
        (
            select count(*) from deduplications
            left semi join addresses_to_remove on deduplications.physical_address = addresses_to_remove.physical_address
        ) as addresses_kept_for_duplicates,
        previous_run.last_deleting_run_id
    from commit_figures
    cross join range_figures
    cross join read_figures
    cross join previous_run

)

select * from final
