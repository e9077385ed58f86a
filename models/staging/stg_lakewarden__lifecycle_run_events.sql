with

source as (

    select * from {{ source('lakewarden', 'lifecycle_run_events') }}

),

renamed as (

    select
        run_id,
        repository_id,
        storage_namespace,
        status,
        dry_run as is_dry_run,
        is_full_run,
        potential_mode,
        run_at,
        recorded_at,
        num_marked,
        num_deleted,
        num_failed,
        error
    from source

)

select * from renamed
