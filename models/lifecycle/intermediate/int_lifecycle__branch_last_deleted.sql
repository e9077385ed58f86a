-- Step 3 of the design, first table: one row per branch named in this run's policy, plus one
-- row (branch_id null) for the all-branches rows: the minimum last_deleted of its rows. A row
-- that has no last_deleted makes the branch's minimum "from the beginning" (null).

with

current_rule as (

    select * from {{ ref('int_lifecycle__current_rule') }}

),

final as (

    select
        branch_id,
        case when count(last_deleted) = count(*) then min(last_deleted) end as last_deleted,
        count(last_deleted) < count(*) as is_from_beginning
    from current_rule
    group by branch_id

)

select * from final
