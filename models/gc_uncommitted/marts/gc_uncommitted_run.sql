-- One row describing this uncommitted GC run: its mode, its clock, Last Commit (the newest
-- commit of the snapshot: every range it and its ancestors list has been read once this run is
-- done) and counts. The runner appends it, with the output locations, to the run history.

{%- set optimized = var('gc_uncommitted_mode', 'clean') == 'optimized' %}
{%- set previous_last_commit_at = var('gc_uncommitted_previous_last_commit_at', none) %}

with

commits as (

    select * from {{ ref('stg_lakefs__commits') }}

),

listed_ranges as (

    select * from {{ ref('int_gc_uncommitted__listed_ranges') }}

),

uncommitted_inventory as (

    select * from {{ ref('gc_uncommitted_inventory') }}

),

marked as (

    select * from {{ ref('gc_uncommitted_marked_addresses') }}

),

ranked_commits as (

    select
        commit_id,
        created_at,
        row_number() over (order by created_at desc, commit_id desc) as recency
    from commits

),

last_commit as (

    select
        max(case when recency = 1 then commit_id end) as last_commit_id,
        max(case when recency = 1 then created_at end) as last_commit_created_at,
        count(*) as commits,
        {{ "count_if(created_at > to_timestamp('" ~ previous_last_commit_at ~ "'))" if optimized and previous_last_commit_at else 'count(*)' }}
            as new_commits
    from ranked_commits

),

range_counts as (

    select
        count(*) as listed_ranges,
        count_if(not was_read_before) as newly_read_ranges
    from listed_ranges

),

inventory_counts as (

    select
        count(*) as uncommitted_objects,
        count_if(is_staged) as staged_objects,
        count_if(is_too_young and not is_staged) as too_young_objects,
        count_if(candidate_source = 'previous_uncommitted') as from_previous_inventory,
        count_if(candidate_source = 'created_since_previous_run') as created_since_previous_run
    from uncommitted_inventory

),

marked_counts as (

    select
        count(*) as marked_objects,
        coalesce(sum(size_bytes), 0) as marked_bytes
    from marked

),

final as (

    select
        '{{ var("run_id") }}' as run_id,
        '{{ "optimized" if optimized else "clean" }}' as run_mode,
        {{ run_now() }} as run_at,
        last_commit.last_commit_id,
        last_commit.last_commit_created_at,
        last_commit.commits,
        last_commit.new_commits,
        range_counts.listed_ranges,
        range_counts.newly_read_ranges,
        inventory_counts.uncommitted_objects,
        inventory_counts.staged_objects,
        inventory_counts.too_young_objects,
        inventory_counts.from_previous_inventory,
        inventory_counts.created_since_previous_run,
        marked_counts.marked_objects,
        marked_counts.marked_bytes
    from last_commit
    cross join range_counts
    cross join inventory_counts
    cross join marked_counts

)

select * from final
