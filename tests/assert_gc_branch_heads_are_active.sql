-- Safety net: every branch HEAD is an active commit, whatever the rules say.

select branches.branch_id
from {{ ref('stg_lakefs__branches') }} as branches
left join {{ ref('gc_committed_commits') }} as gc_committed_commits
    on branches.head_commit_id = gc_committed_commits.commit_id
where gc_committed_commits.is_active is distinct from true
