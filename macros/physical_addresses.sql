{#- Address arithmetic shared by every job. Addresses are compared as normalised absolute URIs
    (scheme aliases s3a/s3n -> s3, repeated slashes folded), so a RELATIVE entry and a FULL entry
    naming the same object count as the same object: a live reference in either form protects it. -#}

{% macro normalize_uri(uri) -%}
    concat(
        regexp_replace(lower(regexp_extract({{ uri }}, '^([A-Za-z][A-Za-z0-9+.-]*://)?', 1)), '^s3[an]://', 's3://'),
        regexp_replace(regexp_replace({{ uri }}, '^([A-Za-z][A-Za-z0-9+.-]*://)?', ''), '/{2,}', '/')
    )
{%- endmacro %}

{#- The namespace root without trailing slashes, normalised. -#}
{% macro namespace_root(storage_namespace) -%}
    {{ normalize_uri("regexp_replace(" ~ storage_namespace ~ ", '/+$', '')") }}
{%- endmacro %}

{#- The absolute URI an entry's address points to. -#}
{% macro physical_address(address, address_type, storage_namespace) -%}
    {{ normalize_uri(
        "case when upper(" ~ address_type ~ ") = 'FULL' then " ~ address
        ~ " else concat(regexp_replace(" ~ storage_namespace ~ ", '/+$', ''), '/', regexp_replace("
        ~ address ~ ", '^/+', '')) end"
    ) }}
{%- endmacro %}

{#- True when a job may delete the object: strictly inside the namespace, not under _lakefs/,
    and free of dot segments that could climb out of it. -#}
{% macro is_deletable_address(physical, storage_namespace) -%}
    (
        startswith({{ physical }}, concat({{ namespace_root(storage_namespace) }}, '/'))
        and length({{ physical }}) > length({{ namespace_root(storage_namespace) }}) + 1
        and not startswith({{ physical }}, concat({{ namespace_root(storage_namespace) }}, '/_lakefs/'))
        and {{ physical }} != concat({{ namespace_root(storage_namespace) }}, '/_lakefs')
        and not {{ physical }} rlike '(^|/)\\.{1,2}(/|$)'
    )
{%- endmacro %}
