-- One row per range whose entries int_lifecycle__candidate_references reads: every range
-- without kept reference keys (int_lifecycle__ranges_without_keys), and every range whose kept
-- keys hold the path or the object key of a newly expired entry. A range holding such a path
-- or object has that key among its kept keys (they are computed from all its entries, and a
-- range's entries never change), so no reference is missed; a key shared by a collision only
-- adds a range to read. What an incremental run reads for references is then sized by where
-- its candidates are, not by the repository. A view: int_lifecycle__candidate_references takes
-- its ids as a range list (one query), so no table is written between the two steps.

{{ config(materialized='view') }}

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

newly_expired_entries as (

    select * from {{ ref('int_lifecycle__newly_expired_entries') }}
    {{- lifecycle_unless_no_range_read() }}

),

ranges_without_keys as (

    select * from {{ ref('int_lifecycle__ranges_without_keys') }}

),

all_kept_keys as (

    select * from {{ ref('stg_lakewarden__range_reference_keys') }}
    {{- lifecycle_unless_no_range_read() }}

),

kept_keys as (

    select all_kept_keys.*
    from all_kept_keys
    inner join repository on all_kept_keys.storage_namespace = repository.storage_namespace_root

),

candidate_path_keys as (

    select distinct xxhash64(path) as path_key
    from newly_expired_entries

),

candidate_address_keys as (

    select distinct address_key
    from newly_expired_entries

),

ranges_holding_a_path as (

    select distinct kept_keys.range_id
    from kept_keys
    left semi join candidate_path_keys on kept_keys.path_key = candidate_path_keys.path_key

),

ranges_holding_an_object as (

    select distinct kept_keys.range_id
    from kept_keys
    left semi join candidate_address_keys on kept_keys.address_key = candidate_address_keys.address_key

),

all_searched as (

    select
        range_id,
        false as has_kept_keys,
        false as holds_candidate_path,
        false as holds_candidate_object
    from ranges_without_keys

    union all

    select
        range_id,
        true as has_kept_keys,
        true as holds_candidate_path,
        false as holds_candidate_object
    from ranges_holding_a_path

    union all

    select
        range_id,
        true as has_kept_keys,
        false as holds_candidate_path,
        true as holds_candidate_object
    from ranges_holding_an_object

),

final as (

    select
        range_id,
        bool_and(has_kept_keys) as has_kept_keys,
        bool_or(holds_candidate_path) as holds_candidate_path,
        bool_or(holds_candidate_object) as holds_candidate_object
    from all_searched
    group by range_id

)

select * from final
