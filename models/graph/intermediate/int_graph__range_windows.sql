-- One row per range some metarange lists: the range's age window (oldest and newest entry
-- last_modified) and entry count, and the same window per (first path segment, UTC day) of its
-- entries (age_windows: lifecycle tells from it whether a rule's prefix and threshold meet an
-- entry, where the one window spans months). A range's entries never change in lakeFS (its id names its
-- content, and its file under the namespace is never rewritten), so a window computed once
-- holds forever: windows an earlier run kept for this namespace (stg_lakewarden__range_windows) are taken as
-- they are, and only ranges without one are scanned here (is_new). The runner appends the new
-- windows to the state table (new_range_windows), so a later run on the same snapshot scans none.

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

metaranges as (

    select * from {{ ref('stg_lakefs__metaranges') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

all_kept_windows as (

    select * from {{ ref('stg_lakewarden__range_windows') }}

),

-- a range id names a file under its repository's namespace: windows of other namespaces
-- kept on the same state dir say nothing about this repository's ranges
kept_windows as (

    select all_kept_windows.*
    from all_kept_windows
    inner join repository on all_kept_windows.storage_namespace = repository.storage_namespace_root

),

listed_ranges as (

    select distinct range_id
    from metaranges
    where range_id is not null

),

unknown_ranges as (

    select listed_ranges.range_id
    from listed_ranges
    left anti join kept_windows on listed_ranges.range_id = kept_windows.range_id

),

-- the new ranges' entries by (range, first path segment, UTC day): the segment is the path up
-- to and including its first '/', '' for a path without one (it can hold any prefix)
computed_segment_days as (

    select
        ranges.range_id,
        substring(ranges.path, 1, instr(ranges.path, '/')) as segment,
        to_date(ranges.last_modified_at) as modified_on,
        min(ranges.last_modified_at) as min_last_modified_at,
        max(ranges.last_modified_at) as max_last_modified_at,
        count(*) as entry_count
    from ranges
    left semi join unknown_ranges on ranges.range_id = unknown_ranges.range_id
    -- the same ranges again, as a list the Parquet reader can skip the others' files and row groups by
    where {{ skip_to_ranges('ranges.range_id',
        "select metaranges.range_id from " ~ ref('stg_lakefs__metaranges') ~ " as metaranges"
        ~ " left anti join (select kept.range_id from " ~ ref('stg_lakewarden__range_windows') ~ " as kept"
        ~ " inner join " ~ ref('stg_lakefs__repository') ~ " as repository"
        ~ " on kept.storage_namespace = repository.storage_namespace_root) as kept_here"
        ~ " on metaranges.range_id = kept_here.range_id where metaranges.range_id is not null"
    ) }}
    group by
        ranges.range_id,
        substring(ranges.path, 1, instr(ranges.path, '/')),
        to_date(ranges.last_modified_at)

),

-- entries without a last_modified are never expired by age: no element stands for them
computed_windows as (

    select
        range_id,
        min(min_last_modified_at) as min_last_modified_at,
        max(max_last_modified_at) as max_last_modified_at,
        sum(entry_count) as entry_count,
        case
            when count(modified_on) <= 1024
                then array_sort(collect_list(
                    case
                        when modified_on is not null
                            then named_struct(
                                'segment', segment,
                                'min_last_modified', min_last_modified_at,
                                'max_last_modified', max_last_modified_at
                            )
                    end
                ))
        end as age_windows
    from computed_segment_days
    group by range_id

),

final as (

    select
        listed_ranges.range_id,
        coalesce(kept_windows.min_last_modified_at, computed_windows.min_last_modified_at) as min_last_modified_at,
        coalesce(kept_windows.max_last_modified_at, computed_windows.max_last_modified_at) as max_last_modified_at,
        coalesce(kept_windows.entry_count, computed_windows.entry_count, 0) as entry_count,
        case
            when kept_windows.range_id is not null then kept_windows.age_windows
            else computed_windows.age_windows
        end as age_windows,
        kept_windows.range_id is null as is_new,
        computed_windows.range_id is not null as is_computed
    from listed_ranges
    left join kept_windows on listed_ranges.range_id = kept_windows.range_id
    left join computed_windows on listed_ranges.range_id = computed_windows.range_id

)

select * from final
