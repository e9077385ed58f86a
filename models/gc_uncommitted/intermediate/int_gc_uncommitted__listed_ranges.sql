-- One row per range some commit of the snapshot lists: the ranges this run has read once it is
-- done (a clean run read them all; an optimized run read those the previous run had not). The
-- runner saves them for the next run. Ranges no commit lists are read but not saved, so they are
-- read again until a commit lists them.

{%- set optimized = var('gc_uncommitted_mode', 'clean') == 'optimized' %}

with

commits as (

    select * from {{ ref('stg_lakefs__commits') }}

),

metaranges as (

    select * from {{ ref('stg_lakefs__metaranges') }}

),

previously_read_ranges as (

    select distinct range_id
    from {{ ref('stg_lakewarden__gc_uncommitted_previous_ranges') }}
    where {{ 'true' if optimized else 'false' }}

),

commit_ranges as (

    select
        metaranges.range_id,
        commits.commit_id,
        commits.created_at
    from commits
    inner join metaranges on commits.meta_range_id = metaranges.meta_range_id

),

grouped as (

    select
        range_id,
        count(distinct commit_id) as listing_commits,
        min(created_at) as first_listed_at
    from commit_ranges
    group by range_id

),

final as (

    select
        grouped.range_id,
        grouped.listing_commits,
        grouped.first_listed_at,
        previously_read_ranges.range_id is not null as was_read_before
    from grouped
    left join previously_read_ranges on grouped.range_id = previously_read_ranges.range_id

)

select * from final
