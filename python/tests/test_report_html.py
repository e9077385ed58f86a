"""``report.html`` (CONTRACT section 4): written by every job run and rewritten by the sweep,
its figures agree with addresses.csv and the snapshot, and it renders in a real headless
Chromium without a console error and without a single request leaving the page."""

from __future__ import annotations

import csv
import json
import logging
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from lakewarden.cli import main
from lakewarden.report_html import REPORT_HTML, aggregate_marked, write_report_html
from lakewarden.sample import SampleConfig, SampleRepository, generate
from lakewarden.snapshot_scan import DANGLING

pytestmark = pytest.mark.spark

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
RULES = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 14}]}
POLICY = {"logs": {"prefix": "logs/", "days": 10, "enabled": True}}


def stamp(moment) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def runs(spark, test_state_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two committed GC dry runs (a trend), a lifecycle dry run, and a sweep of the second GC run."""
    base = tmp_path_factory.mktemp("report-html")
    sample: SampleRepository = generate(base / "sample", SampleConfig(seed=5, entries=900))
    (base / "rules.json").write_text(json.dumps(RULES))
    (base / "policy.json").write_text(json.dumps(POLICY))
    common = ["--snapshot", str(sample.snapshot_dir), "--state", str(test_state_dir), "--dry-run"]
    reports = {"gc-early": base / "gc-early", "gc": base / "gc", "lifecycle": base / "lifecycle"}
    early, late = sample.end + timedelta(days=2), sample.end + timedelta(days=9)
    assert main(["gc", "committed", *common, "--rules", str(base / "rules.json"), "--now", stamp(early), "--report", str(reports["gc-early"])]) == 0
    assert main(["gc", "committed", *common, "--rules", str(base / "rules.json"), "--now", stamp(late), "--report", str(reports["gc"])]) == 0
    assert main(["lifecycle", *common, "--policy", str(base / "policy.json"), "--now", stamp(late), "--report", str(reports["lifecycle"])]) == 0
    for report in reports.values():
        assert (report / REPORT_HTML).is_file(), f"the job did not write {report / REPORT_HTML}"
    reports["before-sweep"] = base / "gc-before-sweep.html"
    reports["before-sweep"].write_bytes((reports["gc"] / REPORT_HTML).read_bytes())
    assert main(["sweep", "--report", str(reports["gc"]), "--state", str(test_state_dir)]) == 0
    reports["sample"] = sample.snapshot_dir
    return reports


def summary_of(report: Path) -> dict:
    return json.loads((report / "summary.json").read_text())


def test_figures_agree_with_the_report_and_the_snapshot(runs: dict[str, Path]) -> None:
    for name in ("gc", "lifecycle"):
        report = runs[name]
        summary = summary_of(report)
        marked = aggregate_marked(report, summary)
        assert summary["num_marked"] > 0
        assert marked.total.objects == summary["num_marked"] and marked.total.bytes == summary["bytes_marked"]
        assert sum(g.objects for g in marked.by_prefix.values()) == summary["num_marked"]
        assert sum(marked.ages.values()) == summary["num_marked"]
        with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        largest = max(int(row["size_bytes"]) for row in rows)
        assert int(marked.largest[0][2]["size"]) == largest
        if name == "lifecycle":
            rules = Counter(rule for row in rows for rule in row["matched_rules"].split(";"))
            assert {f"rule {r}": n for r, n in rules.items()} == {k: g.objects for k, g in marked.by_reason.items()}
    page = (runs["gc"] / REPORT_HTML).read_text()
    branches = {line.split('"')[3] for line in (runs["sample"] / "branches.jsonl").read_text().splitlines()}
    assert any(f"<td>{branch}</td>" in page for branch in branches | {DANGLING}), "no branch attribution on the page"


def test_page_follows_the_run_then_the_sweep(runs: dict[str, Path]) -> None:
    before = runs["before-sweep"].read_text()
    after = (runs["gc"] / REPORT_HTML).read_text()
    summary = summary_of(runs["gc"])
    assert "Dry run:" in before and "would be deleted" in before and "<h2>Sweep</h2>" not in before
    assert summary["status"] == "swept" and summary["num_deleted"] == summary["num_marked"]
    assert "<h2>Sweep</h2>" in after and f"<td>deleted</td><td>{summary['num_deleted']:,}</td>" in after
    # the trend lists both committed GC runs of this namespace, the earlier one first
    early_id, late_id = summary_of(runs["gc-early"])["run_id"], summary["run_id"]
    trend = after[after.index("Trend: marked bytes per run") :]
    assert early_id in trend and late_id in trend and trend.index(early_id) < trend.index(late_id)
    for page in (before, after, (runs["lifecycle"] / REPORT_HTML).read_text()):
        assert "http://" not in page.replace("http://www.w3.org/", "") and "https://" not in page
        assert "<script" not in page and page.count("<svg") >= 4


def test_writing_the_page_never_raises(tmp_path: Path, caplog) -> None:
    (tmp_path / "summary.json").write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="lakewarden.report_html"):
        assert write_report_html(tmp_path) is None
    assert "report.html not written" in caplog.text and not (tmp_path / REPORT_HTML).exists()


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
