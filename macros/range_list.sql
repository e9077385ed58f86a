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
    markers of their own, so the runner puts at most 20,000 keys (KEY_LIST_LIMIT: a bigint
    literal costs the parser less than a range id, and a longer list is a semi join that
    shuffles every key it filters) in place of the subquery as bigint literals, and none as a
    null that selects no row: Spark then proves the side empty and reads nothing for it. Keys,
    never addresses, reach the driver. -#}
{% macro key_list(query) -%}
    /* lakewarden key list */ {{ query }} /* end of lakewarden key list */
{%- endmacro %}
