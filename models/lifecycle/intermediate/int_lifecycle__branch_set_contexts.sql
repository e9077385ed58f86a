-- One row per (branch set, branch context): the "commit branches" of the design in the terms
-- rules are evaluated in. A branch named in some rule's branch_days is its own context; every
-- other branch behaves alike (only all-branches rows apply to it) and is the context '*'; so is
-- the empty set (commits no branch reaches: tips of deleted branches and their history).
-- Thousands of unnamed branches collapse into '*', which keeps later steps small.

with

members as (

    select * from {{ ref('int_graph__branch_set_members') }}

),

branch_last_deleted as (

    select * from {{ ref('int_lifecycle__branch_last_deleted') }}

),

named_branches as (

    select branch_id
    from branch_last_deleted
    where branch_id is not null

),

final as (

    select distinct
        members.branch_set_id,
        coalesce(named_branches.branch_id, '*') as branch_context
    from members
    left join named_branches on members.branch_id = named_branches.branch_id

)

select * from final
