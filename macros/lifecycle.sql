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

{#- Every entry of `entries` (range_id, path, address, address_type, size_bytes, last_modified_at,
    branch_contexts) whose path some rule prefix matches, judged now and at last_deleted. A
    path no rule prefix matches can never be expired; (path, address) groups share the path, so
    dropping those entries cannot hide a veto from a group that could still qualify. -#}
{% macro lifecycle_judged_entries(entries, rule_list='rule_list', repository='repository') -%}
    select
        {{ physical_address(entries ~ '.address', entries ~ '.address_type', repository ~ '.storage_namespace_root') }}
            as physical_address,
        {{ entries }}.range_id,
        {{ entries }}.path,
        {{ entries }}.address,
        {{ entries }}.address_type,
        {{ entries }}.size_bytes,
        {{ entries }}.last_modified_at,
        {{ entries }}.branch_contexts,
        {{ lifecycle_expired_everywhere(entries ~ '.path', entries ~ '.last_modified_at', entries ~ '.branch_contexts', rule_list ~ '.rules') }}
            as is_expired_now,
        {{ lifecycle_expired_everywhere(entries ~ '.path', entries ~ '.last_modified_at', entries ~ '.branch_contexts', rule_list ~ '.rules', 'last_deleted') }}
            as was_expired_last_run,
        {{ lifecycle_matched_rules(entries ~ '.path', entries ~ '.last_modified_at', entries ~ '.branch_contexts', rule_list ~ '.rules') }}
            as matched
    from {{ entries }}
    cross join {{ rule_list }}
    cross join {{ repository }}
    where exists({{ rule_list }}.prefixes, prefix -> startswith({{ entries }}.path, prefix))
{%- endmacro %}

{#- One row per (path, physical address) of `judged` (lifecycle_judged_entries rows, or groups
    of them: the aggregates combine, so groups of two entry sets can be merged by the same
    select). -#}
{% macro lifecycle_entry_groups(judged) -%}
    select
        path,
        physical_address,
        min(address) as address,
        min_by(address_type, address) as address_type,
        max(size_bytes) as size_bytes,
        max(last_modified_at) as last_modified_at,
        bool_and(is_expired_now) as is_expired_now,
        bool_and(was_expired_last_run) as was_expired_last_run,
        array_distinct(flatten(collect_list(matched))) as matched,
        array_sort(array_distinct(flatten(collect_list(branch_contexts)))) as branch_contexts
    from {{ judged }}
    group by path, physical_address
{%- endmacro %}


{#- `where false` when the runner has found that this run reads no range (var
    lifecycle_reads_ranges, set from int_lifecycle__read_ranges once that step is built), else
    nothing. Put on an import CTE of the steps after it: Spark's optimizer then folds the step to
    an empty relation and plans no scan, no shuffle, no join. Exact, not a shortcut: with no read
    range there is no newly expired path (int_lifecycle__read_ranges says why), so no address to
    remove, no deduplication and no mark; `dbt build` (the default, true) computes the same empty
    result the long way. -#}
{% macro lifecycle_unless_no_range_read() -%}
    {%- if not var('lifecycle_reads_ranges', true) %}
    where false -- this run reads no range (var lifecycle_reads_ranges)
    {%- endif %}
{%- endmacro %}
