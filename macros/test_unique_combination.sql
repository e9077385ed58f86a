{#- Generic test: no two rows share the same values in `columns` (a composite primary key).
    Written here rather than pulled from dbt_utils so CI needs no package download. -#}
{% test unique_combination(model, columns) %}

select
    {{ columns | join(', ') }},
    count(*) as duplicate_rows
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1

{% endtest %}
