-- One row per object storage holds under the repository's namespace at this run: the runner's
-- storage inventory (an inventory report's rows or a listing), never under _lakefs/.

with

source as (

    select * from {{ source('lakewarden', 'storage_inventory') }}

),

renamed as (

    select
        physical_address,
        size,
        last_modified
    from source

)

select * from renamed
