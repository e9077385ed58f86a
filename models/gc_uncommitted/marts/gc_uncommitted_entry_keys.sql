-- depends_on: {{ ref('int_gc_uncommitted__committed_references') }}
-- One row per entry of a range this run keys: the 64-bit key (macro address_key) of the object
-- it references. The runner saves them beside the run's outputs, and the next optimized run
-- tests the objects written since against them (int_gc_uncommitted__rewritten_references)
-- instead of keying every entry of every range again. A run that continues the previous runs'
-- chain of keys (var gc_uncommitted_entry_keys_continue: their keys cover every range they had
-- read) keys only the ranges it reads itself; any other run (a clean one, or one whose chain
-- is broken or has grown long) keys every range of the snapshot and starts a new chain. Not
-- distinct: one key per entry.

{%- set optimized = var('gc_uncommitted_mode', 'clean') == 'optimized' %}
{%- set ranges_read_only = optimized and var('gc_uncommitted_entry_keys_continue', false) %}

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

entries as (

    select
        address,
        address_type
    from {{ ref('int_gc_uncommitted__committed_references') if ranges_read_only else ref('stg_lakefs__ranges') }}

),

final as (

    select
        {{ address_key('entries.address', 'entries.address_type', 'repository.storage_namespace_root') }}
            as address_key
    from entries
    cross join repository

)

select * from final
