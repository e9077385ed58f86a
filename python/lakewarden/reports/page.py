"""``report.html``: one self-contained page per report directory (docs/contract.md §4).

For a person deciding whether to sweep. Its first screen answers the first questions: how many
objects and bytes would go (or went), why (the top reasons or rules), and what changed since
the previous run of the same job on the same namespace. Below: the run's summary in words;
after a sweep, deleted/failed with reasons; marked objects and bytes by top-level prefix, by
branch and by reason or rule; ages of marked vs kept objects; the largest marked objects and
why; marked bytes over earlier runs.

The page is drawn from aggregates only, so (re)drawing it costs milliseconds whatever the run's
size (issue 18): ``summary.json``; ``figures.json``, which the job computed with Spark in its
mark (:mod:`lakewarden.reports.figures`); the sweep's outcome counts in ``sweep/summary.json``;
and the state dir's ``history/runs.jsonl`` (:mod:`~lakewarden.reports.history`). It never
reads ``addresses.csv`` or the snapshot. A report without ``figures.json`` (written by an older
lakewarden, or a run that failed before it marked) shows its summary, sweep and trend, and says
its figures are not available. The one fallback that reads per-object data is for a finished
sweep of an older lakewarden, whose ``sweep/summary.json`` has no counts: its ``outcomes.csv``
is streamed once.

Charts are hand-written inline SVG (no script; a Content-Security-Policy forbids loading
anything). Writing the page must never fail a run: ``write_report_html`` logs and returns None.
"""

from __future__ import annotations

import csv
import html
import json
import logging
import os
import tempfile
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Iterator

from lakewarden.errors import error_line
from lakewarden.reports.directory import OUTCOMES_CSV, REPORT_HTML, SUMMARY, SWEEP_DIR
from lakewarden.reports.history import recorded_runs
from lakewarden.runtime.progress import human_bytes
from lakewarden.reports.figures import Figures, Group, Listing, age_bin_labels, read_figures
from lakewarden.sweep.result import OUTCOME_COUNTS, OutcomeCounts

log = logging.getLogger(__name__)

TOP_REASONS = 3
TREND_RUNS = 40
TREND_TABLE_RUNS = 10

csv.field_size_limit(1 << 30)


def write_report_html(report_dir: str | os.PathLike[str], state_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """(Re)write ``report_dir/report.html`` from what the directory holds; never raises.

    ``state_dir`` locates the run history for the trend; by default the one the summary
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
# inputs


def read_csv(path: Path) -> Iterator[dict[str, str]]:
    if not path.is_file():
        return
    with open(path, newline="", encoding="utf-8") as handle:
        yield from csv.DictReader(handle)


def sweep_outcomes(directory: Path) -> tuple["Counter[str]", "Counter[str]", dict[str, Any] | None]:
    """(objects per status, failures per reason, the sweep's summary) when a sweep ran.

    The counts come from ``sweep/summary.json`` (the sweep records them as it finishes). A
    finished sweep of an older lakewarden did not: its ``outcomes.csv`` is streamed instead. A
    sweep still running has no counts yet (the summary's running totals say how far it got)."""
    path = directory / SWEEP_DIR / SUMMARY
    sweep_summary = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    if sweep_summary is not None and isinstance(sweep_summary.get(OUTCOME_COUNTS), dict):
        counts = OutcomeCounts.from_json(sweep_summary[OUTCOME_COUNTS])
        reported: Counter[str] = Counter(counts.failures_by_reason)
        if counts.other:
            reported[f"{counts.other_reasons:,} other reasons"] += counts.other
        return counts.by_status, reported, sweep_summary
    statuses: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    if sweep_summary is None or sweep_summary.get("status") not in ("sweeping",):
        for row in read_csv(directory / SWEEP_DIR / OUTCOMES_CSV):
            statuses[row.get("status") or "?"] += 1
            if row.get("status") != "deleted":
                failures[row.get("reason") or "(no reason recorded)"] += 1
    return statuses, failures, sweep_summary


def run_history(state: Path | None, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Earlier finished runs of the same job on the same namespace (oldest first), plus this one."""
    runs: dict[Any, dict[str, Any]] = {}  # by run id (as each file has it)
    for run in recorded_runs(state, summary.get("job"), summary.get("storage_namespace")):
        runs[run.get("run_id")] = run
    runs.setdefault(summary.get("run_id"), summary)
    return sorted(runs.values(), key=lambda run: str(run.get("started_at") or ""))[-TREND_RUNS:]


def previous_run(runs: list[dict[str, Any]], run_id: Any) -> dict[str, Any] | None:
    """The latest run before ``run_id`` in ``run_history`` (which holds ``run_id``) that marked."""
    ids = [run.get("run_id") for run in runs]
    earlier = runs[: ids.index(run_id)] if run_id in ids else runs
    counted = [run for run in earlier if run.get("num_marked") is not None]
    return counted[-1] if counted else None


# --------------------------------------------------------------------------------------------
# inline SVG charts (no library: a few hundred numbers, drawn as rectangles and text)

FONT = 'font-family="system-ui,-apple-system,Segoe UI,sans-serif" font-size="12"'
COLORS = {"objects": "#4c72b0", "bytes": "#dd8452", "kept": "#55a868", "marked": "#c44e52", "trend": "#8172b3", "now": "#4b3b8f"}


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def compact(number: float) -> str:
    """``1234567`` -> ``1.2M``: axis and bar labels that stay short."""
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(number) >= scale:
            return f"{number / scale:.1f}{unit}".replace(".0" + unit, unit)
    return f"{number:.0f}" if float(number).is_integer() else f"{number:.1f}"


def _nice_max(value: float) -> float:
    """The smallest 1/2/4/8 x 10^k at or above ``value``: an axis's end, ticked in quarters."""
    if value <= 0:
        return 1.0
    scale = 10 ** len(str(int(value))) / 10 if value >= 1 else 1.0
    for step in (1, 2, 4, 8, 10):  # quarters of these read well: 0.25, 0.5, 1, 2, 2.5
        if step * scale >= value:
            return step * scale
    return 10 * scale


def _svg(width: int, height: int, label: str, body: list[str]) -> str:
    return (
        f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-label="{_esc(label)}" {FONT}>'
        + "".join(body)
        + "</svg>"
    )


def bar_chart(label: str, rows: list[tuple[str, Group]]) -> str:
    """Two horizontal bar panels side by side, objects and bytes, one row per group (largest
    bytes first, as given). Names are shortened to fit; the full name is each row's tooltip."""
    width, name_width, gap, row_height, top = 1000, 300, 30, 22, 24
    panel = (width - name_width - gap) // 2 - 10
    bar_room = panel - 70  # room for the value printed after the bar
    height = top + row_height * len(rows) + 8
    most_objects = max((g.objects for _, g in rows), default=0) or 1
    most_bytes = max((g.bytes for _, g in rows), default=0) or 1
    x_objects, x_bytes = name_width, name_width + panel + gap
    body = [
        f'<text x="{x_objects}" y="14" font-weight="bold">objects</text>',
        f'<text x="{x_bytes}" y="14" font-weight="bold">bytes</text>',
    ]
    for index, (name, group) in enumerate(rows):
        y = top + index * row_height
        tip = f"{name}: {group.objects:,} objects, {human_bytes(group.bytes)}"
        body.append(f"<g><title>{_esc(tip)}</title>")
        body.append(f'<text x="{name_width - 8}" y="{y + 14}" text-anchor="end">{_esc(_short(name, 44))}</text>')
        for x, value, most, color, text in (
            (x_objects, group.objects, most_objects, COLORS["objects"], f"{group.objects:,}"),
            (x_bytes, group.bytes, most_bytes, COLORS["bytes"], human_bytes(group.bytes)),
        ):
            length = max(1.0, bar_room * value / most) if value else 0.0
            body.append(f'<rect x="{x}" y="{y + 3}" width="{length:.1f}" height="{row_height - 6}" fill="{color}"/>')
            body.append(f'<text x="{x + length + 5:.1f}" y="{y + 14}" fill="#333">{_esc(text)}</text>')
        body.append("</g>")
    return _svg(width, height, label, body)


def age_chart(marked: list[Group], kept: list[Group]) -> str:
    """Per age bin, the share of marked objects and the share of kept objects in it (each of
    its own total, so a few thousand marked compare with a million kept); counts as tooltips."""
    labels = age_bin_labels()
    width, height, left, bottom, top = 1000, 280, 56, 46, 30
    plot_w, plot_h = width - left - 10, height - top - bottom
    marked_total = sum(g.objects for g in marked) or 1
    kept_total = sum(g.objects for g in kept) or 1
    shares = [(100 * k.objects / kept_total, 100 * m.objects / marked_total) for k, m in zip(kept, marked)]
    axis_max = _nice_max(max((max(pair) for pair in shares), default=0.0))
    body = [
        f'<rect x="{left}" y="6" width="12" height="12" fill="{COLORS["kept"]}"/><text x="{left + 16}" y="16">kept (share of {kept_total:,} kept)</text>',
        f'<rect x="{left + 260}" y="6" width="12" height="12" fill="{COLORS["marked"]}"/><text x="{left + 276}" y="16">marked (share of {marked_total:,} marked)</text>',
    ]
    for tick in range(5):
        value = axis_max * tick / 4
        y = top + plot_h - plot_h * tick / 4
        body.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        body.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{compact(value)}%</text>')
    slot = plot_w / max(1, len(labels))
    for index, label in enumerate(labels):
        x0 = left + index * slot
        for offset, share, group, name in (
            (0.15, shares[index][0], kept[index], "kept"),
            (0.5, shares[index][1], marked[index], "marked"),
        ):
            bar_h = plot_h * share / axis_max
            tip = f"{label}: {group.objects:,} {name} objects ({share:.1f}%), {human_bytes(group.bytes)}"
            body.append(
                f'<rect x="{x0 + slot * offset:.1f}" y="{top + plot_h - bar_h:.1f}" width="{slot * 0.35:.1f}" height="{bar_h:.1f}" '
                f'fill="{COLORS[name]}"><title>{_esc(tip)}</title></rect>'
            )
        body.append(f'<text x="{x0 + slot / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{_esc(label)}</text>')
    body.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle" fill="#555">age at the run\'s clock (last modified)</text>')
    return _svg(width, height, "ages of marked and kept objects", body)


def trend_chart(runs: list[dict[str, Any]], current: Any) -> str:
    """Marked bytes per run, oldest first; this run darker. Labels are the runs' clocks,
    upright so that neighbours never overlap (every k-th one when bars get narrow)."""
    width, height, left, bottom, top = 1000, 290, 70, 100, 16
    plot_w, plot_h = width - left - 10, height - top - bottom
    values = [int(run.get("bytes_marked") or 0) for run in runs]
    axis_max = _nice_max(max(values, default=0))
    clocks = [when(run.get("now") or run.get("started_at")).removesuffix(" UTC") for run in runs]
    if all(clock.endswith(" 00:00") for clock in clocks):
        clocks = [clock[:10] for clock in clocks]
    body = []
    for tick in range(5):
        value = axis_max * tick / 4
        y = top + plot_h - plot_h * tick / 4
        body.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        body.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{_esc(human_bytes(value))}</text>')
    slot = plot_w / max(1, len(runs))
    every = max(1, -(-16 // int(slot)))  # a label needs about 16 px across
    for index, (run, value, clock) in enumerate(zip(runs, values, clocks)):
        x = left + index * slot
        bar_h = plot_h * value / axis_max
        color = COLORS["now"] if run.get("run_id") == current else COLORS["trend"]
        tip = f"{run.get('run_id')} at {clock}: {int(run.get('num_marked') or 0):,} objects, {human_bytes(value)} marked; {run.get('status')}"
        body.append(
            f'<rect x="{x + slot * 0.15:.1f}" y="{top + plot_h - bar_h:.1f}" width="{slot * 0.7:.1f}" height="{bar_h:.1f}" fill="{color}">'
            f"<title>{_esc(tip)}</title></rect>"
        )
        if len(runs) <= 12:
            body.append(f'<text x="{x + slot / 2:.1f}" y="{top + plot_h - bar_h - 4:.1f}" text-anchor="middle" fill="#333">{_esc(human_bytes(value))}</text>')
        if (len(runs) - 1 - index) % every == 0:  # the newest run is always labelled
            lx, ly = x + slot / 2 + 4, top + plot_h + 8
            body.append(f'<text x="{lx:.1f}" y="{ly}" text-anchor="end" transform="rotate(-90 {lx:.1f} {ly})" font-size="11">{_esc(clock)}</text>')
    body.append(f'<text x="14" y="{top + plot_h / 2:.1f}" transform="rotate(-90 14 {top + plot_h / 2:.1f})" text-anchor="middle" fill="#555">marked bytes</text>')
    return _svg(width, height, "marked bytes per run", body)


# --------------------------------------------------------------------------------------------
# page


def _table(headers: list[str], rows: Iterable[list[Any]], css: str = "") -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_esc(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _groups_section(title: str, label: str, listing: Listing, note: str = "") -> list[str]:
    rows = listing.rows()
    parts = [f"<h2>{_esc(title)}</h2>"]
    if not rows:
        return parts + ['<p class="note">None.</p>']
    parts.append(bar_chart(title, rows))
    parts.append(_table([label, "objects", "bytes"], [[name, f"{g.objects:,}", human_bytes(g.bytes)] for name, g in rows]))
    if note:
        parts.append(f'<p class="note">{_esc(note)}</p>')
    return parts


def _days(value: Any) -> str:
    return f"{value} day" + ("" if value == 1 else "s")


def readable(key: str, value: Any) -> str:
    """A summary value in words: GC rules and lifecycle policies as sentences, other
    mappings as ``key: value`` pairs, lists comma-separated; never raw JSON."""
    if key == "rules" and isinstance(value, dict):
        parts = [f"{_days(value.get('default_retention_days'))} by default"]
        branches = value.get("branches") or {}
        items = branches.items() if isinstance(branches, dict) else ((b.get("branch_id"), b.get("retention_days")) for b in branches)
        parts += [f"branch {name}: {_days(days)}" for name, days in items]
        return "; ".join(parts)
    if key == "policy" and isinstance(value, dict):
        rules = []
        for rule_id, rule in value.items():
            text = f"rule {rule_id}: prefix {rule.get('prefix') or '(all)'}"
            text += f", {_days(rule['days'])}" if rule.get("days") is not None else ", no default days"
            for branch, days in (rule.get("branch_days") or {}).items():
                text += f", branch {branch}: {_days(days)}"
            if rule.get("enabled") is False:
                text += " (disabled)"
            rules.append(text)
        return "; ".join(rules) or "no rules"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key == "bytes_marked" and isinstance(value, int):
        return f"{human_bytes(value)} ({value:,} bytes)"
    if key in TIME_FIELDS:
        return when(value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {readable(str(k), v)}" for k, v in value.items()) or "(none)"
    if isinstance(value, list):
        return ", ".join(readable(key, v) for v in value) or "(none)"
    if isinstance(value, int):
        return f"{value:,}" if key not in ("version",) else str(value)
    return str(value)


TIME_FIELDS = ("now", "started_at", "finished_at", "swept_at")
SUMMARY_FIELDS = (
    ("repository_id", "repository"), ("storage_namespace", "storage namespace"), ("job", "job"), ("run_id", "run id"),
    ("dry_run", "dry run"), ("now", "clock (--now)"), ("status", "status"), ("marked_status", "status before the sweep"),
    ("error", "error"), ("num_marked", "objects marked"), ("bytes_marked", "bytes marked"), ("num_deleted", "objects deleted"),
    ("num_failed", "deletes failed"), ("started_at", "started"), ("finished_at", "finished"), ("swept_at", "swept"),
    ("commits", "commits"), ("active_commits", "active commits"), ("expired_commits", "expired commits"),
    ("retain_tags", "tagged commits kept"), ("rules", "GC rules"), ("policy", "lifecycle policy"),
    ("potential_mode", "potential commits"), ("run_mode", "run mode"), ("run_mode_reason", "run mode reason"),
    ("min_age_seconds", "minimum age (seconds)"), ("snapshot_dir", "snapshot"),
)

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.5em auto;max-width:1040px;color:#222;padding:0 1em}
h1{font-size:1.4em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
.sub{color:#666;margin-top:0}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td{font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
.headline{padding:.8em 1.1em;border-radius:6px;background:#eef5ee;margin:1em 0}.headline.bad{background:#fbeaea}
.headline .big{font-size:1.5em;font-weight:600;margin:0 0 .3em}.headline p{margin:.3em 0}.headline ul{margin:.2em 0 .4em 1.2em;padding:0}
.note{color:#666;font-size:.85em}svg{max-width:100%;height:auto;display:block;margin:.5em 0}
"""


def when(value: Any) -> str:
    """An RFC 3339 time as ``2026-01-02 00:00 UTC`` (the page's reader wants minutes, not micros)."""
    text = str(value or "")
    if len(text) >= 16 and text[10] == "T":
        return f"{text[:10]} {text[11:16]} UTC" if text.endswith(("Z", "+00:00")) else f"{text[:10]} {text[11:16]}{text[-6:]}"
    return text


def _signed(value: int, text: str) -> str:
    return ("+" if value > 0 else "\u2212" if value < 0 else "\u00b1") + text


def headline(summary: dict[str, Any], figures: Figures | None, statuses: "Counter[str]", runs: list[dict[str, Any]]) -> str:
    """The first screen: how much would go or went, why, what changed since the previous run."""
    ok = summary.get("success") is True
    status = str(summary.get("status") or "not finished")
    marked, marked_bytes = summary.get("num_marked"), summary.get("bytes_marked")
    swept = bool(statuses) or status in ("swept", "sweep_failed", "sweeping")
    deleted, failed = int(summary.get("num_deleted") or 0), int(summary.get("num_failed") or 0)
    lines: list[str] = []
    if marked is None:
        big = "The run failed before it marked anything." if status == "failed" else f"The run has not marked yet ({status})."
    elif status == "sweeping":
        big = f"Sweeping: {deleted:,} of {marked:,} objects deleted so far."
    elif swept:
        big = f"Deleted {deleted:,} of {marked:,} marked objects ({human_bytes(marked_bytes or 0)} marked); {failed:,} not deleted."
    elif summary.get("dry_run"):
        big = f"A sweep would delete {marked:,} objects ({human_bytes(marked_bytes or 0)})."
    else:
        big = f"Marked {marked:,} objects ({human_bytes(marked_bytes or 0)}) for deletion; {status}."
    if summary.get("dry_run") and swept:
        swept_at = summary.get("swept_at") or summary.get("sweep_started_at") or ""
        state = "is being swept" if status == "sweeping" else f"was swept afterwards{' on ' + when(swept_at) if swept_at else ''}"
        lines.append(f"This was a dry run; it {state} (lakewarden sweep): {deleted:,} deleted, {failed:,} not deleted.")
    if summary.get("error"):
        lines.append(f"Error: {summary['error']}")
    reasons = ""
    if figures is not None and figures.total.objects:
        label = "rules" if summary.get("job") == "lifecycle" else "reasons"
        top = figures.by_reason.rows()[:TOP_REASONS]
        reasons = f"<p>Why (top {label}):</p><ul>" + "".join(
            f"<li>{_esc(name)}: {g.objects:,} objects, {_esc(human_bytes(g.bytes))}</li>" for name, g in top
        ) + "</ul>"
    before = previous_run(runs, summary.get("run_id"))
    if marked is None:
        change = ""
    elif before is None:
        change = "No earlier run of this job on this namespace is recorded: nothing to compare with."
    else:
        d_objects = int(marked) - int(before.get("num_marked") or 0)
        d_bytes = int(marked_bytes or 0) - int(before.get("bytes_marked") or 0)
        change = (
            f"Since the previous run ({before.get('run_id')}, clock {when(before.get('now'))}): "
            f"{_signed(d_objects, f'{abs(d_objects):,}')} objects, {_signed(d_bytes, human_bytes(abs(d_bytes)))} marked "
            f"(then {int(before.get('num_marked') or 0):,} objects, {human_bytes(int(before.get('bytes_marked') or 0))})."
        )
    bad = not ok and status not in ("sweeping",)
    return (
        f'<div class="headline{" bad" if bad else ""}"><p class="big">{_esc(big)}</p>'
        + "".join(f"<p>{_esc(line)}</p>" for line in lines)
        + reasons
        + (f"<p>{_esc(change)}</p>" if change else "")
        + "</div>"
    )


def render(directory: Path, summary: dict[str, Any], state: Path | None) -> str:
    figures = read_figures(directory)
    statuses, failures, sweep_summary = sweep_outcomes(directory)
    runs = run_history(state, summary)
    job = str(summary.get("job") or "?")
    title = f"lakewarden {job}: {summary.get('repository_id') or ''}"
    parts = [f"<h1>{_esc(title)}</h1>", f'<p class="sub">run {_esc(summary.get("run_id", ""))}, clock {_esc(when(summary.get("now")))}</p>']
    parts.append(headline(summary, figures, statuses, runs))

    if statuses or sweep_summary:
        parts.append("<h2>Sweep</h2>")
        if statuses:
            parts.append(_table(["outcome", "objects"], [[status, f"{n:,}"] for status, n in sorted(statuses.items())]))
        else:
            parts.append(f'<p>The sweep is running: {int(summary.get("num_deleted") or 0):,} deleted so far.</p>')
        if failures:
            parts.append("<p>Not deleted, by reason:</p>")
            parts.append(_table(["reason", "objects"], [[reason, f"{n:,}"] for reason, n in failures.most_common()]))

    reason_label = "rule" if job == "lifecycle" else "reason"
    if figures is None:
        parts.append("<h2>Marked objects</h2>")
        parts.append(
            '<p class="note">Figures are not available: this report has no figures.json (the run failed before it marked, '
            "computing them failed (see the run's log), or an older lakewarden wrote the report). "
            "addresses.csv lists every marked object.</p>"
        )
    elif not figures.total.objects:
        parts.append("<h2>Marked objects</h2><p>Nothing is marked: a sweep would delete nothing.</p>")
    else:
        parts += _groups_section(f"Marked objects by {reason_label}", reason_label, figures.by_reason)
        parts += _groups_section("Marked objects by top-level prefix", "prefix", figures.by_prefix)
        parts += _groups_section("Marked objects by branch", "branch", figures.by_branch, figures.branch_note)
    if figures is not None:
        parts.append("<h2>Ages: marked vs kept</h2>")
        parts.append(age_chart(figures.ages_marked, figures.ages_kept))
        parts.append(
            _table(
                ["age", "marked objects", "marked bytes", "kept objects", "kept bytes"],
                [[label, f"{m.objects:,}", human_bytes(m.bytes), f"{k.objects:,}", human_bytes(k.bytes)]
                 for label, m, k in zip(age_bin_labels(), figures.ages_marked, figures.ages_kept)],
            )
        )
        parts.append(f'<p class="note">{_esc(figures.kept_note)}; objects without a recorded time are not counted.</p>')
        if figures.largest:
            parts.append(f"<h2>Largest marked objects (top {len(figures.largest)})</h2>")
            parts.append(
                _table(
                    ["address", "path", "size", "why marked"],
                    [[e.get("address"), e.get("path"), human_bytes(int(e.get("size_bytes") or 0)), "; ".join(e.get("reasons") or [])]
                     for e in figures.largest],
                    "largest",
                )
            )

    parts.append("<h2>Trend: marked bytes per run</h2>")
    if len(runs) > 1:
        parts.append(trend_chart(runs, summary.get("run_id")))
    recent = runs[::-1][:TREND_TABLE_RUNS]
    parts.append(
        _table(
            ["run", "clock (--now)", "marked", "bytes", "status"],
            [[r.get("run_id"), when(r.get("now")), f"{r.get('num_marked') or 0:,}", human_bytes(r.get("bytes_marked") or 0), r.get("status")] for r in recent],
        )
    )
    if len(runs) > len(recent):
        parts.append(f'<p class="note">The {len(recent)} most recent of the {len(runs)} runs charted, newest first.</p>')
    if state is None:
        parts.append('<p class="note">No state dir recorded: earlier runs are not shown.</p>')

    parts.append("<h2>Summary</h2>")
    rows = [[label, readable(key, summary[key])] for key, label in SUMMARY_FIELDS if summary.get(key) is not None]
    parts.append(_table(["field", "value"], rows, "summary"))

    parts.append(f'<p class="note">Generated {_esc(datetime.now().astimezone().isoformat(timespec="seconds"))} from {_esc(directory)}. '
                 "See addresses.csv for every marked object, and <code>lakewarden explain --report DIR ADDRESS</code> for why.</p>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{_esc(title)}</title><style>{STYLE}</style></head><body>"
        + "\n".join(parts)
        + "</body></html>\n"
    )
