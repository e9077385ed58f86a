"""Run a job's dbt models on the job's Spark session: dbt compiles, the runner executes.

Why not ``dbt build``: a dbt node costs 0.1–1.6 s beyond its SQL (the materialization macro
rendered in Jinja, relation cache lookups, ``describe``/``show`` statements, rename dances, run
results), which made a run's fixed cost larger than its work (issue 18). The models stay where
the algorithm lives and dbt stays their compiler: ``dbt compile`` (on the cached manifest,
lakewarden.runtime.project) renders every ref, source, var and macro for this run; this module then
sends each node's compiled SQL to Spark itself, in dependency order, with the one statement its
materialization needs:

* ``view``: ``CREATE OR REPLACE VIEW`` (a catalog entry, no Spark job);
* ``table``: ``CREATE TABLE ... USING <file_format> AS`` (Parquet in the process's warehouse);
  on a small snapshot an ``int_`` table is held in the session's memory instead (a local
  checkpoint under a temporary view the later nodes read: :meth:`ModelRunner._hold`);
* a Python model: dbt's own recipe from the compiled file (``dbt = dbtObj(spark.table);
  df = model(dbt, spark)``), then the frame saved as the table;
* a singular data test: dbt's test query (``fail_calc``, ``warn_if``, ``error_if``, severity);
  an erroring test fails the run, as under ``dbt build``.

``dbt build`` from a shell or CI runs the same models through dbt's own materializations and
runs every test (generic and unit tests included); the runner's selection is the job's models
and the singular safety tests whose parents are all among them (dbt's cautious selection).

A node already executed in this session with the same compiled code is not executed again: a
job that builds its commits first and its mark later pays for the commits once.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterator, Mapping, Sequence

from lakewarden.errors import LakewardenError

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Future

    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: configurations of dbt-spark's materializations the runner does not reproduce; a model using
#: one is refused (tests/test_compiled_models.py checks the project uses none)
UNSUPPORTED_CONFIG = ("partition_by", "clustered_by", "buckets", "location_root", "pre-hook", "post-hook", "unique_key")
SUPPORTED_MATERIALIZATIONS = ("view", "table", "ephemeral")


class ModelFailed(LakewardenError):
    """A model's statement failed, or a safety test found rows."""


@dataclass(frozen=True)
class CompiledNode:
    """One selected node as dbt compiled it for this run."""

    unique_id: str
    name: str
    resource_type: str  # "model" | "test"
    language: str  # "sql" | "python"
    materialized: str
    relation: str | None  # schema.identifier of a model
    code: str
    depends_on: tuple[str, ...]
    config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.code.encode()).hexdigest()


@dataclass(frozen=True)
class BuildResult:
    """What one ``build`` did: nodes executed, nodes found already executed, statements sent."""

    executed: tuple[str, ...]
    reused: tuple[str, ...]
    statements: int
    seconds: float
    warnings: tuple[str, ...] = ()


#: what a run's own values are compiled as: each is emitted verbatim into a string literal
#: (``'{{ var("run_id") }}'``, macros/run_clock.sql, the uncommitted GC models' times), so a
#: compilation with these stand-ins serves every run once they are replaced
#: (tests/test_compiled_models.py compares the result with dbt's compilation of real values)
RUN_VALUE_STANDINS = {
    "run_id": "lakewarden-standin-run-id-7d3f",
    "now": "1900-01-01T00:00:00.424242Z",
    "gc_uncommitted_storage_cutoff": "1900-01-02T00:00:00.424242Z",
    "gc_uncommitted_previous_last_commit_at": "1900-01-03T00:00:00.424242Z",
}
#: environment variables the compiled code depends on (the profile's schema and target)
COMPILE_ENVIRONMENT = ("LAKEWARDEN_SCHEMA", "LAKEWARDEN_TARGET")
COMPILED_CACHE_VERSION = 1


def compile_selection(selection: str, *, state: Path, variables: Mapping[str, Any]) -> list[CompiledNode]:
    """The selection's nodes compiled for this run (the job's models and the singular tests
    whose parents are all selected), in dependency order.

    A compilation is kept beside the cached manifest, keyed by the project's fingerprint, the
    selection, the variables other than the run's id and clock, and the environment the profile
    reads; so a run of an unchanged project neither imports dbt nor renders Jinja (~3 s). The
    run's own id and clock are compiled as stand-ins and put in afterwards."""
    run_values = {name: str(variables[name]) for name in RUN_VALUE_STANDINS if variables.get(name) is not None}
    compile_vars = {**variables, **{name: RUN_VALUE_STANDINS[name] for name in run_values}}
    key = _compiled_key(selection, compile_vars)
    nodes = _load_compiled(key)
    if nodes is None:
        from lakewarden.runtime.project import compile_nodes

        raw = compile_nodes(
            ["--select", selection, "--indirect-selection", "cautious", "--exclude", "test_type:generic", "test_type:unit"],
            state=state,
            variables=compile_vars,
        )
        nodes = _in_dependency_order([_compiled(node) for node in raw])
        _save_compiled(key, nodes)
    return [_with_run_values(node, run_values) for node in nodes]


def _with_run_values(node: CompiledNode, run_values: Mapping[str, str]) -> CompiledNode:
    code = node.code
    for name, value in run_values.items():
        code = code.replace(RUN_VALUE_STANDINS[name], value)
    return replace(node, code=code)


def _compiled_key(selection: str, compile_vars: Mapping[str, Any]) -> str:
    import os

    from lakewarden.runtime.project import project_dir, project_fingerprint

    identity = {
        "version": COMPILED_CACHE_VERSION,
        "project": project_fingerprint(project_dir()),
        "selection": selection,
        "vars": compile_vars,
        "environment": {name: os.environ.get(name) for name in COMPILE_ENVIRONMENT},
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _load_compiled(key: str) -> list[CompiledNode] | None:
    from lakewarden.runtime.project import manifest_cache_dirs, project_dir

    for directory in manifest_cache_dirs(project_dir()):
        cached = directory / f"compiled-{key}.json"
        if cached.is_file():
            try:
                rows = json.loads(cached.read_text())
                return [CompiledNode(**{**row, "depends_on": tuple(row["depends_on"])}) for row in rows]
            except (OSError, ValueError, TypeError, KeyError):
                log.debug("cached compilation %s unreadable; compiling", cached, exc_info=True)
    return None


def _save_compiled(key: str, nodes: Sequence[CompiledNode]) -> None:
    """Keep the compilation in the first writable cache directory (atomically)."""
    import os
    import tempfile

    from lakewarden.runtime.project import manifest_cache_dirs, project_dir

    data = json.dumps([asdict(node) for node in nodes], default=str)
    for directory in manifest_cache_dirs(project_dir()):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=directory, prefix=".compiled-")
            with os.fdopen(handle, "w") as stream:
                stream.write(data)
            os.replace(temporary, directory / f"compiled-{key}.json")
            return
        except OSError:
            continue


def _compiled(node: Any) -> CompiledNode:
    config = json.loads(json.dumps(node.config.to_dict() if hasattr(node.config, "to_dict") else dict(node.config), default=str))
    resource_type = str(getattr(node.resource_type, "value", node.resource_type))
    language = str(getattr(node.language, "value", node.language or "sql"))
    relation = None
    if resource_type == "model":
        relation = f"{node.schema}.{node.alias or node.name}"
    return CompiledNode(
        unique_id=node.unique_id,
        name=node.name,
        resource_type=resource_type,
        language=language,
        materialized=str(config.get("materialized", "view")),
        relation=relation,
        code=node.compiled_code or "",
        depends_on=tuple(node.depends_on.nodes),
        config=config,
    )


def upstream_of(nodes: Sequence[CompiledNode], names: Sequence[str]) -> list[CompiledNode]:
    """The models named ``names`` and every selected node they depend on, in the given order,
    plus the tests all of whose parents are among them (dbt's cautious selection again): a job
    builds a compiled selection in two slices without compiling twice."""
    by_id = {node.unique_id: node for node in nodes}
    wanted = {node.unique_id for node in nodes if node.name in names and node.resource_type != "test"}
    missing = set(names) - {by_id[unique_id].name for unique_id in wanted}
    if missing:
        raise ValueError(f"not in the compiled selection: {', '.join(sorted(missing))}")
    pending = list(wanted)
    while pending:
        for parent in by_id[pending.pop()].depends_on:
            if parent in by_id and parent not in wanted:
                wanted.add(parent)
                pending.append(parent)
    tests = {
        node.unique_id for node in nodes
        if node.resource_type == "test" and all(parent in wanted for parent in node.depends_on if parent in by_id)
    }
    return [node for node in nodes if node.unique_id in wanted | tests]


def _in_dependency_order(nodes: Sequence[CompiledNode]) -> list[CompiledNode]:
    """Nodes sorted so each comes after the selected nodes it depends on (stable otherwise)."""
    by_id = {node.unique_id: node for node in nodes}
    ordered: list[CompiledNode] = []
    placed: set[str] = set()
    visiting: set[str] = set()

    def place(node: CompiledNode) -> None:
        if node.unique_id in placed:
            return
        if node.unique_id in visiting:
            raise ModelFailed(f"dependency cycle at {node.name}")
        visiting.add(node.unique_id)
        for parent in node.depends_on:
            if parent in by_id:
                place(by_id[parent])
        visiting.discard(node.unique_id)
        placed.add(node.unique_id)
        ordered.append(node)

    for node in nodes:
        place(node)
    return ordered


#: a reference to a model's relation in compiled code (dbt-spark writes ``schema.name`` unquoted)
HELD_REFERENCE = re.compile(r"(?<![\w.`])\w+\.int_\w+(?![\w`])")


def chain_heights(nodes: Sequence[CompiledNode]) -> dict[str, int]:
    """Each node's height among ``nodes``: how many nodes the longest chain from it to the end
    of the build holds, itself included (1: nothing among ``nodes`` depends on it).

    Why: nodes run a few at once (:meth:`ModelRunner._execute_concurrently`), and a node that
    starts late delays every node behind it. A lifecycle run's decision which ranges to read
    waits on a chain of seven nodes (the policy, its cutoffs, the branch graph, the potential
    commits and their ranges) and on one node beside it, the windows of the new ranges; taken in
    the compiled order the windows held a place the graph's first nodes waited for (1M entries,
    an incremental run: the graph started 3 s late). The longest chain first keeps it moving,
    and the other nodes fill the places it leaves."""
    ids = {node.unique_id for node in nodes}
    dependents: dict[str, list[str]] = {node.unique_id: [] for node in nodes}
    for node in nodes:
        for dependency in node.depends_on:
            if dependency in ids:  # a cycle cannot reach here: _in_dependency_order refuses it
                dependents[dependency].append(node.unique_id)
    heights: dict[str, int] = {}
    # in dependency order the dependents of each node come after it: heights from the end back
    for node in reversed(_in_dependency_order(nodes)):
        heights[node.unique_id] = 1 + max((heights.get(d, 0) for d in dependents[node.unique_id]), default=0)
    return heights


def held_view(relation: str) -> str:
    """The temporary view a held intermediate ``schema.table`` lives in (the small form)."""
    return relation.replace(".", "__")


def read_by_views(nodes: Sequence[CompiledNode]) -> set[str]:
    """The relations a view of ``nodes`` reads, directly or through ephemeral models (dbt
    inlines those): they stay tables in the small form, as a view in the catalog cannot read
    a temporary view."""
    by_id = {node.unique_id: node for node in nodes}
    read: set[str] = set()
    for view in (node for node in nodes if node.resource_type == "model" and node.materialized == "view"):
        pending, seen = list(view.depends_on), set()
        while pending:
            parent = by_id.get(pending.pop())
            if parent is None or parent.unique_id in seen:
                continue
            seen.add(parent.unique_id)
            if parent.materialized == "ephemeral":
                pending.extend(parent.depends_on)
            elif parent.relation is not None:
                read.add(parent.relation)
    return read


def as_table(node: CompiledNode) -> CompiledNode:
    """A view node executed as a table: its rows computed once, where it is read more than once."""
    if node.resource_type != "model" or node.materialized != "view":
        return node
    return replace(node, materialized="table")


def check_supported(node: CompiledNode) -> None:
    """Refuse a node the runner would execute differently from dbt."""
    if node.resource_type == "model":
        if node.materialized not in SUPPORTED_MATERIALIZATIONS:
            raise ModelFailed(f"model {node.name}: materialized={node.materialized} is not supported by the runner")
        for key in UNSUPPORTED_CONFIG:
            if node.config.get(key):
                raise ModelFailed(f"model {node.name}: config {key} is not supported by the runner")
        if node.language == "python" and node.materialized != "table":
            raise ModelFailed(f"model {node.name}: a Python model must be materialized as a table")
    elif node.resource_type != "test":
        raise ModelFailed(f"{node.unique_id}: only models and data tests run in a job")


class ModelRunner:
    """Executes compiled nodes on one session and remembers what it executed (by node and
    compiled code), so a later build in the same run skips what is already there."""

    def __init__(
        self, spark: "SparkSession", *, range_lists: bool = True, concurrency: int = 1, hold_intermediates: bool = False
    ) -> None:
        import threading

        self.spark = spark
        #: the small form (:meth:`_hold`): ``int_`` tables kept in the session's memory, not written
        self.hold_intermediates = hold_intermediates
        #: relation (``schema.int_x``) -> the temporary view holding it in this session
        self._held: dict[str, str] = {}
        #: relations that stay tables in this build although holdable (a view reads them)
        self._keep_as_tables: set[str] = set()
        #: models (by name) whose rows are counted when held (:meth:`holding`'s ``counting``)
        self._counting: set[str] = set()
        #: model name -> its rows, for the held models counted (:meth:`held_rows`)
        self._held_rows: dict[str, int] = {}
        #: nodes executed at once, each once the nodes it depends on are done (1: one at a time)
        self.concurrency = max(1, concurrency)
        self._lock = threading.RLock()
        #: run each range-list subquery first and put its ids in as literals, and each key list's
        #: keys in a local view (macros/range_list.sql);
        #: False keeps every subquery as written: the same rows, one Spark query fewer per list.
        #: A small snapshot's run keeps them (spark_session.is_small_snapshot): its reader decodes
        #: every entry in milliseconds anyway, and each list's own query (0.3-0.6 s on a run's
        #: cold session) is pure cost; on the demo's sample (170 kB), an optimized uncommitted
        #: run's models took 0.5-1.2 s longer with the lists
        self.range_lists = range_lists
        self._done: dict[str, str] = {}
        self._schemas: set[str] = set()
        self._locations: dict[str, Path] = {}
        self.statements = 0
        #: the key lists' temporary views this runner made (:func:`key_list_view`), dropped
        #: when its run ends (:meth:`drop_key_lists`)
        self._key_list_views: list[str] = []
        from lakewarden.runtime.dbt_python import SharedReachability

        #: the branch reachability this run's Python models (and its report) share
        self.reachability = SharedReachability()

    def build(
        self,
        nodes: Sequence[CompiledNode],
        *,
        label: str = "",
        locations: Mapping[str, Path] | None = None,
        selection: Sequence[CompiledNode] | None = None,
        as_tables: Collection[str] = (),
        awaiting: Mapping[str, "Future[Any]"] | None = None,
    ) -> BuildResult:
        """Execute the nodes not yet executed with their code. ``locations``: models (by name)
        whose table is written at a given directory instead of the warehouse (a job keeps a
        mart there: it is written once, where it stays). ``selection``: the whole compiled
        selection ``nodes`` is a slice of (default ``nodes``): what a later slice reads
        decides what this one may hold in memory. ``as_tables``: views (by name) this build
        computes once as tables, because several of its queries read them (the same rows;
        a view is computed again in every query that reads it). ``awaiting``: sources (by
        dbt's unique id) the caller is still writing, each with the future of its write: a node
        reading one starts once it is written, and the others meanwhile (a failed write fails
        the build with its error)."""
        from lakewarden.runtime.progress import phase

        if as_tables:
            nodes = [as_table(node) if node.name in as_tables else node for node in nodes]
            if selection is not None:
                selection = [as_table(node) if node.name in as_tables else node for node in selection]
        self._locations = dict(locations or {})
        if self.hold_intermediates:
            self._keep_as_tables |= read_by_views(selection if selection is not None else nodes)

        started = time.monotonic()
        statements_before = self.statements
        for node in nodes:
            check_supported(node)
        pending = [node for node in nodes if self._done.get(node.unique_id) != node.digest]
        reused = tuple(node.name for node in nodes if node not in pending)
        warnings: list[str] = []
        with phase(f"models {label}".rstrip(), total=len(pending), unit="nodes") as bar:
            awaiting = dict(awaiting or {})
            if self.concurrency <= 1:
                for node in pending:
                    for dependency in node.depends_on:
                        if dependency in awaiting:
                            awaiting[dependency].result()  # written (or its error raised)
                    warning = self._execute(node)
                    if warning:
                        warnings.append(warning)
                    bar.advance()
            else:
                warnings.extend(self._execute_concurrently(pending, bar.advance, awaiting))
        return BuildResult(
            executed=tuple(node.name for node in pending),
            reused=reused,
            statements=self.statements - statements_before,
            seconds=time.monotonic() - started,
            warnings=tuple(warnings),
        )

    def _execute(self, node: CompiledNode) -> str | None:
        """One node: its statement(s), then remembered as executed; a test's warning line."""
        from lakewarden.runtime.spark_session import spark_jobs_started

        node_started, jobs_before = time.monotonic(), spark_jobs_started(self.spark)
        # Spark's UI and event log name each job after the node that started it (a property of
        # the calling thread: nodes running at once each name their own)
        self.spark.sparkContext.setJobDescription(f"lakewarden {node.resource_type} {node.name}")
        try:
            warning = None
            if node.resource_type == "test":
                warning = self._test(node)
            else:
                if node.relation is not None:
                    # built again (another build of the runner): a walk of its old rows is not served
                    self.reachability.forget(node.relation)
                self._model(node)
        finally:
            self.spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
        with self._lock:
            self._done[node.unique_id] = node.digest
        jobs_after = spark_jobs_started(self.spark)
        log.debug(
            "%s %s in %.2fs (%s Spark jobs%s)", node.resource_type, node.name, time.monotonic() - node_started,
            "?" if jobs_before is None or jobs_after is None else jobs_after - jobs_before,
            "" if self.concurrency <= 1 else ", counted with the nodes beside it",
        )
        return warning

    def _execute_concurrently(
        self, pending: Sequence[CompiledNode], advance: Any, awaiting: Mapping[str, "Future[Any]"]
    ) -> list[str]:
        """Execute ``pending`` with up to :attr:`concurrency` nodes at once, each as soon as every
        node it depends on is done (and every source in ``awaiting`` it reads is written); of the
        nodes ready, the head of the longest chain first (:func:`chain_heights`), in the compiled
        order otherwise. Spark plans and runs the queries of several threads on one
        session at once: the driver's per-statement work (planning, small jobs, catalog calls)
        of one node overlaps another's. On a failure (a node's, or an awaited write's) no
        further node starts; the nodes running finish, and the first failure is raised."""
        from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

        # the ready nodes longest chain first (then in the compiled order): a node many others
        # wait on behind it starts before one only the last of them needs
        heights = chain_heights(pending)
        waiting = sorted(pending, key=lambda node: -heights[node.unique_id])
        pending_ids = {node.unique_id for node in pending}
        finished: set[str] = set()
        running: dict[Future[str | None], CompiledNode] = {}
        warnings: dict[str, str] = {}
        failure: BaseException | None = None

        def ready(dependency: str) -> bool:
            if dependency in pending_ids:
                return dependency in finished
            written = awaiting.get(dependency)
            return written is None or (written.done() and written.exception() is None)

        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="lakewarden-node") as pool:
            while waiting or running:
                for written in awaiting.values():
                    if failure is None and written.done() and written.exception() is not None:
                        failure = written.exception()
                if failure is None:
                    for node in [n for n in waiting if all(ready(d) for d in n.depends_on)]:
                        if len(running) >= self.concurrency:
                            break
                        waiting.remove(node)
                        running[pool.submit(self._execute, node)] = node
                # the awaited writes that a waiting node still needs
                needed = [] if failure is not None else [
                    written for dependency, written in awaiting.items()
                    if not written.done() and any(dependency in node.depends_on for node in waiting)
                ]
                if not running and not needed:
                    break  # a failure stopped the rest (or, never, a cycle)
                try:
                    done, _ = wait([*running, *needed], return_when=FIRST_COMPLETED)
                except BaseException:  # Ctrl-C: the nodes running stop with their Spark jobs
                    self.spark.sparkContext.cancelAllJobs()
                    raise
                for future in done:
                    if future not in running:
                        continue  # an awaited write: its nodes start (or its failure stops) above
                    node = running.pop(future)
                    try:
                        warning = future.result()
                    except BaseException as exc:  # noqa: BLE001 - raised below, the first one
                        failure = failure or exc
                        continue
                    finished.add(node.unique_id)
                    if warning:
                        warnings[node.unique_id] = warning
                    advance()
        if failure is not None:
            raise failure
        if waiting:
            raise ModelFailed(f"nodes never ready: {', '.join(node.name for node in waiting)}")
        # in the compiled order, as one node at a time would report them
        return [warnings[node.unique_id] for node in pending if node.unique_id in warnings]

    @contextmanager
    def holding(self, hold: bool = True, *, counting: Collection[str] = ()) -> Iterator[None]:
        """Within the block, hold the ``int_`` tables built (:meth:`_hold`) when ``hold``, as a
        small snapshot's run does throughout: a stretch of a large snapshot's run whose queries
        read few rows (lakewarden.runtime.spark_session.small_form_for) saves their Parquet
        files too. What was held stays held after the block. ``counting``: models (by name)
        whose rows are counted as they are held, by the job that computes them
        (:meth:`held_rows` gives the count)."""
        before, counted_before = self.hold_intermediates, set(self._counting)
        self.hold_intermediates = before or hold
        self._counting |= set(counting)
        try:
            yield
        finally:
            self.hold_intermediates = before
            self._counting = counted_before

    def held_rows(self, name: str) -> int | None:
        """How many rows the held model ``name`` has, when it was counted as it was held
        (:meth:`holding`'s ``counting``); else None."""
        with self._lock:
            return self._held_rows.get(name)

    def relation(self, qualified: str) -> str:
        """Where a model's rows are in this session: its table (``schema.name``), or the
        temporary view holding it (the small form)."""
        with self._lock:
            return self._held.get(qualified, qualified)

    def _with_held(self, statement: str) -> str:
        """``statement`` reading the held intermediates from their temporary views."""
        with self._lock:
            held = dict(self._held)
        if not held:
            return statement
        return HELD_REFERENCE.sub(lambda match: held.get(match.group(0), match.group(0)), statement)

    def _holds(self, node: CompiledNode) -> bool:
        return (
            self.hold_intermediates
            and node.resource_type == "model"
            and node.materialized == "table"
            and node.name.startswith("int_")
            and node.name not in self._locations
            and node.relation is not None
            and node.relation not in self._keep_as_tables
        )

    def _hold(self, node: CompiledNode) -> None:
        """The small form of an ``int_`` table: its rows computed once and kept in the session's
        memory (a local checkpoint) under a temporary view the later nodes read. It saves the
        Parquet files, their commit and their listing: 0.15-0.2 s a node on a small snapshot."""
        assert node.relation is not None
        view = held_view(node.relation)
        if node.language == "python":
            self._count(1)  # _sql counts a SQL node's statement
        rows: int | None = None
        try:
            frame = self._python_frame(node) if node.language == "python" else self._sql(node.code, node)
            if node.name in self._counting:
                # the count is the job that computes the rows and keeps them (an eager
                # checkpoint's own job is a count whose result it drops): the rows' count
                # without a query of its own
                held = frame.localCheckpoint(eager=False)
                rows = held.count()
            else:
                held = frame.localCheckpoint(eager=True)
            held.createOrReplaceTempView(view)
        except LakewardenError:
            raise
        except Exception as exc:  # noqa: BLE001 - Spark's analysis and runtime errors alike
            raise ModelFailed(f"model {node.name} failed: {_first_line(exc)}") from exc
        with self._lock:
            self._held[node.relation] = view
            if rows is not None:
                self._held_rows[node.name] = rows

    def _unhold_read_by(self, view: CompiledNode) -> None:
        """A view in the catalog cannot read a temporary view: a held relation it reads (one an
        earlier build of this run held, before this view was selected) becomes its table now."""
        with self._lock:
            held = [(relation, name) for relation, name in self._held.items() if re.search(rf"(?<![\w.`]){re.escape(relation)}(?![\w`])", view.code)]
        for relation, name in held:
            with self._lock:  # first: the statements below name the table itself, not the view
                del self._held[relation]
                self._keep_as_tables.add(relation)
            self._sql(f"drop table if exists {relation}", view)
            self._sql(f"create table {relation} using parquet as select * from {name}", view)

    def drop_key_lists(self) -> None:
        """Drop the key lists' temporary views this runner made. Its run calls this when it
        ends: every statement reading one has run by then (a key list goes into a table's or a
        held node's statement, which is computed when it is built; a view in the catalog cannot
        read a temporary view). A long-lived session (the engine's) would otherwise keep each
        run's views for good."""
        with self._lock:
            views = list(self._key_list_views)
            self._key_list_views.clear()
        for view in views:
            self.spark.catalog.dropTempView(view)

    def drop_held(self) -> None:
        """Drop the temporary views of the intermediates this runner held (:meth:`_hold`). Its
        run calls this when it ends, after its sweep: nothing reads them after that. Their rows
        live in the session's memory (up to
        :data:`~lakewarden.runtime.spark_session.HELD_ROWS` rows a stretch), and a view left
        behind would keep them there in a long-lived session (the engine's, a notebook's) until
        a later run of the same job replaced it; once the view is gone, Spark frees them."""
        with self._lock:
            views = list(self._held.values())
            self._held.clear()
            self._held_rows.clear()
        for view in views:
            self.spark.catalog.dropTempView(view)

    def built(self, name: str) -> bool:
        """Whether this runner executed the node named ``name`` (a model or a test)."""
        return any(unique_id.rsplit(".", 1)[-1] == name for unique_id in self._done)

    # -- models ---------------------------------------------------------------------------

    def _count(self, statements: int) -> None:
        with self._lock:
            self.statements += statements

    def _sql(self, statement: str, node: CompiledNode) -> Any:
        self._count(1)
        statement = self._with_held(statement)
        try:
            if self.range_lists and ("lakewarden range list" in statement or "lakewarden key list" in statement):
                # the statement's lists come from a query of their own (two when the first is cut short)
                statement, lists = with_range_lists(self.spark, statement, sent=self._count, views=self._key_list_views)
                if lists:
                    log.debug("%s %s: %d list(s) in place of their subqueries", node.resource_type, node.name, lists)
            return self.spark.sql(statement)
        except Exception as exc:  # noqa: BLE001 - Spark's analysis and runtime errors alike
            raise ModelFailed(f"{node.resource_type} {node.name} failed: {_first_line(exc)}") from exc

    def _model(self, node: CompiledNode) -> None:
        if node.materialized == "ephemeral":
            return  # inlined by dbt into the nodes that use it
        if self._holds(node):
            self._hold(node)
            return
        assert node.relation is not None
        schema = node.relation.split(".", 1)[0]
        with self._lock:  # held until the schema exists: a node beside this one may need it too
            if schema not in self._schemas:  # dbt creates the schema before the first node in it
                self._sql(f"create schema if not exists {schema}", node)
                self._schemas.add(schema)
        self._drop_other_kind(node)
        if node.materialized == "view":
            self._unhold_read_by(node)
            self._sql(f"create or replace view {node.relation} as\n{node.code}", node)
        elif node.language == "python":
            self._python_table(node)
        else:
            from lakewarden.snapshot import sql_string

            file_format = node.config.get("file_format") or "parquet"
            location = self._locations.get(node.name)
            where = "" if location is None else f"\nlocation {sql_string(str(location))}"
            self._sql(f"create table {node.relation}\nusing {file_format}{where}\nas\n{node.code}", node)

    def _drop_other_kind(self, node: CompiledNode) -> None:
        """Drop what holds the relation's name before a table is created (a table or a view of an
        earlier build in this session), or a table where a view is to be created."""
        assert node.relation is not None
        catalog = self.spark.catalog
        if not catalog.tableExists(node.relation):
            return
        kind = catalog.getTable(node.relation).tableType.upper()
        is_view = kind in ("VIEW", "TEMPORARY")
        if node.materialized == "view" and is_view:
            return  # create or replace
        self._sql(f"drop {'view' if is_view else 'table'} if exists {node.relation}", node)

    def _python_table(self, node: CompiledNode) -> None:
        """dbt's recipe for a compiled Python model (the compiled file says it: ``dbt =
        dbtObj(spark.table); df = model(dbt, spark)``), then the frame saved as the table."""
        assert node.relation is not None
        self._count(1)
        try:
            frame = self._python_frame(node)
            file_format = node.config.get("file_format") or "parquet"
            frame.write.mode("overwrite").format(file_format).saveAsTable(node.relation)
        except LakewardenError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise ModelFailed(f"model {node.name} failed: {_first_line(exc)}") from exc

    def _python_frame(self, node: CompiledNode) -> "DataFrame":
        """A compiled Python model's frame (dbt's recipe: ``dbt = dbtObj(load); df = model(dbt,
        spark)``), its refs read where this session holds them."""
        from lakewarden.runtime.dbt_python import reachability_shared_by

        namespace: dict[str, Any] = {"__name__": f"lakewarden_model_{node.name}"}
        exec(compile(node.code, f"<model {node.name}>", "exec"), namespace)  # noqa: S102 - the project's own model
        given: list[tuple["DataFrame", str]] = []  # each frame a ref gave, and its relation

        def ref(name: str) -> "DataFrame":
            frame = self.spark.table(self.relation(name))
            given.append((frame, name))
            return frame

        def relation_of(frame: "DataFrame") -> str | None:
            return next((name for given_frame, name in given if given_frame is frame), None)

        with reachability_shared_by(self.reachability, relation_of):
            frame: "DataFrame" = namespace["model"](namespace["dbtObj"](ref), self.spark)
        return frame

    # -- tests ----------------------------------------------------------------------------

    def _test(self, node: CompiledNode) -> str | None:
        """dbt's data test query; raises on an erroring test, returns a warning line on a
        warning one (None when the test passes)."""
        config = node.config
        fail_calc = config.get("fail_calc") or "count(*)"
        warn_if = config.get("warn_if") or "!= 0"
        error_if = config.get("error_if") or "!= 0"
        limit = config.get("limit")
        inner = node.code if limit is None else f"select * from (\n{node.code}\n) limited limit {int(limit)}"
        query = (
            f"select {fail_calc} as failures, {fail_calc} {warn_if} as should_warn, "
            f"{fail_calc} {error_if} as should_error\nfrom (\n{inner}\n) dbt_internal_test"
        )
        row = self._sql(query, node).first()
        failures = 0 if row is None or row["failures"] is None else int(row["failures"])
        severity = str(config.get("severity") or "ERROR").upper()
        if row is not None and row["should_error"] and severity == "ERROR":
            raise ModelFailed(f"test {node.name} failed: {failures} rows (a safety invariant does not hold)")
        if row is not None and (row["should_warn"] or row["should_error"]):
            message = f"test {node.name}: {failures} rows"
            log.warning("%s", message)
            return message
        return None


def source_id(source: str, table: str, *, project: str = "lakewarden") -> str:
    """dbt's unique id of a source table (``source.<project>.<source>.<table>``): how a node's
    ``depends_on`` names it (:meth:`ModelRunner.build`'s ``awaiting``)."""
    return f"source.{project}.{source}.{table}"


#: how macros/range_list.sql marks a subquery selecting range ids
RANGE_LIST = re.compile(r"/\* lakewarden range list \*/(?P<query>.*?)/\* end of lakewarden range list \*/", re.DOTALL)
#: how macros/range_list.sql's key_list marks a list of 64-bit keys with a limit of its own
KEY_LIST = re.compile(
    r"/\* lakewarden key list, up to (?P<limit>\d+) \*/(?P<query>.*?)/\* end of lakewarden key list \*/", re.DOTALL
)
#: how macros/range_list.sql's skip_to_ranges writes ``column in (list)`` for ranges a join selects already
JOINED_RANGE_LIST = re.compile(
    r"(?P<column>[\w.`]+) in \(/\* lakewarden range list, also joined \*/(?P<query>.*?)/\* end of lakewarden range list \*/\)",
    re.DOTALL,
)
#: a job's runner executes this many nodes at once (each once the nodes it depends on are done).
#: Measured on 2 cores, quiet: ``lakewarden demo`` 46-51 s against 55-61 s one at a time (3 at
#: once: 44-49 s); ``gc committed`` at 1M entries 26.6-27.2 s against 29.3-30.2 s, the same
#: peak RSS and marks.
NODES_AT_ONCE = 2
#: at most this many ids go into a statement as literals; a longer list stays the subquery
RANGE_LIST_LIMIT = 5000
#: collect_lists first takes up to this many rows a list, as the subqueries give them (duplicates
#: included), before it asks Spark for each list's distinct values
RAW_ROWS_PER_LIST = 4


def collect_range_ids(frame: "DataFrame", *, limit: int = RANGE_LIST_LIMIT) -> list[Any] | None:
    """The distinct range ids (or 64-bit keys: macros/range_list.sql's key_list) of ``frame``'s
    first column (nulls left out), sorted; None when there are more than ``limit`` (the caller
    then keeps its join). Range ids or keys, never addresses, gathered as :func:`collect_lists`
    gathers a list: at most ``RAW_ROWS_PER_LIST`` x ``limit`` + 1 rows reach the driver."""
    return _gathered_lists([frame], limits=[limit])[0]


def _bounded_list(values: Sequence[Any], limit: int) -> list[Any] | None:
    """A list's distinct values as collected (at most ``limit`` + 1): None when over ``limit``,
    else sorted without the null."""
    if len(values) > limit:
        return None
    return sorted(value for value in values if value is not None)


def with_range_lists(
    spark: "SparkSession",
    code: str,
    *,
    limit: int = RANGE_LIST_LIMIT,
    sent: "Callable[[int], None] | None" = None,
    views: list[str] | None = None,
) -> tuple[str, int]:
    """``code`` with each range-list subquery (macros/range_list.sql) replaced by the ids it
    selects, as literals, when they are at most ``limit``, and each key list by a query of its
    keys held in the driver (:func:`key_list_view`) when they are at most the list's own limit
    (none, either way: a null, which selects no row); and how many lists were replaced.
    A longer list keeps its subquery: the same ranges, only without the Parquet reader's
    skipping. A longer list of ranges a join selects already (skip_to_ranges) becomes ``true``
    instead: the join gives the same rows, where the subquery would be planned as a second join
    shuffling every entry. Each subquery reads tables this build made already (the node's
    parents) and returns range ids or keys, never addresses.

    Every list of the statement comes from one Spark query (:func:`collect_lists`), and a
    subquery written twice is run once: each query costs its planning and jobs whatever it
    returns (the lifecycle pass over every entry has two key lists; its staged entries look
    up the same object keys as its committed ones). ``views``: the names of the key lists'
    views made are appended to it (their maker drops them: :meth:`ModelRunner.drop_key_lists`)."""
    from lakewarden.snapshot import sql_string

    lists = dict.fromkeys(
        [(match.group("query"), limit) for pattern in (JOINED_RANGE_LIST, RANGE_LIST) for match in pattern.finditer(code)]
        + [(match.group("query"), int(match.group("limit"))) for match in KEY_LIST.finditer(code)]
    )
    if not lists:
        return code, 0
    queries = [query for query, _ in lists]
    limits = [most for _, most in lists]
    found = dict(zip(lists, collect_lists(spark, queries, limits=limits, sent=sent), strict=True))
    replaced = 0

    def ids_of(query: str) -> str | None:
        nonlocal replaced
        ids = found[query, limit]
        if ids is None:
            return None
        replaced += 1
        if not ids:
            return "null"
        return ", ".join(str(int(value)) if isinstance(value, int) else sql_string(value) for value in ids)

    def joined(match: "re.Match[str]") -> str:
        ids = ids_of(match.group("query"))
        return "true" if ids is None else f"{match.group('column')} in ({ids})"

    def literal(match: "re.Match[str]") -> str:
        ids = ids_of(match.group("query"))
        return match.group(0) if ids is None else ids

    # one view a list: a subquery written twice (the pass's staged entries look up the object
    # keys its committed ones do) reads the same view, not a second copy of the same keys
    made: dict[tuple[str, int], str] = {}

    def keys(match: "re.Match[str]") -> str:
        nonlocal replaced
        key = (match.group("query"), int(match.group("limit")))
        values = found[key]
        if values is None:
            return match.group(0)
        replaced += 1
        if not values:
            return "null"
        if key not in made:
            made[key] = key_list_view(spark, values, views=views)
        return made[key]

    return KEY_LIST.sub(keys, RANGE_LIST.sub(literal, JOINED_RANGE_LIST.sub(joined, code))), replaced


#: numbers the key lists' views (key_list_view) of a process
_KEY_LIST_VIEWS = itertools.count()


def key_list_view(spark: "SparkSession", keys: Sequence[int], *, views: list[str] | None = None) -> str:
    """A query selecting ``keys`` (64-bit keys: macros/range_list.sql's key_list) from a
    temporary view of a local relation holding them, made from Arrow in the driver: no job, no
    text for Spark to parse. A statement testing a column against it is planned as a broadcast
    semi join of the local rows, built in the driver. Range ids go in as literals instead, for
    the Parquet reader to skip row groups by; keys are hashes, which no row group's statistics
    can rule out. Measured against the same keys as bigint literals, alternated, 2 cores:
    uncommitted GC's check of objects written since (8,450 keys, 7.6M kept entry keys) 1.6-1.75 s
    against 2.15-2.35 s; lifecycle's pass over every entry at 1M (~1,300 keys in each of two
    lists) 1.55-1.85 s against 1.7-2.3 s. Planning the literals cost the difference: parsing
    8,450 of them alone took 0.2-0.7 s. Each view is a few kilobytes; its name is appended to
    ``views`` when given (a run's runner drops its views when the run ends), else it lasts as
    long as the session."""
    import pyarrow as pa

    name = f"lakewarden_key_list_{next(_KEY_LIST_VIEWS)}"
    spark.createDataFrame(pa.table({"key": pa.array(keys, pa.int64())})).createOrReplaceTempView(name)
    if views is not None:
        views.append(name)
    return f"select key from {name}"


def collect_lists(
    spark: "SparkSession",
    queries: Sequence[str],
    *,
    limit: int = RANGE_LIST_LIMIT,
    limits: Sequence[int] | None = None,
    sent: "Callable[[int], None] | None" = None,
) -> list[list[Any] | None]:
    """:func:`collect_range_ids` of each query (one id or key column each), in one Spark query
    (a second when the first is cut short, below): the lists side by side in a union, values
    carried as strings and given back in the column's own type. ``limits``: each query's own
    limit (default ``limit`` for all). At most ``RAW_ROWS_PER_LIST`` x the sum of the limits
    rows reach the driver, range ids or keys, never addresses.
    ``sent``: called with 1 for each Spark query sent (the runner counts a run's queries).

    The union is first taken as the subqueries give it, under a limit: a plan of scans and
    no shuffle, its values made distinct here. A list's subquery usually reads a few thousand
    rows the runner holds in memory (lifecycle's newly expired entries), and a distinct in
    Spark cost that query a shuffle and adaptive execution's stages: four jobs, 0.35-0.43 s
    of a 1M-entry incremental run's critical path. When more rows come than that limit (a
    subquery repeating its values, or a list far over ``limit``), a list holding more than
    ``limit`` values among them is over it whatever was left out, and the others are asked of
    Spark again, each distinct and limited, as before."""
    frames = [spark.sql(f"select * from ({query}) range_list") for query in queries]
    return _gathered_lists(frames, limits=[limit] * len(frames) if limits is None else limits, sent=sent)


def _gathered_lists(
    frames: Sequence["DataFrame"], *, limits: Sequence[int], sent: "Callable[[int], None] | None" = None
) -> list[list[Any] | None]:
    """Each frame's first column as a bounded list, at most its limit long (:func:`collect_lists`
    says how)."""
    from functools import reduce

    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegralType

    def counted(_queries: int) -> None:
        pass

    count = sent or counted
    integral = [isinstance(frame.schema.fields[0].dataType, IntegralType) for frame in frames]

    def union(numbers: Sequence[int], *, distinct: bool) -> "DataFrame":
        parts = []
        for number in numbers:
            frame = frames[number]
            column = frame.select(F.col(frame.columns[0]).alias("value"))
            if distinct:
                column = column.distinct().limit(limits[number] + 1)
            parts.append(column.select(F.lit(number).alias("list"), F.col("value").cast("string").alias("value")))
        return reduce(lambda left, right: left.unionAll(right), parts)

    def distinct_values(rows: Sequence[Any], values: list[dict[Any, None]]) -> None:
        for row in rows:
            values[row["list"]][row["value"]] = None  # distinct, in the order found

    numbers = range(len(frames))
    values: list[dict[Any, None]] = [{} for _ in frames]
    most = RAW_ROWS_PER_LIST * sum(limits)
    rows = union(numbers, distinct=False).limit(most + 1).collect()
    count(1)
    distinct_values(rows, values)
    if len(rows) > most:
        # the limit may have cut lists short: one holding more values than its limit already is
        # over it whatever was cut; the others are asked of Spark again, distinct
        cut = [number for number in numbers if len(values[number]) <= limits[number]]
        if cut:
            for number in cut:
                values[number] = {}
            distinct_values(union(cut, distinct=True).collect(), values)
            count(1)
    return [
        _bounded_list([None if value is None else int(value) for value in found] if is_integral else list(found), most_values)
        for found, is_integral, most_values in zip(values, integral, limits, strict=True)
    ]


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "desc", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def describe_nodes(nodes: Sequence[CompiledNode]) -> str:
    """The nodes as JSON lines (name, type, materialization): ``lakewarden -v`` logs them."""
    return "\n".join(json.dumps({"node": n.name, "type": n.resource_type, "materialized": n.materialized}) for n in nodes)
