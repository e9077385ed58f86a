-- One row per committed object a committed GC run keeps (grain: address_key, the 64-bit key of
-- its address: macro address_key): every object some range entry references that the run does not
-- mark, with the age of its earliest entry and its size. The report's "kept" ages are drawn
-- from it, so they need no second pass over the entries. A view: read once, by the report.

{{ config(materialized='view') }}

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

address_keys as (

    select * from {{ ref('int_gc_committed__address_keys') }}

),

marked as (

    select * from {{ ref('gc_committed_marked_addresses') }}

),

marked_keys as (

    select {{ physical_key('marked.physical_address', 'repository.storage_namespace_root') }} as address_key
    from marked
    cross join repository

),

final as (

    select
        address_keys.address_key,
        address_keys.earliest_modified_at,
        address_keys.size_bytes
    from address_keys
    left anti join marked_keys on address_keys.address_key = marked_keys.address_key
    where address_keys.is_committed

)

select * from final
