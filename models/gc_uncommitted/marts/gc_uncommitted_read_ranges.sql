-- One row per range some commit lists: what this run has read once it is done. The runner
-- saves it, and the next (optimized) run reads only ranges that are not in it.

with

listed_ranges as (

    select * from {{ ref('int_gc_uncommitted__listed_ranges') }}

),

final as (

    select
        '{{ var("run_id") }}' as run_id,
        range_id,
        first_listed_at
    from listed_ranges

)

select * from final
