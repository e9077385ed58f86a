-- One row per stored object this run considers. A clean run considers every object storage
-- holds. An optimized run (var gc_uncommitted_mode = 'optimized') considers only (a) objects
-- the previous run's uncommitted inventory listed and storage still holds, and (b) objects
-- storage wrote after the previous run's cutoff (var gc_uncommitted_storage_cutoff); every
-- other object was referenced by a range the previous run had already read.

{%- set optimized = var('gc_uncommitted_mode', 'clean') == 'optimized' %}
{%- set cutoff = var('gc_uncommitted_storage_cutoff', none) %}
{%- if optimized and not cutoff %}
    {{ exceptions.raise_compiler_error("an optimized uncommitted GC run needs var gc_uncommitted_storage_cutoff") }}
{%- endif %}

with

storage_objects as (

    select * from {{ ref('int_gc_uncommitted__storage_objects') }}

),

previous_inventory as (

    select distinct physical_address
    from {{ ref('stg_lakewarden__gc_uncommitted_previous_inventory') }}
    where {{ 'true' if optimized else 'false' }}

),

classified as (

    select
        storage_objects.*,
        case
            when not {{ 'true' if optimized else 'false' }} then 'storage_inventory'
            when storage_objects.last_modified_at > {{ "to_timestamp('" ~ cutoff ~ "')" if optimized else 'cast(null as timestamp)' }}
                then 'created_since_previous_run'
            when previous_inventory.physical_address is not null then 'previous_uncommitted'
        end as candidate_source
    from storage_objects
    left join previous_inventory on storage_objects.physical_address = previous_inventory.physical_address

),

final as (

    select *
    from classified
    where candidate_source is not null

)

select * from final
