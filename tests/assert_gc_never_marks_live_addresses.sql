-- Safety net run with every committed GC build: a marked object must not be referenced by an
-- active commit or a staged entry. Returns the offending rows (none expected).

select
    marked.physical_address,
    live.referenced_by
from {{ ref('gc_marked_addresses') }} as marked
inner join {{ ref('int_gc_live_addresses') }} as live
    on marked.physical_address = live.physical_address
