"""``figures.json``: every number ``report.html`` draws, computed by Spark in the mark's session.

The page must be cheap to (re)draw: after the mark, and again after each sweep. So the marked
table is aggregated where it already is, in the job's Spark session as soon as it is built
(beside the job's safety tests and writes, :func:`drawn_beside`; saved once those passed), and
the page reads a few hundred numbers instead of a million addresses (issue 18: "reports from
aggregates"). The aggregates:

* marked objects and bytes in total, by top-level prefix of the logical path, by reason (GC) or
  rule (lifecycle), and by branch;
* ages (last modified, at the run's clock) of marked objects and of kept committed objects, in
  the bins :data:`AGE_BINS_DAYS`;
* the :data:`TOP_LARGEST` largest marked objects with why they are marked.

By branch follows ``lakewarden explain``'s reading of a history: a marked address counts once
under each branch that reaches (through any parent) a commit whose metarange lists a range
holding the address; commits no branch reaches count under :data:`DANGLING`; addresses no
commit holds (uncommitted GC marks only such) under :data:`NOT_IN_COMMIT`. It is Spark joins
over the snapshot tables (ranges x marked on address, ranges -> metaranges -> commits) plus the
commit graph's reachability, which is computed on the driver as the jobs' own walks are (sized
by commits, never by objects).

Each group listing keeps its :data:`TOP_GROUPS` largest groups (by bytes) and folds the rest
into one ``other`` entry, so the file stays small whatever the repository. Writing it never
fails a run: an error is logged and the page says its figures are not available.

This module imports neither pyspark nor pyarrow at import time: the page reads figures with
:func:`read_figures` in processes that never start Spark.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar

from lakewarden.commit_graph import DANGLING, set_bits
from lakewarden.errors import error_line

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from lakewarden.commit_graph import Reachability

log = logging.getLogger(__name__)
T = TypeVar("T")

FIGURES = "figures.json"
FORMAT = "lakewarden-figures/1"
TOP_LARGEST = 20
TOP_GROUPS = 25
AGE_BINS_DAYS = (0, 1, 7, 14, 30, 60, 90, 180, 365, 730)
#: marked addresses that no commit of the snapshot holds (uncommitted GC marks only such)
NOT_IN_COMMIT = "(not in any commit)"
ROOT_PREFIX = "(root)"
#: up to this many distinct branch sets, an address's sets are bits of one long (see _snapshot_figures)
MAX_SET_BITS = 63

#: why an address is marked, in the words of its job (the page and the demo show these)
COMMITTED_REASON = "only expired commits reference it"
UNCOMMITTED_REASON = "no commit or staged entry references it ({source})"
LIFECYCLE_REASON = "rule {rule}"
UNRECORDED_RULE = "rule (unrecorded)"

BRANCH_NOTE = (
    "an object counts once under each branch whose history (any parent) holds a commit listing it; "
    "the branch counts add up to more than the total when objects are on several branches"
)
KEPT_NOTE = "kept: distinct committed addresses of the snapshot that are not marked (age of their earliest entry)"


def age_bin_labels() -> list[str]:
    """``0-1d``, ``1-7d``, ..., ``>730d``: one label per bin of :data:`AGE_BINS_DAYS`."""
    return [f"{lo}-{hi}d" for lo, hi in zip(AGE_BINS_DAYS, AGE_BINS_DAYS[1:])] + [f">{AGE_BINS_DAYS[-1]}d"]


# --------------------------------------------------------------------------------------------
# what the page reads


@dataclass
class Group:
    """Objects and bytes of one group (a prefix, a reason, a branch, an age bin)."""

    objects: int = 0
    bytes: int = 0

    def add(self, objects: int, size: int) -> None:
        self.objects += objects
        self.bytes += size


@dataclass
class Listing:
    """The largest groups of one kind, plus what the others add up to."""

    groups: dict[str, Group] = field(default_factory=dict)
    other_groups: int = 0
    other: Group = field(default_factory=Group)

    def rows(self) -> list[tuple[str, Group]]:
        """The groups in order, then ``(N more)`` for the folded rest when there is one."""
        rows = list(self.groups.items())
        if self.other_groups:
            rows.append((f"({self.other_groups:,} more)", self.other))
        return rows


@dataclass
class Figures:
    """``figures.json`` as read back (see docs/reports.md for the file's schema)."""

    job: str
    total: Group
    by_prefix: Listing
    by_reason: Listing
    by_branch: Listing
    branch_note: str
    ages_marked: list[Group]
    ages_kept: list[Group]
    kept_note: str
    largest: list[dict[str, Any]]
    seconds: float | None = None


def _listing(document: dict[str, Any]) -> Listing:
    listing = Listing(
        groups={g["name"]: Group(int(g["objects"]), int(g["bytes"])) for g in document.get("groups") or []},
        other_groups=int(document.get("other_groups") or 0),
    )
    other = document.get("other") or {}
    listing.other = Group(int(other.get("objects") or 0), int(other.get("bytes") or 0))
    return listing


def read_figures(report_dir: Path) -> Figures | None:
    """The report's figures, or None when it has none (an older report, a failed run) or
    they are of a format this version does not read."""
    path = Path(report_dir) / FIGURES
    if not path.is_file():
        return None
    document = json.loads(path.read_text(encoding="utf-8"))
    if document.get("format") != FORMAT:
        return None
    ages = document["ages"]
    return Figures(
        job=str(document.get("job") or ""),
        total=Group(int(document["marked"]["objects"]), int(document["marked"]["bytes"])),
        by_prefix=_listing(document["by_prefix"]),
        by_reason=_listing(document["by_reason"]),
        by_branch=_listing(document["by_branch"]),
        branch_note=str(document["by_branch"].get("note") or ""),
        ages_marked=[Group(int(o), int(b)) for o, b in zip(ages["marked_objects"], ages["marked_bytes"])],
        ages_kept=[Group(int(o), int(b)) for o, b in zip(ages["kept_objects"], ages["kept_bytes"])],
        kept_note=str(ages.get("kept_note") or ""),
        largest=list(document.get("largest") or []),
        seconds=document.get("seconds"),
    )


# --------------------------------------------------------------------------------------------
# what the jobs call


def write_figures(report_dir: Path, spark: "SparkSession", **options: Any) -> Path | None:
    """:func:`figures_document` with ``options`` (its keywords: ``job``, ``marked``,
    ``snapshot_schema``, ``now``, ...), then :func:`save_figures` in ``report_dir``: the two steps
    in one call, for a caller that has nothing to do between them. Never raises on Spark's or the
    disk's account."""
    return save_figures(report_dir, figures_document(spark, **options))


def figures_document(
    spark: "SparkSession",
    *,
    job: str,
    marked: "DataFrame",
    snapshot_schema: str,
    now: datetime,
    kept: "DataFrame | Callable[[], DataFrame] | None" = None,
    kept_note: str | None = None,
    on_commits: bool = True,
    reachability: "Reachability | None" = None,
    may_mark: bool = True,
) -> dict[str, Any] | None:
    """The page's figures of ``marked`` (the job's marked-addresses mart, as it is) as a JSON
    document; never raises (logs and returns None).

    ``kept``: the objects the run keeps, one row per object (``earliest_modified_at``,
    ``size_bytes``), when the job's models already computed them (committed GC's
    ``gc_committed_kept_addresses``); without it the kept ages take one pass over every entry here.
    ``kept_note`` says what ``kept`` holds when it is not the committed objects; ``kept`` may be
    a function giving it (called here, so a failure to compute it is the figures' alone).

    ``reachability``: which branches reach each commit of the snapshot, when the run's models
    computed it (lifecycle's graph models: lakewarden.runtime.dbt_python.SharedReachability);
    without it the figures load the commit graph and walk it themselves.

    ``on_commits=False``: the marked objects are on no commit (uncommitted GC marks only
    objects no range lists): all of them count under :data:`NOT_IN_COMMIT`, as tracing them
    would find, and no entry is read for it. ``may_mark=False``: the run marks nothing by
    construction (lifecycle reading no range), so no branch is traced either.

    ``job`` selects how a row says why it is marked and what its logical path is (the three
    marts differ: committed GC has ``example_path``; lifecycle ``paths`` and
    ``matched_rules``; uncommitted GC ``candidate_source`` and no path). ``snapshot_schema``
    holds the snapshot's ``ranges``, ``metaranges``, ``commits`` and ``branches`` tables."""
    # Spark's UI and event log name the figures' jobs (a property of the calling thread)
    spark.sparkContext.setJobDescription("lakewarden report figures")
    try:
        started = time.monotonic()
        if callable(kept):
            kept = kept()
        document = compute_figures(
            spark, job=job, marked=marked, snapshot_schema=snapshot_schema, now=now, kept=kept, kept_note=kept_note,
            on_commits=on_commits, reachability=reachability, may_mark=may_mark,
        )
        document["seconds"] = round(time.monotonic() - started, 3)
        log.info("report figures computed in %.1f s", document["seconds"])
        return document
    except Exception as exc:  # noqa: BLE001 - the figures are a view; the run's outcome is not their business
        log.warning("report figures not computed: %s", error_line(exc))
        log.debug("figures failure", exc_info=True)
        return None
    finally:
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]


def save_figures(report_dir: Path, document: dict[str, Any] | None) -> Path | None:
    """Write ``document`` as ``report_dir/figures.json``; None (and nothing written) when there
    is no document or the write fails (logged: the page then says its figures are not available)."""
    if document is None:
        return None
    try:
        from lakewarden.reports.directory import write_json_atomic

        path = Path(report_dir) / FIGURES
        write_json_atomic(path, document)
        return path
    except Exception as exc:  # noqa: BLE001 - the figures are a view; the run's outcome is not their business
        log.warning("figures.json not written in %s: %s", report_dir, error_line(exc))
        return None


@contextmanager
def drawn_beside(
    draw: "Callable[[], T] | None", then: "Callable[[T], object] | None" = None
) -> Iterator[None]:
    """Compute the report's figures (``draw``, e.g. a :func:`figures_document` or
    :func:`write_figures` call) on a thread while the with-block does the run's other work (its
    safety tests, its writes). Spark takes both threads' queries on the one session, so the
    figures' short jobs run in the gaps of the block's instead of after them. The block's end
    waits for the figures, error or not: a report is finished only once its figures are written
    or their absence is logged. ``then``: called with what ``draw`` returned once both are done
    and the block raised nothing (a figures document is saved only for a run whose safety
    tests passed); a block that raises discards it. ``None``: nothing to draw."""
    if draw is None:
        yield
        return
    drawn: list[T] = []

    def run() -> None:
        try:
            drawn.append(draw())
        except Exception as exc:  # noqa: BLE001 - the figures are a view; the run's outcome is not their business
            log.warning("report figures not drawn: %s", error_line(exc))
            log.debug("figures failure", exc_info=True)

    thread = threading.Thread(target=run, name="report-figures", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()
    if then is not None and drawn:
        then(drawn[0])


READ_RANGES_KEPT_NOTE = (
    "kept: distinct addresses of the ranges this run read that it does not mark (age of their earliest entry); "
    "ranges it did not read are not counted"
)


def kept_in_ranges(
    spark: "SparkSession", snapshot_schema: str, range_ids: "DataFrame", marked: "DataFrame", *,
    gathered: "list[str] | None" = None,
) -> "DataFrame":
    """The objects of the ranges ``range_ids`` (one ``range_id`` column) that ``marked`` does not
    hold, one row per address (``earliest_modified_at``, ``size_bytes``): the ``kept`` of a job
    that reads only some ranges (lifecycle), so its figures read those and no others. A few
    thousand ids become a literal list (the Parquet reader skips the other ranges' row groups,
    as the models' range lists do); more are a semi-join; none reads no entry. ``gathered``:
    the ids of ``range_ids`` when the caller has them already (no query for them here)."""
    from lakewarden.runtime.compiled_models import collect_range_ids

    ids = gathered if gathered is not None else collect_range_ids(range_ids.select("range_id"))
    frames = {"marked": marked}
    if ids is None:
        frames["read"] = range_ids.select("range_id")
        read = "range_id in (select range_id from {read})"
    else:
        read = f"range_id in ({', '.join(_text(str(i)) for i in ids)})" if ids else "false"
    return _sql(
        spark,
        f"""
        with entries as (
            select xxhash64(address) as address_key, min(last_modified) as earliest_modified_at, max(size) as size_bytes
            from {_table(snapshot_schema, "ranges")}
            where {read}
            group by xxhash64(address)
        ),
        marked_keys as (
            select distinct xxhash64(address) as address_key from {{marked}}
        )
        select entries.earliest_modified_at, entries.size_bytes
        from entries
        left anti join marked_keys on entries.address_key = marked_keys.address_key
        """,
        frames,
    )


# The figures are SQL text, one statement a query: Spark parses and analyses it once. Built as
# DataFrame calls they were about 1,150 calls into the JVM, each analysing its step: 1M entries,
# an incremental lifecycle run, 1.2 s of the figures' 2.5 s went to building the query beside
# the run's last steps on 2 cores; as one statement 0.84 s (figures 1.9-2.3 s against 2.0-2.5 s
# in four alternated pairs). What remains is mostly Spark planning code run once per process.


def _sql(spark: "SparkSession", text: str, frames: "dict[str, DataFrame]") -> "DataFrame":
    """``spark.sql(text)`` with each ``{name}`` of ``text`` the DataFrame ``frames[name]``, as a
    temporary view of a name no other thread uses, dropped once the statement is analysed (the
    view's plan is then part of the statement's). No other braces in ``text``: literals go in
    through :func:`_text`."""
    import uuid

    names = {name: f"lakewarden_figures_{name}_{uuid.uuid4().hex}" for name in frames}
    try:
        for name, frame in frames.items():
            frame.createOrReplaceTempView(names[name])
        return spark.sql(text.format(**names))
    finally:
        for name in names.values():
            spark.catalog.dropTempView(name)


def _text(value: str) -> str:
    """``value`` as a Spark SQL string literal inside a text :func:`_sql` formats."""
    from lakewarden.snapshot import sql_string

    return sql_string(value).replace("{", "{{").replace("}", "}}")


def _table(schema: str, name: str) -> str:
    """The snapshot's table ``name`` of ``schema`` (as ``spark.table`` takes it) inside a text :func:`_sql` formats."""
    return f"{schema}.{name}".replace("{", "{{").replace("}", "}}")


def _reasons_sql(job: str) -> str:
    """Why each row of ``job``'s marked mart is marked: an ``array<string>`` expression."""
    if job == "lifecycle":
        named = f"transform(matched_rules, rule -> format_string({_text(LIFECYCLE_REASON.replace('{rule}', '%s'))}, rule))"
        return f"case when coalesce(size(matched_rules), 0) > 0 then {named} else array({_text(UNRECORDED_RULE)}) end"
    if job == "gc-uncommitted":
        reason = _text(UNCOMMITTED_REASON.replace("{source}", "%s"))
        return f"array(format_string({reason}, coalesce(candidate_source, 'listing')))"
    if job == "gc-committed":
        return f"array({_text(COMMITTED_REASON)})"
    if job == "gc":  # lakewarden gc: each row carries its reason (lakewarden.jobs.gc_unified)
        return "array(reason)"
    return f"array({_text(job)})"


def _path_sql(marked: "DataFrame") -> str:
    """One logical path of each marked row ('' when the mart has none)."""
    from pyspark.sql.types import ArrayType

    if "example_path" in marked.columns:
        return "coalesce(example_path, '')"
    if "paths" in marked.columns:
        if isinstance(marked.schema["paths"].dataType, ArrayType):
            return "coalesce(element_at(paths, 1), '')"
        return "coalesce(substring_index(paths, ';', 1), '')"
    return "''"


def _prefix_sql(path: str) -> str:
    """``head/`` of the path ``path`` (leading slashes dropped); :data:`ROOT_PREFIX` for a
    top-level name."""
    bare = f"trim(leading '/' from {path})"  # leading slashes: a trim, cheaper than a pattern on every row
    return f"case when instr({bare}, '/') > 0 then concat(substring_index({bare}, '/', 1), '/') else {_text(ROOT_PREFIX)} end"


def _age_bin_sql(moment: str, now: datetime) -> str:
    """The index in :data:`AGE_BINS_DAYS` of the timestamp ``moment``'s age at ``now`` (null
    when unknown)."""
    days = f"(({now.timestamp()!r}D - unix_micros({moment}) / 1000000) / 86400)"
    bins = " ".join(f"when {days} >= {AGE_BINS_DAYS[index]} then {index}" for index in range(len(AGE_BINS_DAYS) - 1, 0, -1))
    return f"case when {moment} is null then cast(null as int) {bins} else 0 end"


#: the parts of the figures' one query (compute_figures): the listings of the marked rows, and
#: the snapshot's figures
LISTING, SNAPSHOT = "listing", "snapshot"
#: the columns of every row the figures' queries give, in order, with their types: each part
#: fills its own and leaves the others null, so the parts are one union
_COLUMNS = (
    ("part", "string"), ("is_largest", "boolean"), ("kind", "string"), ("name", "string"), ("rank", "int"),
    ("objects", "bigint"), ("bytes", "bigint"), ("groups", "bigint"), ("path", "string"), ("reasons", "array<string>"),
    ("marked", "boolean"), ("bin", "int"), ("sets_bits", "bigint"), ("sets_numbers", "array<int>"),
)


def _row(**values: str) -> str:
    """A select list of :data:`_COLUMNS`: ``values`` as given (SQL expressions), the others null."""
    unknown = set(values) - {name for name, _ in _COLUMNS}
    if unknown:
        raise ValueError(f"not a figures column: {sorted(unknown)}")
    return ", ".join(f"cast({values.get(name, 'null')} as {kind}) as {name}" for name, kind in _COLUMNS)


@dataclass(frozen=True)
class _Query:
    """Named subqueries (``ctes``, in order) and one select over them, with the DataFrames its
    text names (``frames``): a part of the figures, run alone or beside another (:meth:`plus`)."""

    ctes: tuple[tuple[str, str], ...]
    select: str
    frames: "dict[str, DataFrame]"

    def plus(self, other: "_Query") -> "_Query":
        own = dict(self.ctes)
        shared = [name for name, text in other.ctes if name in own and own[name] != text]
        if shared:
            raise ValueError(f"two parts define {shared} differently")
        ctes = self.ctes + tuple((name, text) for name, text in other.ctes if name not in own)
        return _Query(ctes, f"{self.select}\nunion all\n{other.select}", {**self.frames, **other.frames})

    def frame(self, spark: "SparkSession") -> "DataFrame":
        with_clause = ",\n".join(f"{name} as (\n{text}\n)" for name, text in self.ctes)
        return _sql(spark, f"with {with_clause}\n{self.select}", self.frames)


def _rows_cte(job: str, marked: "DataFrame") -> tuple[str, str]:
    """``rows``: the marked rows in the form every figure reads them."""
    holding = ", range_ids" if "range_ids" in marked.columns else ""  # the ranges holding each object, when the mart says
    return "rows", f"""
        select
            address,
            cast(coalesce(size_bytes, 0) as bigint) as size,
            last_modified_at as modified,
            {_path_sql(marked)} as path,
            {_reasons_sql(job)} as reasons{holding}
        from {{marked}}"""


def compute_figures(
    spark: "SparkSession",
    *,
    job: str,
    marked: "DataFrame",
    snapshot_schema: str,
    now: datetime,
    kept: "DataFrame | None" = None,
    kept_note: str | None = None,
    on_commits: bool = True,
    reachability: "Reachability | None" = None,
    may_mark: bool = True,
) -> dict[str, Any]:
    """The figures as a JSON document (Spark: two passes over ``marked``, one join of the
    snapshot's ranges with it for branches and kept ages), collected in one query, or in two
    when tracing branches loads the commit graph or reads entries itself (the first then says
    whether anything is marked, so a run marking nothing does neither)."""
    rows = _rows_cte(job, marked)
    listing = _listing_query(rows, now, {"marked": marked})
    # ... and the snapshot's figures (kept ages, marked objects' branches) in the same query,
    # when tracing branches asks no query of its own (the run's graph walk is given and the mart
    # has each object's ranges) or nothing is traced (on_commits or may_mark False): each query
    # costs its planning and jobs, and the figures are drawn beside the run's last steps, where
    # they were the longest thread (1M entries, an incremental lifecycle run: the two queries
    # 0.28 s and 0.62 s, with 0.23 s of building between them). Else the marked rows' totals
    # come first: with nothing marked, no graph is loaded and no entry is read for it.
    trace = on_commits and may_mark
    snapshot: _SnapshotPart | None = None
    if not trace or (reachability is not None and "range_ids" in marked.columns):
        snapshot = _snapshot_figures(spark, rows, marked, snapshot_schema, now, kept, reachability, trace=trace)
        collected = listing.plus(snapshot.query).frame(spark).collect()
        listed = [row for row in collected if row["part"] == LISTING]
        snapshot_rows = [row for row in collected if row["part"] == SNAPSHOT]
    else:
        listed = listing.frame(spark).collect()
    marked_groups, largest = _listings(listed)
    total = marked_groups.get("total", {}).get("groups", [{"objects": 0, "bytes": 0}])
    marked_total = Group(int(total[0]["objects"]), int(total[0]["bytes"]))
    if snapshot is None:  # the second query: branches traced only when something is marked
        snapshot = _snapshot_figures(spark, rows, marked, snapshot_schema, now, kept, reachability, trace=marked_total.objects > 0)
        snapshot_rows = snapshot.query.frame(spark).collect()
    branches, kept_ages = snapshot.read(snapshot_rows, marked_total if on_commits else Group(0, 0))
    if not on_commits and marked_total.objects:
        # what tracing them would find, without reading an entry: no commit holds any of them
        branches = _trim({NOT_IN_COMMIT: marked_total})
    ages_marked = {int(g["name"]): g for g in marked_groups.get("age", {}).get("groups", [])}
    bins = range(len(AGE_BINS_DAYS))
    return {
        "format": FORMAT,
        "job": job,
        "now": now.isoformat(),
        "marked": {"objects": int(total[0]["objects"]), "bytes": int(total[0]["bytes"])},
        "by_prefix": marked_groups.get("prefix", _empty_listing()),
        "by_reason": marked_groups.get("reason", _empty_listing()),
        "by_branch": {**branches, "note": BRANCH_NOTE},
        "ages": {
            "bins_days": list(AGE_BINS_DAYS),
            "labels": age_bin_labels(),
            "marked_objects": [int(ages_marked.get(i, {}).get("objects", 0)) for i in bins],
            "marked_bytes": [int(ages_marked.get(i, {}).get("bytes", 0)) for i in bins],
            "kept_objects": [int(kept_ages.get(i, (0, 0))[0]) for i in bins],
            "kept_bytes": [int(kept_ages.get(i, (0, 0))[1]) for i in bins],
            "kept_note": kept_note or KEPT_NOTE,
        },
        "largest": largest,
    }


def _empty_listing() -> dict[str, Any]:
    return {"groups": [], "other_groups": 0, "other": {"objects": 0, "bytes": 0}}


def _listing_query(rows: tuple[str, str], now: datetime, frames: "dict[str, DataFrame]") -> _Query:
    """The rows :func:`_listings` reads: every (kind, name) group of the marked rows (pass 1),
    the :data:`TOP_GROUPS` largest of each kind (bytes, then name) with the rest folded in Spark
    into one ``other`` row, so at most a few hundred rows travel; and the :data:`TOP_LARGEST`
    largest marked objects (pass 2), as the page's entries.

    Pass 1 first counts the rows per combination of prefix, age bin and reasons (a handful to a
    few thousand: an aggregate the map side collapses), and only those combinations are exploded
    into one row per group they count in: exploding every marked row first moved four rows a row
    into a string-keyed aggregate (645,100 marked rows: 4.8 task-seconds). Pass 2 reads only the
    columns it shows (not the holding ranges' arrays nor the ages: 645,100 marked rows, 1.1 s of
    task time with them)."""
    return _Query(
        (
            rows,
            ("combinations", f"""
        select {_prefix_sql("path")} as prefix, {_age_bin_sql("modified", now)} as age, reasons,
            count(1) as objects, sum(size) as bytes
        from rows
        group by 1, 2, 3"""),
            ("groups_of_combinations", """
        select
            explode(concat(
                array(
                    named_struct('kind', 'total', 'name', ''),
                    named_struct('kind', 'prefix', 'name', prefix),
                    named_struct('kind', 'age', 'name', cast(age as string))
                ),
                transform(reasons, reason -> named_struct('kind', 'reason', 'name', reason))
            )) as key,
            objects,
            bytes
        from combinations"""),
            ("grouped", """
        select key.kind as kind, key.name as name, sum(objects) as objects, sum(bytes) as bytes
        from groups_of_combinations
        where key.name is not null
        group by key.kind, key.name"""),
            ("ranked", """
        select kind, name, objects, bytes, row_number() over (partition by kind order by bytes desc, objects desc, name) as rank
        from grouped"""),
            ("folded", f"""
        select
            kind,
            case when rank <= {TOP_GROUPS} then name end as name,
            case when rank <= {TOP_GROUPS} then rank end as rank,
            sum(objects) as objects,
            sum(bytes) as bytes,
            count(1) as groups
        from ranked
        group by 1, 2, 3"""),
            ("largest", f"""
        select address, size, path, reasons
        from rows
        order by size desc, address
        limit {TOP_LARGEST}"""),
        ),
        f"select {_row(part=_text(LISTING), is_largest='false', kind='kind', name='name', rank='rank', objects='objects', bytes='bytes', groups='groups')} from folded\n"
        f"union all\nselect {_row(part=_text(LISTING), is_largest='true', name='address', bytes='size', path='path', reasons='reasons')} from largest",
        frames,
    )


def _listings(collected: Sequence[Any]) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """``kind -> listing`` and the largest entries (``size_bytes``, largest first), from the
    collected rows of :func:`_listing_query`."""
    out: dict[str, dict[str, Any]] = {}
    groups = [row for row in collected if not row["is_largest"]]
    for row in sorted(groups, key=lambda r: (r["kind"], r["rank"] is None, r["rank"] or 0)):
        listing = out.setdefault(row["kind"], _empty_listing())
        if row["rank"] is None:
            listing["other_groups"] = int(row["groups"])
            listing["other"] = {"objects": int(row["objects"]), "bytes": int(row["bytes"])}
        else:
            listing["groups"].append({"name": row["name"], "objects": int(row["objects"]), "bytes": int(row["bytes"])})
    largest_entries = [
        {"address": row["name"], "path": row["path"], "size_bytes": int(row["bytes"]), "reasons": list(row["reasons"] or [])}
        for row in sorted((row for row in collected if row["is_largest"]), key=lambda row: (-int(row["bytes"]), row["name"]))
    ]
    return out, largest_entries


@dataclass(frozen=True)
class _SnapshotPart:
    """The snapshot's figures as one query's rows (``part`` :data:`SNAPSHOT`: ``marked``,
    ``sets_bits`` or ``sets_numbers``, ``bin``, ``objects``, ``bytes``; a few hundred), and how
    to read them once collected: ``read(rows, total)`` gives (marked by branch as a listing,
    kept objects and bytes per age bin), ``total`` being every marked object."""

    query: _Query
    read: Callable[[Sequence[Any], Group], tuple[dict[str, Any], dict[int, tuple[int, int]]]]


def _snapshot_figures(
    spark: "SparkSession", rows: tuple[str, str], marked: "DataFrame", schema: str, now: datetime,
    kept_objects: "DataFrame | None" = None, reachability: "Reachability | None" = None, *, trace: bool = True,
) -> _SnapshotPart:
    """The kept ages and the marked objects' branches, as one query of two parts: the
    snapshot's entries joined with the marked addresses and grouped by address (one shuffle of
    every entry, fixed-width aggregates only) give the kept ages; the marked addresses' own
    entries, with the branch sets of the commits listing their ranges (only those ranges are
    traced), give each marked address its sets. Marked addresses are then counted per distinct
    combination of branch sets, and the driver turns combinations into branches: exact, without
    an (address x branch) table. ``trace=False``: no branch is drawn (nothing is marked, or
    the marked objects are on no commit), so neither the commit graph nor the marked entries
    are traced; the kept ages are the whole answer. ``rows``: the marked rows' subquery
    (:func:`_rows_cte`) over ``marked``."""
    from pyspark.sql import functions as F

    # Addresses are grouped by a 64-bit hash of their text: the shuffle moves 8 bytes a row instead
    # of the address (measured 30-50% faster). Two addresses sharing a hash (odds ~1e-6 at 8M
    # distinct addresses) would count as one object in these figures; they are a view of the
    # run, never an input to what is marked or deleted.
    entries = ("entries", f"""
        select range_id, xxhash64(address) as address_key, last_modified, size
        from {_table(schema, "ranges")}""")
    keyed = ("keyed", """
        select xxhash64(address) as address_key, size as marked_size, true as is_marked
        from rows""")
    frames: dict[str, DataFrame] = {"marked": marked}
    if kept_objects is not None:
        # the job's models kept them (one row per kept object): no pass over the entries here
        frames["kept"] = kept_objects
        ctes = [rows, ("kept_rows", "select earliest_modified_at as modified, size_bytes as size from {kept}")]
    else:
        # every address of the snapshot once, with fixed-width aggregates only. Branch sets were
        # once aggregated here too, as arrays beside every address, with every range's sets
        # broadcast: on the 100,000-commit history (3,925 sets) the figures took 24.8 s, nearly
        # all of it that one query.
        ctes = [rows, entries, keyed, ("per_address", """
        select
            entries.address_key,
            max(keyed.is_marked) as is_marked,
            min(entries.last_modified) as modified,
            max(entries.size) as size
        from entries
        left join keyed on entries.address_key = keyed.address_key
        group by entries.address_key"""), ("kept_rows", """
        select modified, size from per_address where is_marked is null""")]
    ctes.append(("kept", f"""
        select bin, count(1) as objects, sum(size) as bytes
        from (select {_age_bin_sql("modified", now)} as bin, coalesce(size, 0) as size from kept_rows)
        where bin is not null
        group by bin"""))
    kept_select = f"select {_row(part=_text(SNAPSHOT), marked='false', bin='bin', objects='objects', bytes='bytes')} from kept"

    def ages_of(collected: Sequence[Any]) -> dict[int, tuple[int, int]]:
        return {int(row["bin"]): (int(row["objects"]), int(row["bytes"] or 0)) for row in collected if not row["marked"]}

    if not trace:
        return _SnapshotPart(_Query(tuple(ctes), kept_select, frames), lambda collected, _total: (_trim({}), ages_of(collected)))
    if reachability is not None:
        reach = reachability  # the run's models walked the graph already
    else:
        from lakewarden.runtime.dbt_python import load_graph

        graph = load_graph(
            spark.table(f"{schema}.commits").select(
                "commit_id",
                F.coalesce(F.col("parents"), F.array().cast("array<string>")).alias("parent_commit_ids"),
                F.col("creation_date").alias("created_at"),
                "version",
            )
        )
        heads = {
            r["branch_id"]: r["commit_id"]
            for r in spark.table(f"{schema}.branches").select("branch_id", "commit_id").collect()
        }
        reach = graph.reachability(heads)
    # Each distinct branch set is one bit of a long when there are at most 63 of them (the
    # common case: commits share a handful of sets): the per-address union is then bit_or,
    # far cheaper than collecting arrays; above that, arrays of set ids.
    set_ids = sorted(reach.members)
    use_bits = len(set_ids) <= MAX_SET_BITS
    # only with bits in use: a 64th set's bit would not fit a long (the arrays carry them then)
    bit_of = {set_id: 1 << index for index, set_id in enumerate(set_ids)} if use_bits else {}
    number_of = {set_id: index for index, set_id in enumerate(set_ids)}
    import pyarrow as pa

    # an Arrow table becomes a local relation in the JVM; a list of Python rows would be
    # pickled through Python worker processes (~1-2 s and ~1 GB to start them)
    frames["set_of_commit"] = spark.createDataFrame(
        pa.table(
            {
                "commit_id": pa.array(reach.commit_ids, pa.string()),
                # arrays of set numbers, not of set ids: int arrays are far cheaper to aggregate
                "set_number": pa.array([number_of[set_id] for set_id in reach.set_ids], pa.int32()),
                "bit": pa.array([bit_of.get(set_id, 0) for set_id in reach.set_ids], pa.int64()),
            }
        )
    )
    # The marked addresses' entries only: the ranges holding them, and the branch sets of the
    # commits listing those ranges (never every range's sets); read twice below (the holding
    # ranges, then the sets per address). The mart's own range_ids when it has them: exploding
    # them again costs less than keeping them (645,100 marked rows: 1.5 s of task time to hold
    # them in memory first). Else one scan of the snapshot's entries for the marked addresses',
    # held in memory between the two reads (a few bytes a marked entry).
    held: DataFrame | None = None
    if "range_ids" in marked.columns:
        ctes.append(("marked_entries", """
        select xxhash64(address) as address_key, explode(range_ids) as range_id, size as marked_size
        from rows"""))
    else:
        from pyspark import StorageLevel

        holders = _Query((rows, entries, keyed), """
        select entries.address_key, entries.range_id, keyed.marked_size
        from entries
        inner join keyed on entries.address_key = keyed.address_key""", {"marked": marked})
        held = holders.frame(spark).persist(StorageLevel.MEMORY_AND_DISK)
        held.count()
        frames["held_entries"] = held
        ctes.append(("marked_entries", "select * from {held_entries}"))
    # The metarange rows (2M on the 100,000-commit history) are streamed once and never shuffled:
    # narrowed to the holding ranges, then given their commits' sets, both sides broadcast (one
    # is sized by ranges, the other by commits, as the walk is). The other way round (a shuffle
    # join to the holding ranges after the commits) took 2.2 s there; this way 1.3 s.
    # The sets as bits of a long (sets_bits), or as arrays of set numbers (sets_numbers).
    range_sets = "bit_or(sets_of_metarange.bit)" if use_bits else "collect_set(sets_of_metarange.set_number)"
    address_sets = (
        "bit_or(coalesce(range_sets.sets, 0))" if use_bits
        else "array_sort(array_distinct(flatten(collect_list(coalesce(range_sets.sets, cast(array() as array<int>))))))"
    )
    ctes += [
        ("holding", "select distinct range_id from marked_entries"),
        ("sets_of_metarange", f"""
        select /*+ BROADCAST(set_of_commit) */ commits.meta_range_id, set_of_commit.set_number, set_of_commit.bit
        from {_table(schema, "commits")} as commits
        inner join {{set_of_commit}} as set_of_commit on commits.commit_id = set_of_commit.commit_id
        where commits.meta_range_id != ''"""),
        ("range_sets", f"""
        select /*+ BROADCAST(holding), BROADCAST(sets_of_metarange) */ metaranges.range_id, {range_sets} as sets
        from {_table(schema, "metaranges")} as metaranges
        left semi join holding on metaranges.range_id = holding.range_id
        inner join sets_of_metarange on metaranges.meta_range_id = sets_of_metarange.meta_range_id
        group by metaranges.range_id"""),
        # one row per holding range: broadcast, so the marked entries are not moved to meet it
        ("address_sets", f"""
        select /*+ BROADCAST(range_sets) */ marked_entries.address_key, max(marked_entries.marked_size) as size, {address_sets} as sets
        from marked_entries
        left join range_sets on marked_entries.range_id = range_sets.range_id
        group by marked_entries.address_key"""),
        ("by_sets", """
        select sets, count(1) as objects, sum(size) as bytes from address_sets group by sets"""),
    ]
    sets_column = "sets_bits" if use_bits else "sets_numbers"
    # kept ages and marked sets come back together (a few hundred rows)
    select = (
        f"{kept_select}\nunion all\n"
        f"select {_row(part=_text(SNAPSHOT), marked='true', objects='objects', bytes='bytes', **{sets_column: 'sets'})} from by_sets"
    )

    def read(collected: Sequence[Any], total: Group) -> tuple[dict[str, Any], dict[int, tuple[int, int]]]:
        if held is not None:
            held.unpersist()
        return _branches(collected, total, reach, set_ids, bit_of if use_bits else None), ages_of(collected)

    return _SnapshotPart(_Query(tuple(ctes), select, frames), read)


def _branches(
    collected: Sequence[Any], total: Group, reach: "Reachability", set_ids: Sequence[str], bit_of: dict[str, int] | None
) -> dict[str, Any]:
    """Marked objects by branch, as a listing, from the collected rows of :func:`_snapshot_figures`
    (``bit_of``: each set's bit when the sets came as bits, else None: as set numbers)."""
    found = Group()
    # combinations of sets -> (branches as a mask, whether a set no branch reaches is among them):
    # thousands of combinations on a long history fold into far fewer distinct unions
    by_union: dict[tuple[int, bool], Group] = {}
    for row in collected:
        if not row["marked"]:
            continue
        objects, size = int(row["objects"]), int(row["bytes"] or 0)
        found.add(objects, size)
        if bit_of is not None:
            bits = int(row["sets_bits"] or 0)
            members = [s for s in set_ids if bits & bit_of[s]]
        else:
            members = [set_ids[n] for n in (row["sets_numbers"] or ())]
        mask, dangling = 0, False
        for set_id in members:
            set_mask = reach.masks.get(set_id, 0)
            mask |= set_mask
            dangling = dangling or not set_mask
        by_union.setdefault((mask, dangling), Group()).add(objects, size)
    by_branch: dict[str, Group] = {}
    # per branch bit, summed over the unions holding it: one pass over each union's set bits
    # (10,000 branches and thousands of unions on a long history: no name tuple per union)
    objects_by_bit = [0] * len(reach.branches)
    bytes_by_bit = [0] * len(reach.branches)
    for (mask, dangling), group in by_union.items():
        if dangling:
            by_branch.setdefault(DANGLING, Group()).add(group.objects, group.bytes)
        elif not mask:
            by_branch.setdefault(NOT_IN_COMMIT, Group()).add(group.objects, group.bytes)
        for bit in set_bits(mask):
            objects_by_bit[bit] += group.objects
            bytes_by_bit[bit] += group.bytes
    for bit, name in enumerate(reach.branches):
        if objects_by_bit[bit] or bytes_by_bit[bit]:
            by_branch.setdefault(name, Group()).add(objects_by_bit[bit], bytes_by_bit[bit])
    # marked addresses no entry of the snapshot holds
    missing = Group(total.objects - found.objects, total.bytes - found.bytes)
    if missing.objects:
        by_branch.setdefault(NOT_IN_COMMIT, Group()).add(missing.objects, missing.bytes)
    return _trim(by_branch)


def _trim(groups: dict[str, Group]) -> dict[str, Any]:
    """A listing of the :data:`TOP_GROUPS` largest ``groups`` (bytes, objects, name), the rest folded."""
    ordered = sorted(groups.items(), key=lambda item: (-item[1].bytes, -item[1].objects, item[0]))
    listing = _empty_listing()
    listing["groups"] = [{"name": name, "objects": g.objects, "bytes": g.bytes} for name, g in ordered[:TOP_GROUPS]]
    rest = ordered[TOP_GROUPS:]
    listing["other_groups"] = len(rest)
    listing["other"] = {"objects": sum(g.objects for _, g in rest), "bytes": sum(g.bytes for _, g in rest)}
    return listing
