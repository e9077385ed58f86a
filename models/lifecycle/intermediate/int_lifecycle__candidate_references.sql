-- Every reference the decisions after step 4 need, found in one pass over the entries: one
-- row per entry of any range (listed by a commit or not) whose path is the path of a newly
-- expired entry (its (path, address) group is judged over every potential range) or whose
-- object shares a 64-bit key with a newly expired entry's object (every reference to a
-- candidate object decides whether it survives), and one row per staged entry sharing such a
-- key. Paths and objects are looked up by 64-bit keys, up to 20,000 of each held in a local
-- view the scan meets in a broadcast join: the entries are read once and never moved. A key
-- shared by a collision only adds a reference the later steps compare in full. With each
-- committed entry: whether a commit lists its range, whether a potential commit does, and the
-- branch contexts of the commits that do (int_lifecycle__range_branches).

with

repository as (

    select * from {{ ref('stg_lakefs__repository') }}

),

ranges as (

    select * from {{ ref('stg_lakefs__ranges') }}
    {{- lifecycle_unless_no_range_read() }}

),

staged as (

    select * from {{ ref('stg_lakefs__staged') }}
    {{- lifecycle_unless_no_range_read() }}

),

range_branches as (

    select * from {{ ref('int_lifecycle__range_branches') }}

),

keyed_entries as (

    select
        ranges.range_id,
        ranges.path,
        ranges.address,
        ranges.address_type,
        ranges.size_bytes,
        ranges.last_modified_at,
        {{ physical_address('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }}
            as physical_address,
        {{ address_key('ranges.address', 'ranges.address_type', 'repository.storage_namespace_root') }}
            as address_key
    from ranges
    cross join repository

),

committed_references as (

    select
        'committed' as reference_kind,
        keyed_entries.range_id,
        cast(null as string) as branch_id,
        keyed_entries.path,
        keyed_entries.address,
        keyed_entries.address_type,
        keyed_entries.physical_address,
        keyed_entries.address_key,
        keyed_entries.size_bytes,
        keyed_entries.last_modified_at,
        range_branches.range_id is not null as is_listed,
        coalesce(range_branches.is_potential, false) as is_potential,
        range_branches.branch_contexts
    from keyed_entries
    left join range_branches on keyed_entries.range_id = range_branches.range_id
    where
    {%- if not var('lifecycle_reads_ranges', true) %}
        false -- this run reads no range (var lifecycle_reads_ranges): no list to gather
    {%- else %}
        -- as 64-bit keys, which the runner holds in local views while they are at most 20,000
        -- a list (macros/range_list.sql): each entry is then tested against two small broadcast
        -- sets as it is read, with no shuffle (1M entries, 1,258 paths and 1,299 objects:
        -- 1.55-1.85 s for the model against 1.7-2.3 s as literals, 1.4-3.4 s as the subqueries
        -- of held tables). A path sharing a key with a candidate's only adds a row: the later
        -- steps compare paths and addresses in full.
        -- The subqueries repeat keys: the runner makes its lists distinct itself, without a
        -- shuffle for a few thousand rows (compiled_models.collect_lists), and `in` needs none.
        xxhash64(keyed_entries.path) in ({{ key_list(
            "select xxhash64(path) from " ~ ref('int_lifecycle__newly_expired_entries')
        ) }})
        or keyed_entries.address_key in ({{ key_list(
            "select address_key from " ~ ref('int_lifecycle__newly_expired_entries')
        ) }})
    {%- endif %}

),

keyed_staged as (

    select
        staged.branch_id,
        staged.path,
        staged.address,
        staged.address_type,
        staged.last_modified_at,
        {{ physical_address('staged.address', 'staged.address_type', 'repository.storage_namespace_root') }}
            as physical_address,
        {{ address_key('staged.address', 'staged.address_type', 'repository.storage_namespace_root') }}
            as address_key
    from staged
    cross join repository

),

staged_references as (

    select
        'staged' as reference_kind,
        cast(null as string) as range_id,
        keyed_staged.branch_id,
        keyed_staged.path,
        keyed_staged.address,
        keyed_staged.address_type,
        keyed_staged.physical_address,
        keyed_staged.address_key,
        cast(null as bigint) as size_bytes,
        keyed_staged.last_modified_at,
        false as is_listed,
        false as is_potential,
        cast(null as array<string>) as branch_contexts
    from keyed_staged
    where
    {%- if not var('lifecycle_reads_ranges', true) %}
        false -- this run reads no range (var lifecycle_reads_ranges): no list to gather
    {%- else %}
        -- the committed references' list of object keys again: the runner gathers it once
        keyed_staged.address_key in ({{ key_list(
            "select address_key from " ~ ref('int_lifecycle__newly_expired_entries')
        ) }})
    {%- endif %}

),

final as (

    select * from committed_references
    union all
    select * from staged_references

)

select * from final
