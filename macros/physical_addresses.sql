{#- Address arithmetic shared by every job. Addresses are compared as normalised absolute URIs
    (scheme aliases s3a/s3n -> s3, repeated slashes folded), so a RELATIVE entry and a FULL entry
    naming the same object count as the same object: a live reference in either form protects it. -#}

{% macro normalize_uri(uri) -%}
    concat(
        regexp_replace(lower(regexp_extract({{ uri }}, '^([A-Za-z][A-Za-z0-9+.-]*://)?', 1)), '^s3[an]://', 's3://'),
        regexp_replace(regexp_replace({{ uri }}, '^([A-Za-z][A-Za-z0-9+.-]*://)?', ''), '/{2,}', '/')
    )
{%- endmacro %}

{#- An address type upper-cased, as the staging models give it to every job. lakeFS writes
    RELATIVE and FULL as they are: those are compared as they are, and only another spelling is
    copied upper-cased (upper() copies every row's string, in every pass over the entries). -#}
{% macro upper_address_type(address_type) -%}
    case
        when {{ address_type }} in ('RELATIVE', 'FULL') then {{ address_type }}
        else upper({{ address_type }})
    end
{%- endmacro %}

{#- The namespace root without trailing slashes, normalised. -#}
{% macro namespace_root(storage_namespace) -%}
    {{ normalize_uri("regexp_replace(" ~ storage_namespace ~ ", '/+$', '')") }}
{%- endmacro %}

{#- True when a RELATIVE address has a leading or doubled slash to fold before it names its
    object (the rare case: the address macros below fold it by regular expression). -#}
{% macro has_unfolded_slashes(address) -%}
    startswith({{ address }}, '/') or contains({{ address }}, '//')
{%- endmacro %}

{#- The absolute URI an entry's address points to, given the normalised namespace root
    (stg_lakefs__repository.storage_namespace_root). RELATIVE addresses without a leading or
    doubled slash (nearly all of them) take the cheap path, tested first with the type as stored:
    no regular expression and no upper-cased copy of the type per row (address_key says what
    that copy cost). python/tests/test_address_macros.py holds this form to the first one. -#}
{% macro physical_address(address, address_type, namespace_root) -%}
    case
        when {{ address_type }} = 'RELATIVE' and not ({{ has_unfolded_slashes(address) }})
            then concat({{ namespace_root }}, '/', {{ address }})
        when upper({{ address_type }}) = 'FULL' then {{ normalize_uri(address) }}
        when {{ has_unfolded_slashes(address) }}
            then concat({{ namespace_root }}, '/', regexp_replace(regexp_replace({{ address }}, '^/+', ''), '/{2,}', '/'))
        else concat({{ namespace_root }}, '/', {{ address }})
    end
{%- endmacro %}

{#- True when a job may delete the object: strictly inside the namespace, not under _lakefs/,
    not lakeFS's `dummy` object at the root, and free of dot segments that could climb out of
    it. Takes the normalised namespace root.
    It runs on every candidate entry (millions on a long history), so each condition is written
    in its cheapest exact form: "longer than the root and its slash" is "not the root and its
    slash" once the address starts with them; the dot-segment pattern, which can only match at
    the start or after a slash followed by a dot, is tried only on the addresses holding one
    (most hold none); byte searches (`contains`) rather than character ones (`instr`).
    python/tests/test_address_macros.py checks these against the conditions as first written. -#}
{% macro is_deletable_address(physical, namespace_root) -%}
    (
        startswith({{ physical }}, concat({{ namespace_root }}, '/'))
        and {{ physical }} != concat({{ namespace_root }}, '/')
        and not startswith({{ physical }}, concat({{ namespace_root }}, '/_lakefs/'))
        and {{ physical }} != concat({{ namespace_root }}, '/_lakefs')
        and lower({{ physical }}) != lower(concat({{ namespace_root }}, '/dummy'))
        and not (
            (startswith({{ physical }}, '.') or contains({{ physical }}, '/.'))
            and {{ physical }} rlike '(^|/)\\.{1,2}(/|$)'
        )
    )
{%- endmacro %}

{#- A 64-bit key of the object an entry's address names, equal for every spelling of one object
    (RELATIVE or FULL, doubled slashes, s3a://): xxhash64 of the address relative to the
    namespace root when the object is inside the namespace, else of its normalised absolute URI.
    A RELATIVE address without a leading or doubled slash (nearly all of them) is already that
    relative form, so it is hashed as it is: no absolute URI is built for it, which in a pass
    over every entry is most of the cost of a key (7.16M entries: 3.7 s against 1.8 s).
    Any other RELATIVE address (or one without a type, as physical_address reads it) is in the
    namespace once its slashes are folded, so its key is the folded address; only a FULL
    address builds its absolute URI, and builds it once (a lambda binds it; Spark evaluates that
    branch without generated code, and only FULL addresses take it). Written out as
    physical_key(physical_address(...)), the absolute URI's branches appeared three times over:
    the generated code of a scan computing the key grew past the 8,000 bytes of bytecode HotSpot
    compiles, so the whole scan ran in the bytecode interpreter (lifecycle's candidate references
    at 8.45M entries, the query alone: 14.0-14.2 s, against 4.9-6.6 s in this form; 14.9 s
    against 7.3-9.7 s within a run).
    python/tests/test_address_macros.py holds this form to that one, null included.
    Equal objects have equal keys; two objects sharing a key (a collision) are taken for one
    by whatever the key narrows, so every decision a key makes keeps an object, never deletes it. -#}
{% macro address_key(address, address_type, namespace_root) -%}
    case
        {#- nearly every entry first, by one comparison with the type as stored: upper() would
            copy each row's type to compare it (in a pass over 7.2M entries, 1.12-1.29 s
            against 1.31-1.52 s warm, 2.07 against 2.86 s cold) #}
        when {{ address_type }} = 'RELATIVE' and not ({{ has_unfolded_slashes(address) }})
            then xxhash64({{ address }})
        {#- the absolute URI once, in a lambda: inline, physical_key would spell it out three times #}
        when upper({{ address_type }}) = 'FULL' then xxhash64(element_at(transform(
            array({{ normalize_uri(address) }}),
            full_uri -> case
                when startswith(full_uri, concat({{ namespace_root }}, '/'))
                    then substr(full_uri, length({{ namespace_root }}) + 2)
                else full_uri
            end
        ), 1))
        when {{ has_unfolded_slashes(address) }}
            then xxhash64(regexp_replace(regexp_replace({{ address }}, '^/+', ''), '/{2,}', '/'))
        else xxhash64({{ address }})
    end
{%- endmacro %}

{#- address_key of an object given by its normalised absolute URI (physical_address's value). -#}
{% macro physical_key(physical, namespace_root) -%}
    xxhash64(
        case
            when startswith({{ physical }}, concat({{ namespace_root }}, '/'))
                then substr({{ physical }}, length({{ namespace_root }}) + 2)
            else {{ physical }}
        end
    )
{%- endmacro %}
