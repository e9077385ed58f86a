-- Step 4 of the design, first pass: one row per entry of a range this run reads
-- (int_lifecycle__read_ranges) that the policy expires now in every branch context reaching
-- the range and did not at last_deleted. Only such an entry can make a (path, address) group
-- newly expired: a group is expired now when all its entries are and was not when one of them
-- was not, so that one entry is newly expired by itself. Its path and its object are what the
-- later steps look up (int_lifecycle__candidate_references); every other entry of a read range
-- is dropped here, so what an incremental run carries on is sized by what changed, not by
-- the ranges it read. A run that reads no range plans no scan (macro
-- lifecycle_unless_no_range_read).

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

read_ranges as (

    select * from {{ ref('int_lifecycle__read_ranges') }}
    {{- lifecycle_unless_no_range_read() }}

),

rule_contexts as (

    select * from {{ ref('int_lifecycle__rule_contexts') }}

),

rule_list as (

    {{ lifecycle_rule_list('rule_contexts') }}

),

-- An entry newly expired in some context has, for one rule r there, its last_modified not
-- before r's last_deleted (else it was expired then too) and before r's date_to_be_deleted
-- (else it is not expired now). So its last_modified lies within [the earliest last_deleted,
-- the latest date_to_be_deleted), unbounded below when a rule has never deleted. A scalar test on one
-- broadcast row, evaluated before the per-entry rule lambdas (which Spark does not compile):
-- it drops exactly entries that could never pass them.
age_band as (

    select
        case when count(*) = count(last_deleted) then min(last_deleted) end as oldest_last_deleted,
        max(date_to_be_deleted) as newest_date_to_be_deleted
    from rule_contexts

),

scanned_ranges as (

    select
        range_id,
        branch_contexts
    from read_ranges
    where is_read

),

scanned_entries as (

    select
        ranges.range_id,
        ranges.path,
        ranges.address,
        ranges.address_type,
        ranges.size_bytes,
        ranges.last_modified_at,
        scanned_ranges.branch_contexts
    from ranges
    inner join scanned_ranges on ranges.range_id = scanned_ranges.range_id
    cross join age_band
    where
        -- the same ranges again, as a list the Parquet reader can skip the others' files and row groups by
        {{ skip_to_ranges('ranges.range_id', "select range_id from " ~ ref('int_lifecycle__read_ranges') ~ " where is_read") }}
        and ranges.last_modified_at < age_band.newest_date_to_be_deleted
        and (age_band.oldest_last_deleted is null or ranges.last_modified_at >= age_band.oldest_last_deleted)

),

judged_entries as (

    {{ lifecycle_judged_entries('scanned_entries') }}

),

final as (

    select
        judged_entries.range_id,
        judged_entries.path,
        judged_entries.physical_address,
        {{ physical_key('judged_entries.physical_address', 'repository.storage_namespace_root') }} as address_key
    from judged_entries
    cross join repository
    where judged_entries.is_expired_now and not judged_entries.was_expired_last_run

)

select * from final
