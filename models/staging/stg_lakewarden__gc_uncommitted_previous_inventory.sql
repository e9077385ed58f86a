-- One row per object the previous uncommitted GC run's uncommitted inventory lists (storage held
-- it and no range that run read referenced it); none before a first run or for a clean one.

with

source as (

    select * from {{ source('lakewarden', 'gc_uncommitted_previous_inventory') }}

),

renamed as (

    select
        physical_address,
        size,
        last_modified
    from source

)

select * from renamed
