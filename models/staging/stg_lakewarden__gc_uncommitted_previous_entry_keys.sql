-- One row per entry of a range the previous uncommitted GC runs had read: the 64-bit key of the
-- object it references (their gc_uncommitted_entry_keys files); none unless the runner has them.

with

source as (

    select * from {{ source('lakewarden', 'gc_uncommitted_previous_entry_keys') }}

),

renamed as (

    select address_key
    from source

)

select * from renamed
