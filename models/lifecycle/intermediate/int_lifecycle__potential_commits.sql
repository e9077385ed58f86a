-- Step 3 of the design, potential commits: one row per commit, whether it may hold objects that
-- match now and did not match in the last deleting run, given the branches that reach it.
--
-- Per branch context the effective cutoff is the minimum last_deleted of its own rows and the
-- all-branches rows (null = from the beginning); a context no row applies to is out of scope.
-- An entry's last_modified is never after its commit's creation, so a commit older than a
-- context's cutoff holds nothing new for that context. Modes (var lifecycle_potential_commits):
--   complete (default): potential when potential for ANY in-scope context reaching it -- no
--     matching object is ever skipped;
--   seed: the design's intersection -- potential only when not older than the LARGEST
--     effective cutoff among its contexts (can skip objects; see the README).

{%- set mode = var('lifecycle_potential_commits', 'complete') %}
{%- if mode not in ['complete', 'seed'] %}
    {{ exceptions.raise_compiler_error("lifecycle_potential_commits must be 'complete' or 'seed', not '" ~ mode ~ "'") }}
{%- endif %}

with

commits as (

    select * from {{ ref('stg_lakefs__commits') }}

),

commit_branch_sets as (

    select * from {{ ref('int_graph__commit_branch_sets') }}

),

branch_set_contexts as (

    select * from {{ ref('int_lifecycle__branch_set_contexts') }}

),

branch_last_deleted as (

    select * from {{ ref('int_lifecycle__branch_last_deleted') }}

),

all_branches as (

    select
        last_deleted,
        is_from_beginning
    from branch_last_deleted
    where branch_id is null

),

named_branches as (

    select
        branch_id,
        last_deleted,
        is_from_beginning
    from branch_last_deleted
    where branch_id is not null

),

context_cutoffs as (

    select
        '*' as branch_context,
        last_deleted,
        is_from_beginning
    from all_branches

    union all

    select
        named_branches.branch_id as branch_context,
        case
            when not named_branches.is_from_beginning and not coalesce(all_branches.is_from_beginning, false)
                then least(named_branches.last_deleted, all_branches.last_deleted)
        end as last_deleted,
        named_branches.is_from_beginning or coalesce(all_branches.is_from_beginning, false) as is_from_beginning
    from named_branches
    left join all_branches on true

),

set_cutoffs as (

    select
        branch_set_contexts.branch_set_id,
        count(context_cutoffs.branch_context) > 0 as is_in_scope,
        coalesce(bool_or(context_cutoffs.is_from_beginning), false) as has_context_from_beginning,
        min(context_cutoffs.last_deleted) as smallest_cutoff,
        max(context_cutoffs.last_deleted) as largest_cutoff
    from branch_set_contexts
    left join context_cutoffs on branch_set_contexts.branch_context = context_cutoffs.branch_context
    group by branch_set_contexts.branch_set_id

),

set_potential_since as (

    select
        branch_set_id,
        is_in_scope,
        {% if mode == 'complete' -%}
        case when not has_context_from_beginning then smallest_cutoff end as potential_since
        {%- else -%}
        largest_cutoff as potential_since
        {%- endif %}
    from set_cutoffs

),

final as (

    select
        commits.commit_id,
        commits.created_at,
        commits.meta_range_id,
        commit_branch_sets.branch_set_id,
        set_potential_since.potential_since,
        coalesce(
            set_potential_since.is_in_scope
            and (set_potential_since.potential_since is null or commits.created_at >= set_potential_since.potential_since),
            false
        ) as is_potential,
        '{{ mode }}' as potential_mode
    from commits
    inner join commit_branch_sets on commits.commit_id = commit_branch_sets.commit_id
    left join set_potential_since on commit_branch_sets.branch_set_id = set_potential_since.branch_set_id

)

select * from final
