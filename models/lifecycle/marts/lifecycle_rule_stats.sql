-- One row per (rule, branch context) of this run's policy: how many addresses the rule marked
-- there and their bytes (an address matched by several rules counts for each). branch_id null
-- is the all-branches row: every branch not named in the rule's branch_days, and commits no
-- branch reaches. The runner writes it, with the run's status, to _lakefs/retention/lc/stats/.

with

rule_contexts as (

    select * from {{ ref('int_lifecycle__rule_contexts') }}

),

marked as (

    select * from {{ ref('lifecycle_marked_addresses') }}

),

marked_pairs as (

    select
        physical_address,
        size_bytes,
        explode(matched_rule_contexts) as pair
    from marked

),

per_pair as (

    select
        marked_pairs.pair.rule_id,
        marked_pairs.pair.branch_context,
        count(*) as num_marked,
        coalesce(sum(marked_pairs.size_bytes), 0) as bytes_marked
    from marked_pairs
    group by marked_pairs.pair.rule_id, marked_pairs.pair.branch_context

),

final as (

    select
        '{{ var("run_id") }}' as run_id,
        rule_contexts.rule_id,
        rule_contexts.prefix,
        nullif(rule_contexts.branch_context, '*') as branch_id,
        rule_contexts.date_to_be_deleted,
        rule_contexts.last_deleted,
        coalesce(per_pair.num_marked, 0) as num_marked,
        coalesce(per_pair.bytes_marked, 0) as bytes_marked
    from rule_contexts
    left join per_pair
        on
            rule_contexts.rule_id = per_pair.rule_id
            and rule_contexts.branch_context = per_pair.branch_context

)

select * from final
