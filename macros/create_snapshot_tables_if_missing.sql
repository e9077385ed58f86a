{#- Create every source table that does not exist yet, empty, with the columns and data types
    declared in models/sources.yml. Lets a plain `dbt build` run on a fresh warehouse; the
    lakewarden runner overwrites these tables when it loads a snapshot. -#}
{% macro create_snapshot_tables_if_missing() %}
    {%- if execute -%}
        {%- set schemas = [] -%}
        {%- for source_node in graph.sources.values() -%}
            {%- if source_node.schema not in schemas -%}
                {%- do schemas.append(source_node.schema) -%}
                {%- do run_query("create database if not exists " ~ source_node.schema) -%}
            {%- endif -%}
            {%- set columns = [] -%}
            {%- for column in source_node.columns.values() -%}
                {%- do columns.append(column.name ~ " " ~ column.data_type) -%}
            {%- endfor -%}
            {%- do run_query(
                "create table if not exists " ~ source_node.schema ~ "." ~ source_node.identifier
                ~ " (" ~ columns | join(", ") ~ ") using parquet"
            ) -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endmacro %}
