-- One row per committed entry this run reads, with the normalised address it references. A
-- clean run reads every range of the snapshot: all ranges of all commits from genesis, and
-- (the safe reading) ranges no commit lists yet, such as a commit's in progress. An optimized
-- run reads only ranges the previous run had not read: those commits newer than its Last Commit
-- introduced (and any that arrived late or are still unlisted); objects of the ranges it had
-- read are in neither its uncommitted inventory nor among the objects written since.

{%- set optimized = var('gc_uncommitted_mode', 'clean') == 'optimized' %}
-- depends_on: {{ ref('stg_lakewarden__gc_uncommitted_previous_ranges') }}

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}

),

-- An optimized run lists the ranges it reads first (a range list: a scan of the range ids
-- only), so the entries are read for those ranges alone: none in a run with nothing new.
read_ranges as (

    select ranges.*
    from ranges
    {%- if optimized %}
    where ranges.range_id in ({{ range_list(
        "select distinct listed.range_id from " ~ ref('stg_lakefs__ranges') ~ " as listed"
        ~ " left anti join " ~ ref('stg_lakewarden__gc_uncommitted_previous_ranges') ~ " as previously_read"
        ~ " on listed.range_id = previously_read.range_id"
    ) }})
    {%- endif %}

),

final as (

    select
        read_ranges.range_id,
        read_ranges.path,
        read_ranges.address,
        read_ranges.address_type,
        {{ physical_address('read_ranges.address', 'read_ranges.address_type', 'repository.storage_namespace_root') }}
            as compared_address
    from read_ranges
    cross join repository

)

select * from final
