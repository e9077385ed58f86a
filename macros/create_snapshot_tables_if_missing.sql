{#- For people who run `dbt build` themselves (the lakewarden runner registers its tables when its
    session starts and sets var('lakewarden_runner'), which makes this a no-op).

    Every source is declared here with the columns and data types of models/sources.yml:
    - a table kept across runs (meta.state_table: lifecycle's ledger and policy history,
      uncommitted GC's runs, range windows) is the Parquet directory under
      $LAKEWARDEN_HOME/tables/<name>, declared again on every build (a column added since then
      appears): a plain `dbt build` reads the history the runner keeps (a table renamed since,
      meta.former_name, is found under its current name once a lakewarden run has appended to
      it);
    - any other source that does not exist yet is an empty view: the build runs, on no data, unless the caller loaded a
      snapshot into the session first (the test suite, a notebook). -#}
{% macro create_snapshot_tables_if_missing() %}
    {%- if execute and not var('lakewarden_runner', false) -%}
        {%- set home = env_var('LAKEWARDEN_HOME', '.lakewarden') -%}
        {%- set schemas = [] -%}
        {%- for source_node in graph.sources.values() -%}
            {%- if source_node.schema not in schemas -%}
                {%- do schemas.append(source_node.schema) -%}
                {%- do run_query("create database if not exists " ~ source_node.schema) -%}
            {%- endif -%}
            {%- set columns = [] -%}
            {%- set nulls = [] -%}
            {%- for column in source_node.columns.values() -%}
                {%- do columns.append(column.name ~ " " ~ column.data_type) -%}
                {%- do nulls.append("cast(null as " ~ column.data_type ~ ") as " ~ column.name) -%}
            {%- endfor -%}
            {%- set qualified = source_node.schema ~ "." ~ source_node.identifier -%}
            {%- if source_node.meta.get('state_table') -%}
                {#- declared again on every build, so a table a metastore kept from an earlier
                    version gets the columns added since (files without one read it as null);
                    the table is external (its location given): dropping it leaves its files -#}
                {%- do run_query("drop table if exists " ~ qualified) -%}
                {%- do run_query(
                    "create table " ~ qualified ~ " (" ~ columns | join(", ") ~ ") using parquet"
                    ~ " location '" ~ home ~ "/tables/" ~ source_node.identifier ~ "'"
                ) -%}
            {%- else -%}
                {%- do run_query(
                    "create view if not exists " ~ qualified ~ " as select " ~ nulls | join(", ") ~ " where false"
                ) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endmacro %}
