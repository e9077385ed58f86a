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
    in a plain `dbt build` the subquery. The lakewarden runner runs the subquery first, as it
    does a range list's, and when it returns at most `limit` keys (20,000 unless the site says;
    the limit bounds what reaches the driver) puts in its place a query of a temporary view
    holding them, made in the driver from the keys it collected
    (lakewarden.runtime.compiled_models.key_list_view); none becomes a null
    that selects no row, so Spark proves the side empty and reads nothing for it. Keys, never
    addresses, reach the driver. Spark plans the test as a broadcast semi join of those few
    rows: no shuffle, and no text to parse. Literals, as range lists get, gave Spark thousands
    of numbers to parse and plan, and keys are hashes, which no Parquet row group's statistics
    can rule out: uncommitted GC's check of objects written since (8,450 keys against 7.6M kept
    entry keys at 8.45M objects) took 1.6-1.75 s with the view, 2.15-2.35 s as literals and
    2.9 s as the subquery, which Spark planned as a sort-merge semi join shuffling every kept
    key; lifecycle's pass over every entry at 1M entries 1.55-1.85 s against 1.7-2.3 s as
    literals, and at 8.45M (three lists of ~13,000 keys) 4.7-5.1 s against 4.3-5.5 s as the
    subqueries (the same, within the noise) and 7.9-8.4 s as literals. -#}
{% macro key_list(query, limit=20000) -%}
    /* lakewarden key list, up to {{ limit | int }} */ {{ query }} /* end of lakewarden key list */
{%- endmacro %}
