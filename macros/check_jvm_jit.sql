{#- LAKEWARDEN_JVM_JIT chooses the JVM's compilers of dbt's embedded session (profiles/profiles.yml:
    quick, unless `full`; `auto` means quick there). The profile cannot stop a command, so this
    first on-run-start hook does: a value other than auto, quick or full stops the command with
    one line naming the variable, before any table is declared, as the runner exits 2 on it
    (lakewarden.runtime.spark_session.jit_mode). It sends no statement. -#}
{% macro check_jvm_jit() %}
    {%- set mode = env_var('LAKEWARDEN_JVM_JIT', 'auto') | trim | lower -%}
    {%- if mode not in ('auto', 'quick', 'full') -%}
        {{ exceptions.raise_compiler_error("LAKEWARDEN_JVM_JIT: '" ~ mode ~ "' is not one of auto, quick, full") }}
    {%- endif -%}
{% endmacro %}
