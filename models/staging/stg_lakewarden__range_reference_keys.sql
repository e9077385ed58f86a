-- One row per entry of each range whose reference keys an earlier lifecycle run on this state
-- dir kept (storage namespace, range, path key, object key). A range kept twice (two runs
-- appending it, never under the runner's state lock) has its rows twice, which no reader
-- minds: each asks only whether some row holds a key.

with

source as (

    select * from {{ source('lakewarden', 'range_reference_keys') }}

),

renamed as (

    select
        storage_namespace,
        range_id,
        path_key,
        address_key,
        first_seen_run_id
    from source

)

select * from renamed
