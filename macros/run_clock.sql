{#- The job's clock as a Spark timestamp literal: var('now') (RFC 3339, set by the runner from
    --now), else the current time. Every model compares against this, never current_timestamp(),
    so one run sees one instant and runs are reproducible. -#}
{% macro run_now() %}
    {%- if var('now') -%}
        to_timestamp('{{ var("now") }}')
    {%- else -%}
        current_timestamp()
    {%- endif -%}
{% endmacro %}
