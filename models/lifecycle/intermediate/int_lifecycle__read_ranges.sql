-- One row per range a potential commit lists: whether this run reads its entries. A range is
-- read when it is new (no earlier run on this state dir had its window) or when its age window
-- [oldest, newest last_modified] meets, for a rule that applies in one of its branch contexts,
-- the interval in which an entry's expiry differs between the last deleting run and now:
-- [least(last_deleted, date_to_be_deleted), greatest(...)), or everything before
-- date_to_be_deleted when the rule has no last_deleted, and, where the range's window is kept
-- per path segment and day (age_windows), one of those finer windows meets it too, for a
-- segment that can hold the rule's prefix (the segment starts with the prefix, or the prefix
-- with the segment: a path starting with the prefix has such a segment; '' holds any). Only
-- an entry of the rule's prefix, aged within that interval, can be newly expired by the rule,
-- and it lies in such a finer window. An entry of any other range is
-- expired now in a context exactly when it was expired at last_deleted there, so it is never
-- newly expired; int_lifecycle__addresses_to_remove still judges its (path, address) group
-- in full when a read range makes the path a candidate, so results do not change.

with

range_branches as (

    select * from {{ ref('int_lifecycle__range_branches') }}

),

range_windows as (

    select * from {{ ref('int_graph__range_windows') }}

),

rule_contexts as (

    select * from {{ ref('int_lifecycle__rule_contexts') }}

),

-- per (context, rule): where the expiry of an entry changed since the last deleting run;
-- lower bound null = unbounded (no last_deleted: every entry before the cutoff is new)
crossing_intervals as (

    select
        branch_context,
        -- a rule without a prefix matches nothing; read as if it matched everything
        coalesce(prefix, '') as prefix,
        case
            when last_deleted is not null and date_to_be_deleted is not null
                then least(last_deleted, date_to_be_deleted)
        end as changed_from,
        greatest(last_deleted, date_to_be_deleted) as changed_until
    from rule_contexts
    where
        coalesce(last_deleted, date_to_be_deleted) is not null
        -- same cutoff then and now: no entry's expiry changed (a no-op run)
        and not coalesce(last_deleted = date_to_be_deleted, false)

),

potential_ranges as (

    select
        range_branches.range_id,
        range_branches.branch_contexts,
        coalesce(range_windows.is_new, true) as is_new,
        range_windows.min_last_modified_at,
        range_windows.max_last_modified_at,
        range_windows.entry_count,
        range_windows.age_windows
    from range_branches
    left join range_windows on range_branches.range_id = range_windows.range_id
    where range_branches.is_potential

),

range_contexts as (

    select
        potential_ranges.range_id,
        potential_ranges.min_last_modified_at,
        potential_ranges.max_last_modified_at,
        potential_ranges.age_windows,
        explode(potential_ranges.branch_contexts) as branch_context
    from potential_ranges

),

crossed_ranges as (

    select distinct range_contexts.range_id
    from range_contexts
    inner join crossing_intervals on range_contexts.branch_context = crossing_intervals.branch_context
    where
        range_contexts.min_last_modified_at is null
        or range_contexts.max_last_modified_at is null
        or (
            range_contexts.min_last_modified_at < crossing_intervals.changed_until
            and (
                crossing_intervals.changed_from is null
                or range_contexts.max_last_modified_at >= crossing_intervals.changed_from
            )
            and (
                range_contexts.age_windows is null
                or exists(
                    range_contexts.age_windows,
                    age_window -> (
                        startswith(age_window.segment, crossing_intervals.prefix)
                        or startswith(crossing_intervals.prefix, age_window.segment)
                    )
                    and age_window.min_last_modified < crossing_intervals.changed_until
                    and (
                        crossing_intervals.changed_from is null
                        or age_window.max_last_modified >= crossing_intervals.changed_from
                    )
                )
            )
        )

),

final as (

    select
        potential_ranges.range_id,
        potential_ranges.branch_contexts,
        potential_ranges.min_last_modified_at,
        potential_ranges.max_last_modified_at,
        potential_ranges.entry_count,
        potential_ranges.is_new,
        crossed_ranges.range_id is not null as is_crossed,
        potential_ranges.is_new or crossed_ranges.range_id is not null as is_read
    from potential_ranges
    left join crossed_ranges on potential_ranges.range_id = crossed_ranges.range_id

)

select * from final
