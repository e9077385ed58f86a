-- One row per stored object this run considers. A clean run considers every object storage
-- holds. An optimized run (var gc_uncommitted_mode = 'optimized') considers only (a) objects
-- the previous run's uncommitted inventory listed and storage still holds, and (b) objects
-- storage wrote after the previous run's cutoff (var gc_uncommitted_storage_cutoff); every
-- other object was referenced by a range the previous run had already read.
-- var gc_uncommitted_storage_considered = true: the runner read storage already cut to (a) and
-- (b) by this very test (an inventory report: lakewarden.inventory.keep_considered, the same
-- cutoff literal and raw address; or the previous run's uncommitted inventory itself, when the
-- report is the one that run read), so every stored object is kept with its flag and the
-- previous inventory is not read again (8.45M stored objects: a 150 MiB broadcast of 852,225
-- addresses and 4 s of the run).

{%- set optimized = var('gc_uncommitted_mode', 'clean') == 'optimized' %}
{%- set considered = optimized and var('gc_uncommitted_storage_considered', false) %}
{%- set cutoff = var('gc_uncommitted_storage_cutoff', none) %}
{%- if optimized and not cutoff %}
    {{ exceptions.raise_compiler_error("an optimized uncommitted GC run needs var gc_uncommitted_storage_cutoff") }}
{%- endif %}
{%- set cutoff_at = "to_timestamp('" ~ cutoff ~ "')" if optimized else 'cast(null as timestamp)' %}

with

storage_objects as (

    select * from {{ ref('int_gc_uncommitted__storage_objects') }}

),

{%- if not considered %}

previous_inventory as (

    select physical_address from {{ ref('stg_lakewarden__gc_uncommitted_previous_inventory') }}

),
{%- endif %}

classified as (

    select
        storage_objects.*,
        case
            when not {{ 'true' if optimized else 'false' }} then 'storage_inventory'
            when storage_objects.last_modified_at > {{ cutoff_at }}
                then 'created_since_previous_run'
            else 'previous_uncommitted'
        end as candidate_source
    from storage_objects
    -- a clean run: every object; an optimized one: (b), or (a) by an existence test (each stored
    -- object once with a flag: no distinct list of the previous inventory, no shuffle). An
    -- object with no address or no age is neither.
    {%- if not considered %}
    where
        not {{ 'true' if optimized else 'false' }}
        or coalesce(storage_objects.last_modified_at > {{ cutoff_at }}, false)
        or storage_objects.physical_address in (select previous_inventory.physical_address from previous_inventory)
    {%- endif %}

),

final as (

    select *
    from classified

)

select * from final
