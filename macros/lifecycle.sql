{#- Lifecycle rule evaluation, shared by the step that finds addresses to remove and the step
    that finds deduplications, so both judge a path by exactly the same test.

    `rules` is an array of structs (branch_context, rule_id, prefix, date_to_be_deleted,
    last_deleted): int_lifecycle__rule_contexts, one element per rule that applies in a branch
    context. `contexts` is the array of branch contexts that reach the entry (a branch named in
    some rule's branch_days, or '*' for every other branch and for commits no branch reaches).
    An entry is expired only when it is expired in every context that reaches it: a branch on
    which no rule matches the path, or on which the object is too young, keeps it. -#}

{% macro lifecycle_expired_everywhere(path, modified_at, contexts, rules, cutoff='date_to_be_deleted') -%}
    (
        size({{ contexts }}) > 0
        and forall(
            {{ contexts }},
            c -> exists(
                {{ rules }},
                r -> r.branch_context = c and startswith({{ path }}, r.prefix) and coalesce({{ modified_at }} < r.{{ cutoff }}, false)
            )
        )
    )
{%- endmacro %}

{#- The (rule_id, branch_context) pairs whose rule expires the entry now. -#}
{% macro lifecycle_matched_rules(path, modified_at, contexts, rules) -%}
    flatten(
        transform(
            {{ contexts }},
            c -> transform(
                filter(
                    {{ rules }},
                    r -> r.branch_context = c and startswith({{ path }}, r.prefix) and coalesce({{ modified_at }} < r.date_to_be_deleted, false)
                ),
                r -> named_struct('rule_id', r.rule_id, 'branch_context', c)
            )
        )
    )
{%- endmacro %}

{#- One row holding every applicable rule as an array (a tiny table, broadcast to every task):
    `rules` for the macros above and `prefixes` for a cheap first filter. -#}
{% macro lifecycle_rule_list(rule_contexts) -%}
    select
        collect_list(
            named_struct(
                'branch_context', branch_context,
                'rule_id', rule_id,
                'prefix', prefix,
                'date_to_be_deleted', date_to_be_deleted,
                'last_deleted', last_deleted
            )
        ) as rules,
        collect_set(prefix) as prefixes
    from {{ rule_contexts }}
{%- endmacro %}
