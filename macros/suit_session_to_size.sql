{#- For people who run `dbt build` themselves: the session settings the lakewarden runner gives a
    small snapshot's job (the small form: lakewarden.runtime.spark_session.suit_session_to_size,
    whose docstring says why each one, measured), chosen here the same way by the snapshot's size.

    A snapshot with fewer range rows than var('small_form_range_rows') runs with Spark's
    expressions interpreted rather than compiled, no adaptive execution and one shuffle
    partition: on a few thousand rows what costs is Spark's work around them (compiling code for
    every stage, a job per shuffle), not the rows. `dbt build` of the whole project on its seeds
    and an empty snapshot (CI's build: 59 models, 166 data tests, 51 unit tests, then
    `run --select lifecycle+`) used 183 CPU seconds and 107 s against 213 and 120 in the large
    form, twice in turn (2 cores). A larger snapshot resets each setting to Spark's default, and
    the shuffle partitions to LAKEWARDEN_SHUFFLE_PARTITIONS (8), so a later command in the same
    process on a large snapshot gets those back. The rows a query returns are the same either
    way.

    The settings are the runner's (python/tests/test_expression_modes.py checks the two lists agree).
    The runner decides by the bytes of the ranges' files before its JVM starts; this hook, in a
    running session, counts the rows (Parquet answers from its footers): the default threshold
    is about the runner's 4 MiB. The lakewarden runner sets var('lakewarden_runner'), which
    makes this a no-op (it suits its own session). On a Thrift server the settings hold for
    the hook's own connection only: they change nothing there. -#}
{% macro suit_session_to_size() %}
    {%- set small_form = {
        'spark.sql.codegen.wholeStage': 'false',
        'spark.sql.codegen.factoryMode': 'NO_CODEGEN',
        'spark.sql.adaptive.enabled': 'false',
        'spark.sql.shuffle.partitions': '1',
    } -%}
    {%- if execute and not var('lakewarden_runner', false) and target.type == 'spark' -%}
        {%- set ranges = [] -%}
        {%- for source_node in graph.sources.values() -%}
            {%- if source_node.source_name == 'lakefs' and source_node.name == 'ranges' -%}
                {%- do ranges.append(source_node.schema ~ '.' ~ source_node.identifier) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- set rows = run_query('select count(*) from ' ~ ranges[0]).columns[0].values()[0] | int -%}
        {%- set small = rows < var('small_form_range_rows') | int -%}
        {%- do log('lakewarden: the snapshot holds ' ~ rows ~ ' range rows: the '
            ~ ('small' if small else 'large') ~ ' form of the session') -%}
        {%- for key, value in small_form.items() -%}
            {%- if small -%}
                {%- do run_query('set ' ~ key ~ '=' ~ value) -%}
            {%- elif key == 'spark.sql.shuffle.partitions' -%}
                {#- the profile leaves this one to the hook: dbt-spark applies the profile's
                    settings again before every statement, which would undo the small form's -#}
                {%- do run_query('set ' ~ key ~ '=' ~ env_var('LAKEWARDEN_SHUFFLE_PARTITIONS', '8')) -%}
            {%- else -%}
                {%- do run_query('reset ' ~ key) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endmacro %}
