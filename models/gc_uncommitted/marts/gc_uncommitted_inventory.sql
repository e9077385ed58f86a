-- The uncommitted inventory of this run, one row per stored object considered (all of storage
-- in a clean run; (a) + (b) in an optimized one) that no committed entry read references:
-- candidates minus the entries of the ranges read and, for objects written since the previous
-- run, minus every entry (int_gc_uncommitted__rewritten_references). So no range read so far
-- references anything in it, which the next optimized run relies on. Staged and too-young
-- objects stay in it, flagged, so the next run decides them again. The runner saves it as the
-- run's uncommitted inventory file.

{%- set min_age_seconds = var('gc_uncommitted_min_age_seconds', 86400) | int %}

with

candidate_objects as (

    select * from {{ ref('int_gc_uncommitted__candidate_objects') }}

),

committed_references as (

    select * from {{ ref('int_gc_uncommitted__committed_references') }}

),

rewritten_references as (

    select * from {{ ref('int_gc_uncommitted__rewritten_references') }}

),

staged_references as (

    select * from {{ ref('int_gc_uncommitted__staged_references') }}

),

uncommitted as (

    select candidate_objects.*
    from candidate_objects
    left anti join committed_references
        on candidate_objects.compared_address = committed_references.compared_address
    left anti join rewritten_references
        on candidate_objects.physical_address = rewritten_references.physical_address

),

staged_addresses as (

    select
        compared_address,
        count(*) as staged_entries
    from staged_references
    group by compared_address

),

final as (

    select
        '{{ var("run_id") }}' as run_id,
        uncommitted.physical_address,
        uncommitted.address,
        uncommitted.compared_address,
        uncommitted.size_bytes,
        uncommitted.last_modified_at,
        uncommitted.candidate_source,
        staged_addresses.compared_address is not null as is_staged,
        coalesce(
            uncommitted.last_modified_at > {{ run_now() }} - make_dt_interval(0, 0, 0, {{ min_age_seconds }}), true
        ) as is_too_young,
        uncommitted.is_inside_namespace
    from uncommitted
    left join staged_addresses on uncommitted.compared_address = staged_addresses.compared_address

)

select * from final
