-- One row per range the previous uncommitted GC run had read (every range its commits listed,
-- up to its Last Commit); none before a first run or for a clean one.

with

source as (

    select * from {{ source('lakewarden', 'gc_uncommitted_previous_ranges') }}

),

renamed as (

    select range_id
    from source

)

select * from renamed
