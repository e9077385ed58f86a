-- Step 5 of the design, deduplications: one row per object that something that should survive
-- still references, among the objects int_lifecycle__candidate_references holds (every address
-- to remove is one of them, so each one to keep is here): an entry, in any range of any
-- commit (potential or not), whose path the policy does not expire in every branch context
-- reaching it (no rule matches it there, or it is too young); an entry of a range no commit
-- lists (written by a commit in progress); or a staged entry on any branch. Every such
-- reference is among int_lifecycle__candidate_references (it holds every reference to an
-- object a newly expired entry holds), compared here by full address.
-- Judging every occurrence, not "any occurrence in a non-potential commit", is stricter than
-- the design only in deleting what the design would keep for no reason; it keeps everything
-- the design keeps for a reason.
-- Judged for every object the references hold, not only for the addresses to remove
-- (int_lifecycle__addresses_to_remove, computed from the same references): the mark's anti join
-- keeps the same addresses, and this step needs nothing from that one, so the runner builds the
-- two at once.

with

candidate_references as (

    select * from {{ ref('int_lifecycle__candidate_references') }}
    {{- lifecycle_unless_no_range_read() }}

),

rule_contexts as (

    select * from {{ ref('int_lifecycle__rule_contexts') }}

),

rule_list as (

    {{ lifecycle_rule_list('rule_contexts') }}

),

surviving_paths as (

    select
        candidate_references.physical_address,
        candidate_references.path,
        case
            when not candidate_references.is_listed then 'in a range no commit lists'
            when not exists(rule_list.prefixes, prefix -> startswith(candidate_references.path, prefix)) then 'no rule matches the path'
            else 'path not expired on every branch reaching it'
        end as kept_reason
    from candidate_references
    cross join rule_list
    where
        candidate_references.reference_kind = 'committed'
        and (
            not candidate_references.is_listed
            or not {{ lifecycle_expired_everywhere('candidate_references.path', 'candidate_references.last_modified_at', 'candidate_references.branch_contexts', 'rule_list.rules') }}
        )

),

staged_references as (

    select
        candidate_references.physical_address,
        candidate_references.path,
        coalesce(concat('staged on branch ', candidate_references.branch_id), 'staged (lakeFS uncommitted listing)') as kept_reason
    from candidate_references
    where candidate_references.reference_kind = 'staged'

),

all_reasons as (

    select * from surviving_paths
    union all
    select * from staged_references

),

final as (

    select
        physical_address,
        min_by(kept_reason, path) as kept_reason,
        min(path) as surviving_path,
        count(*) as surviving_references
    from all_reasons
    group by physical_address

)

select * from final
