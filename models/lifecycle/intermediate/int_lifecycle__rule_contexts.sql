-- One row per (branch context, rule) that applies in it: the policy row the rule uses there. On
-- a branch named in the rule's branch_days, that branch's row (its days override the rule's
-- days); elsewhere ('*': every other branch, and commits no branch reaches) the all-branches
-- row, when the rule has days. A tiny table: rules x (named branches + 1).

with

current_rule as (

    select * from {{ ref('int_lifecycle__current_rule') }}

),

branch_contexts as (

    select '*' as branch_context

    union

    select branch_id as branch_context
    from current_rule
    where branch_id is not null

),

candidate_rows as (

    select
        branch_contexts.branch_context,
        current_rule.rule_id,
        current_rule.prefix,
        current_rule.branch_id as policy_branch_id,
        current_rule.date_to_be_deleted,
        current_rule.last_deleted,
        row_number() over (
            partition by branch_contexts.branch_context, current_rule.rule_id
            order by current_rule.branch_id is null
        ) as preference
    from branch_contexts
    inner join current_rule
        on branch_contexts.branch_context = current_rule.branch_id or current_rule.branch_id is null

),

final as (

    select
        branch_context,
        rule_id,
        prefix,
        policy_branch_id,
        date_to_be_deleted,
        last_deleted
    from candidate_rows
    where preference = 1

)

select * from final
