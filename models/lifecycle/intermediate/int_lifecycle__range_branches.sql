-- Step 4 of the design, first half: one row per range listed by any commit, with the union of
-- the branch contexts of every commit that lists it, and whether a potential commit lists it.
-- Ranges are shared by many commits; each is judged once here, whatever the number of commits.
-- The union is over ALL commits, not only potential ones: an entry survives on every branch
-- that can reach it, whether or not that branch's commits are potential.

with

potential_commits as (

    select * from {{ ref('int_lifecycle__potential_commits') }}

),

metaranges as (

    select * from {{ ref('stg_lakefs__metaranges') }}

),

branch_set_contexts as (

    select * from {{ ref('int_lifecycle__branch_set_contexts') }}

),

metarange_sets as (

    select
        meta_range_id,
        branch_set_id,
        bool_or(is_potential) as is_potential,
        count(*) as listing_commits
    from potential_commits
    where meta_range_id is not null
    group by meta_range_id, branch_set_id

),

range_sets as (

    select
        metaranges.range_id,
        metarange_sets.branch_set_id,
        bool_or(metarange_sets.is_potential) as is_potential,
        sum(metarange_sets.listing_commits) as listing_commits
    from metarange_sets
    inner join metaranges on metarange_sets.meta_range_id = metaranges.meta_range_id
    group by metaranges.range_id, metarange_sets.branch_set_id

),

range_contexts as (

    select
        range_sets.range_id,
        branch_set_contexts.branch_context,
        bool_or(range_sets.is_potential) as is_potential,
        sum(range_sets.listing_commits) as listing_commits
    from range_sets
    inner join branch_set_contexts on range_sets.branch_set_id = branch_set_contexts.branch_set_id
    group by range_sets.range_id, branch_set_contexts.branch_context

),

final as (

    select
        range_id,
        array_sort(collect_list(branch_context)) as branch_contexts,
        bool_or(is_potential) as is_potential,
        max(listing_commits) as listing_commits
    from range_contexts
    group by range_id

)

select * from final
