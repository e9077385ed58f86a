"""``report.html`` (docs/contract.md §4): written by every job run and rewritten by the sweep,
drawn from aggregates only (figures.json, the sweep's counts, the run history), its figures agree
with addresses.csv and the snapshot, its first screen answers how much, why and what changed,
and it renders in a real headless Chromium without a console error, without a single request
leaving the page and without overlapping labels."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import timedelta
from pathlib import Path

import pytest

from lakewarden.cli import main
from lakewarden.reports.figures import FIGURES, NOT_IN_COMMIT, Figures, Group, read_figures
from lakewarden.reports.directory import REPORT_HTML
from lakewarden.reports.page import write_report_html
from lakewarden.sample import SampleConfig, SampleRepository, generate
from lakewarden.snapshot.scan import CommitIndex, batches
from lakewarden.sweep.result import OUTCOME_COUNTS
from report_files import address_rows, summary as summary_of

pytestmark = pytest.mark.spark

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
RULES = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 14}]}
POLICY = {"logs": {"prefix": "logs/", "days": 10, "enabled": True}}


def stamp(moment) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def runs(spark, test_state_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two committed GC dry runs (a trend), a lifecycle and an uncommitted GC dry run, and a
    sweep of the second GC run."""
    base = tmp_path_factory.mktemp("report-html")
    sample: SampleRepository = generate(base / "sample", SampleConfig(seed=5, entries=900))
    (base / "rules.json").write_text(json.dumps(RULES))
    (base / "policy.json").write_text(json.dumps(POLICY))
    common = ["--snapshot", str(sample.snapshot_dir), "--state", str(test_state_dir), "--dry-run"]
    reports = {"gc-early": base / "gc-early", "gc": base / "gc", "lifecycle": base / "lifecycle", "uncommitted": base / "uncommitted"}
    early, late = sample.end + timedelta(days=2), sample.end + timedelta(days=9)
    assert main(["gc", "committed", *common, "--rules", str(base / "rules.json"), "--now", stamp(early), "--report", str(reports["gc-early"])]) == 0
    assert main(["gc", "committed", *common, "--rules", str(base / "rules.json"), "--now", stamp(late), "--report", str(reports["gc"])]) == 0
    assert main(["lifecycle", *common, "--policy", str(base / "policy.json"), "--now", stamp(late), "--report", str(reports["lifecycle"])]) == 0
    assert main(["gc", "uncommitted", *common, "--min-age", "1h", "--now", stamp(late), "--report", str(reports["uncommitted"])]) == 0
    for report in reports.values():
        assert (report / REPORT_HTML).is_file(), f"the job did not write {report / REPORT_HTML}"
        assert (report / FIGURES).is_file(), f"the job did not write {report / FIGURES}"
    reports["before-sweep"] = base / "gc-before-sweep.html"
    reports["before-sweep"].write_bytes((reports["gc"] / REPORT_HTML).read_bytes())
    assert main(["sweep", "--report", str(reports["gc"]), "--state", str(test_state_dir)]) == 0
    reports["sample"] = sample.snapshot_dir
    return reports


def total_of(figures_rows: list[tuple[str, Group]]) -> Group:
    return Group(sum(g.objects for _, g in figures_rows), sum(g.bytes for _, g in figures_rows))


def branches_by_reading_the_snapshot(report: Path, snapshot: Path) -> dict[str, Group]:
    """The oracle for by-branch: a marked address counts once under each branch reaching a
    commit that lists a range holding it, read from the snapshot with pyarrow (as explain does)."""
    sizes = {row["address"]: int(row["size_bytes"]) for row in address_rows(report)}
    range_branches = CommitIndex(snapshot).range_branches()
    found: dict[str, set[str]] = defaultdict(set)
    for data in batches(snapshot, "ranges", ["range_id", "address"]):
        for range_id, address in zip(data["range_id"], data["address"]):
            if address in sizes:
                found[address] |= range_branches.get(range_id, frozenset())
    out: dict[str, Group] = defaultdict(Group)
    for address, size in sizes.items():
        for label in found.get(address) or {NOT_IN_COMMIT}:
            out[label].add(1, size)
    return dict(out)


@pytest.mark.parametrize("name", ["gc", "lifecycle", "uncommitted"])
def test_figures_agree_with_the_report_and_the_snapshot(runs: dict[str, Path], name: str) -> None:
    report = runs[name]
    summary = summary_of(report)
    figures = read_figures(report)
    assert isinstance(figures, Figures)
    rows = address_rows(report)
    assert summary["num_marked"] > 0 and len(rows) == summary["num_marked"]
    total = Group(len(rows), sum(int(row["size_bytes"]) for row in rows))
    assert figures.total == total == Group(summary["num_marked"], summary["bytes_marked"])
    assert total_of(figures.by_prefix.rows()) == total
    assert sum(g.objects for g in figures.ages_marked) == sum(1 for row in rows if row["last_modified_at"])
    assert figures.largest[0]["size_bytes"] == max(int(row["size_bytes"]) for row in rows)
    assert len(figures.largest) == min(20, len(rows))
    if name == "lifecycle":
        rules = Counter(rule for row in rows for rule in row["matched_rules"].split(";"))
        assert {f"rule {r}": n for r, n in rules.items()} == {k: g.objects for k, g in figures.by_reason.groups.items()}
    else:
        assert total_of(figures.by_reason.rows()) == total  # one reason per object
    if name == "uncommitted":  # what no commit references is on no branch
        assert figures.by_branch.groups == {NOT_IN_COMMIT: total}
    else:
        assert figures.by_branch.groups == branches_by_reading_the_snapshot(report, runs["sample"])
    assert sum(g.objects for g in figures.ages_kept) > 0


def test_page_follows_the_run_then_the_sweep(runs: dict[str, Path]) -> None:
    before = runs["before-sweep"].read_text()
    after = (runs["gc"] / REPORT_HTML).read_text()
    summary = summary_of(runs["gc"])
    assert f"A sweep would delete {summary['num_marked']:,} objects" in before and "<h2>Sweep</h2>" not in before
    assert summary["status"] == "swept" and summary["num_deleted"] == summary["num_marked"]
    assert "<h2>Sweep</h2>" in after and f"<td>deleted</td><td>{summary['num_deleted']:,}</td>" in after
    assert f"Deleted {summary['num_deleted']:,} of {summary['num_marked']:,} marked objects" in after
    assert "This was a dry run; it was swept afterwards on " in after  # said plainly
    # the first screen says why and what changed since the previous run
    early = summary_of(runs["gc-early"])
    assert "Why (top reasons):" in after and "only expired commits reference it" in after
    assert f"Since the previous run ({early['run_id']}" in after
    delta = summary["num_marked"] - early["num_marked"]
    assert f"{'+' if delta > 0 else chr(0x2212) if delta < 0 else chr(0xb1)}{abs(delta):,} objects" in after
    # the trend lists both committed GC runs of this namespace, the earlier one first
    trend = after[after.index("Trend: marked bytes per run") :]
    assert early["run_id"] in trend and summary["run_id"] in trend and trend.index(early["run_id"]) < trend.index(summary["run_id"])
    for page in (before, after, (runs["lifecycle"] / REPORT_HTML).read_text(), (runs["uncommitted"] / REPORT_HTML).read_text()):
        assert "http://" not in page and "https://" not in page
        assert "<script" not in page and page.count("<svg") >= 4
    # the sweep's counts are in its summary: redrawing never reads outcomes.csv
    counts = summary_of(runs["gc"] / "sweep")[OUTCOME_COUNTS]
    assert counts["by_status"] == {"deleted": summary["num_deleted"]} and counts["failures_by_reason"] == {}


def test_summary_is_read_as_words(runs: dict[str, Path]) -> None:
    gc = (runs["gc"] / REPORT_HTML).read_text()
    lifecycle = (runs["lifecycle"] / REPORT_HTML).read_text()
    assert "<td>GC rules</td><td>7 days by default; branch main: 14 days</td>" in gc
    assert "<td>lifecycle policy</td><td>rule logs: prefix logs/, 10 days</td>" in lifecycle
    summary = gc[gc.index("<h2>Summary</h2>") :]
    assert "{" not in summary and "[" not in summary  # no JSON dumped


def test_page_is_redrawn_from_aggregates_alone(runs: dict[str, Path], tmp_path: Path) -> None:
    """Without addresses.csv, outcomes.csv or the snapshot the page is the same, and drawing it
    imports no plotting library."""
    copy = tmp_path / "report"
    shutil.copytree(runs["gc"], copy)
    (copy / "addresses.csv").unlink()
    (copy / "sweep" / "outcomes.csv").unlink()
    summary = summary_of(copy)
    summary["snapshot_dir"] = str(tmp_path / "gone")
    (copy / "summary.json").write_text(json.dumps(summary))
    script = (
        "import sys; from lakewarden.reports.page import write_report_html; "
        f"assert write_report_html({str(copy)!r}) is not None; print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'pyspark', 'pyarrow')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    page, original = (copy / REPORT_HTML).read_text(), (runs["gc"] / REPORT_HTML).read_text()
    figures = read_figures(copy)
    assert figures is not None
    for name, group in figures.by_branch.rows():
        assert f"<td>{name}</td><td>{group.objects:,}</td>" in page and f"<td>{name}</td><td>{group.objects:,}</td>" in original
    assert f"<td>deleted</td><td>{summary['num_deleted']:,}</td>" in page


def test_older_report_directories_still_get_a_page(runs: dict[str, Path], tmp_path: Path) -> None:
    """No figures.json, and a sweep summary without counts: the page says the figures are not
    available and counts the sweep from outcomes.csv."""
    copy = tmp_path / "report"
    shutil.copytree(runs["gc"], copy)
    (copy / FIGURES).unlink()
    sweep_summary = summary_of(copy / "sweep")
    del sweep_summary[OUTCOME_COUNTS]
    (copy / "sweep" / "summary.json").write_text(json.dumps(sweep_summary))
    assert write_report_html(copy) is not None
    page = (copy / REPORT_HTML).read_text()
    assert "Figures are not available" in page and "Marked objects by branch" not in page
    assert f"<td>deleted</td><td>{summary_of(copy)['num_deleted']:,}</td>" in page


def test_writing_the_page_never_raises(tmp_path: Path, caplog) -> None:
    (tmp_path / "summary.json").write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="lakewarden.reports.page"):
        assert write_report_html(tmp_path) is None
    assert "report.html not written" in caplog.text and not (tmp_path / REPORT_HTML).exists()


#: pairs of <text> boxes of one chart that overlap (labels drawn over each other)
OVERLAPS_JS = """() => {
  const found = [];
  for (const svg of document.querySelectorAll('svg')) {
    const boxes = [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [ta, a] = boxes[i], [tb, b] = boxes[j];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) found.push(ta + ' / ' + tb);
    }
  }
  return found;
}"""


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian chromium at /usr/bin/chromium")
def test_page_renders_in_chromium_without_errors_or_requests(runs: dict[str, Path], tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for name in ("gc", "lifecycle"):
                page_url = (runs[name] / REPORT_HTML).as_uri()
                page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
                page.on("console", lambda message: errors.append(message.text) if message.type in ("error", "warning") else None)
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                page.on("request", lambda request: requests.append(request.url))
                page.goto(page_url)
                page.wait_for_load_state("load")
                assert "lakewarden" in page.locator("h1").inner_text()
                headline = page.locator(".headline")
                box = headline.bounding_box()
                assert box is not None and box["y"] + box["height"] <= 900, "the answer is not on the first screen"
                assert "objects" in headline.inner_text() and "Why" in headline.inner_text()
                assert page.evaluate(OVERLAPS_JS) == []
                assert page.locator("svg").count() >= 4
                assert page.locator("svg").first.bounding_box()["width"] > 300  # drawn, not collapsed
                assert page.locator("table.largest tbody tr").count() > 0
                screenshot = tmp_path / f"report-{name}.png"
                page.screenshot(path=str(screenshot), full_page=True)
                assert screenshot.stat().st_size > 20_000
                print(f"report.html screenshot: {screenshot}")
                assert requests == [page_url], f"requests left the page: {requests}"
                requests.clear()
        finally:
            browser.close()
    assert errors == []


@pytest.mark.parametrize("count", [1, 2, 12, 40])
def test_trend_labels_never_overlap(count: int) -> None:
    """Upright labels one font height apart at least, however many runs; the newest labelled."""
    import re

    from lakewarden.reports.page import trend_chart

    runs = [{"run_id": f"r{i}", "now": f"2026-01-{1 + i % 28:02d}T0{i % 10}:00:00Z", "bytes_marked": 1000 * i, "num_marked": i}
            for i in range(count)]
    svg = trend_chart(runs, f"r{count - 1}")
    labels = [(float(x), text) for x, text in re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end" transform="rotate\(-90[^>]*>([^<]*)</text>', svg)]
    assert labels and labels[-1][1].startswith(f"2026-01-{1 + (count - 1) % 28:02d}")  # date, and time unless all are 00:00
    assert all(b[0] - a[0] >= 14 for a, b in zip(labels, labels[1:]))
