{#- The ids of a few ranges, for `range_id in (...)`: `query` selects them (one range_id column).
    In a plain `dbt build` this is that subquery. The lakewarden runner, before it executes the
    node, runs the subquery itself and, when it returns at most a few thousand ids, puts them in
    its place as literals (lakewarden.runtime.compiled_models.with_range_lists): Spark then hands the list to
    the Parquet reader, which skips every row group (and file) whose range_id statistics hold
    none of them, where a join with the subquery decodes and hashes the range id of every entry
    (7.16M entries: 0.45 s against 3.2 s to pick 69 ranges' entries). Either way the same ranges:
    the markers only tell the runner where the subquery starts and ends. -#}
{% macro range_list(query) -%}
    /* lakewarden range list */ {{ query }} /* end of lakewarden range list */
{%- endmacro %}


{#- `column in (...)` for ranges the statement already selects by a join: the same ranges again,
    only so that the Parquet reader can skip the others' files and row groups. As range_list, the
    runner puts at most a few thousand ids in as literals. Above that it drops the predicate (a
    `true`), which the join makes redundant: kept as a subquery, Spark would plan it as a second
    join that shuffles every entry (measured on a 100,000-commit history: the 4.9M entries of
    the active ranges shuffled for the committed GC safety test). In a plain `dbt build` it is
    the subquery. -#}
{% macro skip_to_ranges(column, query) -%}
    {{ column }} in (/* lakewarden range list, also joined */ {{ query }} /* end of lakewarden range list */)
{%- endmacro %}


{#- The 64-bit address keys (macros/physical_addresses.sql) of a few objects, for `key in (...)`:
    the same markers, so the runner puts at most a few thousand keys in place of the subquery as
    bigint literals, and none as a null that selects no row: Spark then proves the side empty
    and reads nothing for it. Keys, never addresses, reach the driver.

    `limit`: a limit of the site's own instead of the range lists' 5,000, where more literals
    were measured to pay. Whether they do depends on the statement: uncommitted GC's check of
    objects written since (8,450 keys against 7.6M kept entry keys at 8.45M objects) took 1.9-2.4 s
    as literals against 2.9 s as the subquery, which Spark planned as a sort-merge semi join
    shuffling every kept key; lifecycle's pass (three lists of ~13,000 keys over 7.7M entries)
    took 7.9-8.4 s as literals against 4.8-5.0 s as the subqueries, so it keeps the default. -#}
{% macro key_list(query, limit=none) -%}
    {%- if limit is none -%}
        {{ range_list(query) }}
    {%- else -%}
        /* lakewarden key list, up to {{ limit | int }} */ {{ query }} /* end of lakewarden key list */
    {%- endif -%}
{%- endmacro %}
