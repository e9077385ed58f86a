"""``report.html``: one self-contained page per report directory (CONTRACT section 4).

For a person deciding whether to sweep: the run's summary; marked objects and bytes by
top-level prefix, by branch and by rule (lifecycle) or reason (GC); ages of marked vs kept
objects; the largest marked objects and why; marked bytes over earlier runs (the state dir's
run history); after a sweep, deleted/failed with reasons.

The page is built only from what the report directory holds (``summary.json``,
``addresses.csv``, ``sweep/outcomes.csv``), the snapshot directory the summary names (read with
pyarrow, streamed) and the state dir's ``history/runs.jsonl``. Plots are matplotlib SVG inlined
in the page; the page has no script and loads nothing. Everything is aggregated while streaming:
the only per-address memory is the set of marked addresses used to attribute them to branches,
and that step is skipped (and the page says so) above ``MAX_ATTRIBUTED`` marked addresses.

Writing the page must never fail a run: ``write_report_html`` logs and returns None on error.
"""

from __future__ import annotations

import csv
import heapq
import html
import io
import json
import logging
import os
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from lakewarden.errors import error_line
from lakewarden.progress import human_bytes

log = logging.getLogger(__name__)

REPORT_HTML = "report.html"
HISTORY = Path("history") / "runs.jsonl"
TOP_LARGEST = 20
TOP_GROUPS = 15
#: Above this many marked addresses the branch attribution (which needs the marked set in memory)
#: and the kept-age histogram are skipped; everything else is streamed and always shown.
MAX_ATTRIBUTED = 500_000
#: At most this many distinct kept addresses are counted for the kept-age histogram.
MAX_KEPT = 2_000_000
AGE_BINS_DAYS = (0, 1, 7, 14, 30, 60, 90, 180, 365, 730)

csv.field_size_limit(1 << 30)


def write_report_html(report_dir: str | os.PathLike[str], state_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """(Re)write ``report_dir/report.html`` from what the directory holds; never raises.

    ``state_dir`` locates the run history for the trend plot; by default the one the summary
    records. Returns the page's path, or None when it could not be written (logged)."""
    try:
        directory = Path(report_dir)
        summary = json.loads((directory / "summary.json").read_text(encoding="utf-8"))
        state = Path(state_dir) if state_dir else (Path(summary["state_dir"]) if summary.get("state_dir") else None)
        page = render(directory, summary, state)
        target = directory / REPORT_HTML
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{REPORT_HTML}.")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(page)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
        return target
    except Exception as exc:  # noqa: BLE001 - the page is a view; the run's outcome is not its business
        log.warning("report.html not written in %s: %s", report_dir, error_line(exc))
        log.debug("report.html failure", exc_info=True)
        return None


# --------------------------------------------------------------------------------------------
# aggregation


@dataclass
class Group:
    objects: int = 0
    bytes: int = 0

    def add(self, size: int) -> None:
        self.objects += 1
        self.bytes += size


@dataclass
class Marked:
    """What ``addresses.csv`` says, aggregated while streaming it."""

    total: Group = field(default_factory=Group)
    by_prefix: dict[str, Group] = field(default_factory=lambda: defaultdict(Group))
    by_reason: dict[str, Group] = field(default_factory=lambda: defaultdict(Group))
    by_branch: dict[str, Group] = field(default_factory=lambda: defaultdict(Group))
    ages: Counter = field(default_factory=Counter)
    largest: list[tuple[int, int, dict[str, str]]] = field(default_factory=list)
    branches_note: str = ""
    kept_ages: Counter = field(default_factory=Counter)
    kept_note: str = ""


def reasons_of(job: str, row: dict[str, str]) -> list[str]:
    """Why one marked address is marked, in the words of its job."""
    if job == "lifecycle":
        return [f"rule {rule}" for rule in (row.get("matched_rules") or "").split(";") if rule] or ["rule (unrecorded)"]
    if job == "gc-uncommitted":
        source = row.get("candidate_source") or "listing"
        return [f"no commit or staged entry references it ({source})"]
    if job == "gc-committed":
        return ["only expired commits reference it"]
    return [job]


def logical_path(row: dict[str, str]) -> str:
    return (row.get("example_path") or row.get("paths") or "").split(";")[0]


def top_prefix(row: dict[str, str]) -> str:
    """The top-level prefix of the object's logical path (its physical address when it has none)."""
    path = logical_path(row) or row.get("address") or ""
    head, slash, _ = path.lstrip("/").partition("/")
    return f"{head}/" if slash else "(root)"


def age_bin(days: float) -> int:
    index = 0
    for i, lower in enumerate(AGE_BINS_DAYS):
        if days >= lower:
            index = i
    return index


def age_days(value: Any, now: datetime | None) -> float | None:
    from lakewarden.snapshot_scan import timestamp

    try:
        moment = timestamp(value)
    except ValueError:
        return None
    if moment is None or now is None:
        return None
    return max(0.0, (now - moment).total_seconds() / 86400)


def read_csv(path: Path) -> Iterator[dict[str, str]]:
    if not path.is_file():
        return
    with open(path, newline="", encoding="utf-8") as handle:
        yield from csv.DictReader(handle)


def aggregate_marked(directory: Path, summary: dict[str, Any]) -> Marked:
    from lakewarden.snapshot_scan import timestamp

    job = str(summary.get("job") or "")
    now = timestamp(summary.get("now"))
    marked = Marked()
    for order, row in enumerate(read_csv(directory / "addresses.csv")):
        size = int(row.get("size_bytes") or 0)
        marked.total.add(size)
        marked.by_prefix[top_prefix(row)].add(size)
        for reason in reasons_of(job, row):
            marked.by_reason[reason].add(size)
        days = age_days(row.get("last_modified_at"), now)
        if days is not None:
            marked.ages[age_bin(days)] += 1
        entry = (size, -order, {"address": row.get("address", ""), "path": logical_path(row), "reason": "; ".join(reasons_of(job, row)), "size": str(size)})
        if len(marked.largest) < TOP_LARGEST:
            heapq.heappush(marked.largest, entry)
        else:
            heapq.heappushpop(marked.largest, entry)
    marked.largest.sort(reverse=True)
    return marked


def attribute_to_snapshot(marked: Marked, directory: Path, summary: dict[str, Any]) -> None:
    """Marked objects by branch, and the ages of kept (committed, unmarked) objects, from the
    snapshot the run read. Skipped, with a note, when the snapshot is gone or too big."""
    from lakewarden.snapshot_scan import CommitIndex, batches, timestamp

    snapshot = summary.get("snapshot_dir")
    if not snapshot or not Path(snapshot).is_dir():
        marked.branches_note = marked.kept_note = "the snapshot this run read is not recorded or no longer exists"
        return
    if marked.total.objects > MAX_ATTRIBUTED:
        marked.branches_note = marked.kept_note = (
            f"skipped: more than {MAX_ATTRIBUTED:,} marked objects (use lakewarden explain for single objects)"
        )
        return
    now = timestamp(summary.get("now"))
    sizes: dict[str, int] = {}
    for row in read_csv(directory / "addresses.csv"):
        sizes[row.get("address", "")] = int(row.get("size_bytes") or 0)
    index = CommitIndex(Path(snapshot))
    range_branches = index.range_branches()
    branches_of_marked: dict[str, set[str]] = defaultdict(set)
    kept_seen: set[str] = set()
    for data in batches(Path(snapshot), "ranges", ["range_id", "address", "last_modified"]):
        for range_id, address, modified in zip(data["range_id"], data["address"], data["last_modified"]):
            if address in sizes:
                branches_of_marked[address] |= range_branches.get(range_id, frozenset())
            elif address not in kept_seen and len(kept_seen) < MAX_KEPT:
                kept_seen.add(address)
                days = age_days(modified, now)
                if days is not None:
                    marked.kept_ages[age_bin(days)] += 1
    if len(kept_seen) >= MAX_KEPT:
        marked.kept_note = f"the first {MAX_KEPT:,} distinct kept objects"
    for address, size in sizes.items():
        for label in sorted(branches_of_marked.get(address) or {"(not in any commit)"}):
            marked.by_branch[label].add(size)
    marked.branches_note = "an object on several branches counts once under each"


def sweep_outcomes(directory: Path) -> tuple[Counter, Counter, dict[str, Any] | None]:
    """(objects per status, failures per reason, the sweep's summary) when a sweep ran."""
    statuses: Counter = Counter()
    failures: Counter = Counter()
    for row in read_csv(directory / "sweep" / "outcomes.csv"):
        statuses[row.get("status") or "?"] += 1
        if row.get("status") != "deleted":
            failures[row.get("reason") or "(no reason recorded)"] += 1
    sweep_summary_path = directory / "sweep" / "summary.json"
    sweep_summary = json.loads(sweep_summary_path.read_text(encoding="utf-8")) if sweep_summary_path.is_file() else None
    return statuses, failures, sweep_summary


def run_history(state: Path | None, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Earlier finished runs of the same job on the same namespace (oldest first), plus this one."""
    runs: dict[str, dict[str, Any]] = {}
    if state is not None and (state / HISTORY).is_file():
        with open(state / HISTORY, encoding="utf-8") as handle:
            for line in handle:
                try:
                    run = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if run.get("job") == summary.get("job") and run.get("storage_namespace") == summary.get("storage_namespace"):
                    runs[run.get("run_id")] = run
    runs.setdefault(summary.get("run_id"), summary)
    return sorted(runs.values(), key=lambda run: str(run.get("started_at") or ""))[-40:]


# --------------------------------------------------------------------------------------------
# plots


def _svg(figure: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    # no RDF metadata block: no date (same data, same page) and no external vocabulary URLs
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    matplotlib.rcParams["svg.fonttype"] = "path"  # glyphs as paths: no font is fetched
    matplotlib.rcParams["svg.hashsalt"] = "lakewarden"  # stable ids: same data, same page
    import matplotlib.pyplot as plt

    return plt


def bar_plot(title: str, groups: dict[str, Group]) -> str:
    plt = _pyplot()
    items = sorted(groups.items(), key=lambda item: (-item[1].bytes, item[0]))[:TOP_GROUPS]
    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 0.35 * max(3, len(items)) + 0.8), sharey=True)
    labels = [_short(name, 40) for name, _ in items][::-1]
    left.barh(labels, [g.objects for _, g in items][::-1], color="#4c72b0")
    left.set_xlabel("objects")
    unit, scale = _byte_unit(max((g.bytes for _, g in items), default=0))
    right.barh(labels, [g.bytes / scale for _, g in items][::-1], color="#dd8452")
    right.set_xlabel(unit)
    figure.suptitle(title, fontsize=11)
    return _svg(figure)


def age_plot(marked: Counter, kept: Counter) -> str:
    plt = _pyplot()
    labels = [f"{lo}-{hi}d" for lo, hi in zip(AGE_BINS_DAYS, AGE_BINS_DAYS[1:])] + [f">{AGE_BINS_DAYS[-1]}d"]
    figure, axis = plt.subplots(figsize=(9, 3))
    positions = range(len(labels))
    axis.bar([p - 0.2 for p in positions], [kept.get(i, 0) for i in positions], width=0.4, label="kept", color="#55a868")
    axis.bar([p + 0.2 for p in positions], [marked.get(i, 0) for i in positions], width=0.4, label="marked", color="#c44e52")
    axis.set_xticks(list(positions), labels)
    axis.set_ylabel("objects")
    axis.set_xlabel("age at the run's clock (last modified)")
    axis.legend()
    return _svg(figure)


def trend_plot(runs: list[dict[str, Any]]) -> str:
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(9, 3))
    labels = [str(run.get("now") or run.get("started_at") or "")[:16] for run in runs]
    unit, scale = _byte_unit(max((run.get("bytes_marked") or 0 for run in runs), default=0))
    values = [(run.get("bytes_marked") or 0) / scale for run in runs]
    axis.bar(range(len(runs)), values, color="#8172b3")
    axis.set_xticks(range(len(runs)), labels, rotation=30, ha="right", fontsize=7)
    axis.set_ylabel(f"marked {unit}")
    axis.set_xlabel("run (its --now)")
    return _svg(figure)


def _byte_unit(largest: float) -> tuple[str, float]:
    """The unit (and its size) that makes ``largest`` read as a number between 1 and 1000."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if largest >= scale:
            return unit, scale
    return "bytes", 1.0


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


# --------------------------------------------------------------------------------------------
# page


def _table(headers: list[str], rows: list[list[Any]], css: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _groups_table(groups: dict[str, Group], label: str) -> str:
    items = sorted(groups.items(), key=lambda item: (-item[1].bytes, item[0]))
    return _table([label, "objects", "bytes"], [[name, f"{g.objects:,}", human_bytes(g.bytes)] for name, g in items])


SUMMARY_FIELDS = (
    "job", "run_id", "repository_id", "storage_namespace", "dry_run", "now", "status", "success", "error",
    "num_marked", "bytes_marked", "num_deleted", "num_failed", "started_at", "finished_at",
    "commits", "active_commits", "expired_commits", "run_mode", "run_mode_reason", "potential_mode",
    "rules", "policy", "snapshot_dir",
)

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left}
th{background:#f4f4f4}td{font-variant-numeric:tabular-nums;word-break:break-all}
.verdict{padding:.6em 1em;border-radius:4px;background:#eef5ee}.verdict.bad{background:#fbeaea}
.note{color:#666;font-size:.85em}svg{max-width:100%;height:auto}
"""


def render(directory: Path, summary: dict[str, Any], state: Path | None) -> str:
    marked = aggregate_marked(directory, summary)
    try:
        attribute_to_snapshot(marked, directory, summary)
    except Exception as exc:  # noqa: BLE001 - a damaged snapshot costs this section only
        marked.branches_note = marked.kept_note = f"could not read the snapshot: {str(exc).splitlines()[0]}"
    statuses, failures, sweep_summary = sweep_outcomes(directory)
    runs = run_history(state, summary)
    job = str(summary.get("job") or "?")
    title = f"lakewarden {job} {summary.get('run_id', '')}"
    parts = [f"<h1>{html.escape(title)}</h1>"]

    ok = summary.get("success") is True
    state_text = str(summary.get("status") or ("succeeded" if ok else "not finished"))
    if summary.get("dry_run") and ok and not statuses:
        verdict = f"Dry run: {marked.total.objects:,} objects ({human_bytes(marked.total.bytes)}) would be deleted by a sweep."
    else:
        verdict = f"Status: {state_text}; {summary.get('num_deleted') or 0:,} deleted, {summary.get('num_failed') or 0:,} failed."
    if summary.get("error"):
        verdict += f" Error: {summary['error']}"
    parts.append(f'<p class="verdict{"" if ok else " bad"}">{html.escape(verdict)}</p>')

    parts.append("<h2>Summary</h2>")
    rows = []
    for key in SUMMARY_FIELDS:
        if key in summary and summary[key] is not None:
            value = summary[key]
            rows.append([key, json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value])
    parts.append(_table(["field", "value"], rows, "summary"))

    if statuses or sweep_summary:
        parts.append("<h2>Sweep</h2>")
        parts.append(_table(["outcome", "objects"], [[status, f"{n:,}"] for status, n in sorted(statuses.items())]))
        if failures:
            parts.append("<p>Failures by reason:</p>")
            parts.append(_table(["reason", "objects"], [[reason, f"{n:,}"] for reason, n in failures.most_common(TOP_GROUPS)]))

    reason_label = "rule" if job == "lifecycle" else "reason"
    if marked.total.objects:
        parts.append("<h2>Marked objects by top-level prefix</h2>")
        parts.append(bar_plot("marked by top-level prefix", marked.by_prefix))
        parts.append(_groups_table(marked.by_prefix, "prefix"))
        parts.append("<h2>Marked objects by branch</h2>")
        if marked.by_branch:
            parts.append(bar_plot("marked by branch", marked.by_branch))
            parts.append(_groups_table(marked.by_branch, "branch"))
        parts.append(f'<p class="note">{html.escape(marked.branches_note)}</p>')
        parts.append(f"<h2>Marked objects by {reason_label}</h2>")
        parts.append(bar_plot(f"marked by {reason_label}", marked.by_reason))
        parts.append(_groups_table(marked.by_reason, reason_label))
    else:
        parts.append("<h2>Marked objects</h2><p>Nothing is marked: a sweep would delete nothing.</p>")

    parts.append("<h2>Ages: marked vs kept</h2>")
    parts.append(age_plot(marked.ages, marked.kept_ages))
    kept_total = sum(marked.kept_ages.values())
    note = f"{marked.total.objects:,} marked, {kept_total:,} kept committed objects"
    if marked.kept_note:
        note += f" ({marked.kept_note})"
    parts.append(f'<p class="note">{html.escape(note)}</p>')

    if marked.largest:
        parts.append(f"<h2>Largest marked objects (top {len(marked.largest)})</h2>")
        parts.append(
            _table(
                ["address", "path", "size", "why marked"],
                [[e["address"], e["path"], human_bytes(int(e["size"])), e["reason"]] for _, _, e in marked.largest],
                "largest",
            )
        )

    parts.append("<h2>Trend: marked bytes per run</h2>")
    if len(runs) > 1:
        parts.append(trend_plot(runs))
    parts.append(
        _table(
            ["run", "clock (--now)", "marked", "bytes", "status"],
            [[r.get("run_id"), r.get("now"), f"{r.get('num_marked') or 0:,}", human_bytes(r.get("bytes_marked") or 0), r.get("status")] for r in runs],
        )
    )
    if state is None:
        parts.append('<p class="note">No state dir recorded: earlier runs are not shown.</p>')

    parts.append(f'<p class="note">Generated {html.escape(datetime.now().astimezone().isoformat(timespec="seconds"))} from {html.escape(str(directory))}. '
                 "See addresses.csv for every marked object, and <code>lakewarden explain --report DIR ADDRESS</code> for why.</p>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        + "\n".join(parts)
        + "</body></html>\n"
    )


def record_run(state: Path, summary: dict[str, Any]) -> None:
    """Append one finished run to ``STATE/history/runs.jsonl`` (the trend's source)."""
    fields = ("run_id", "job", "repository_id", "storage_namespace", "dry_run", "now", "started_at", "finished_at",
              "num_marked", "bytes_marked", "num_deleted", "num_failed", "success", "status")
    path = state / HISTORY
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({key: summary.get(key) for key in fields}, default=str, sort_keys=True) + "\n")
