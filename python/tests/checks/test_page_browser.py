"""The commit page in a real headless Chromium (Debian ``chromium``), driven by Playwright."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from checks_support import API_TOKEN, REPO, webhook_actions

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]


@pytest.fixture
def browser_page():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            yield context.new_page()
        finally:
            browser.close()


def test_commit_page_shows_checks_and_retry_changes_state(snapshot, receiver, service_factory, browser_page, tmp_path) -> None:
    receiver.result = {"status": "FAILED", "metadata": {"null_rows": "2", "column": "price"}}
    receiver.log_text = "scanning prices\n2 rows have a null price\n"
    commit = snapshot.commit(
        {
            "_lakefs_actions/checks.yaml": webhook_actions(
                receiver.url, ["row-count", "schema"], properties={"output_url": "http://logs.example/{{ execution_id }}"}
            ),
            "_lakefs_actions/evil.yaml": webhook_actions(
                receiver.url, ["evil-link"], name="evil links", properties={"output_url": "javascript:alert(1)"}
            ),
        },
        message="add prices table",
        branch="main",
    )
    snapshot.write()
    protect = {"protected_branches": [{"branch": "main", "mandatory_checks": ["row-count", "schema"]}]}
    live = service_factory(snapshot.directory, protect)
    assert live.trigger("main").status_code == 202
    # all three answered FAILED before the receiver changes its answer (on a busy machine the
    # third may call it later than the first two)
    for check in ("row-count", "schema", "evil-link"):
        live.wait_for("main", check, {"FAILED"})
    receiver.result = {"status": "SUCCESS", "metadata": {"rows": "42"}}
    assert requests_ok(live.retry("main", "schema"))
    live.wait_for("main", "schema", {"SUCCESS"})

    page = browser_page
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    answer = page.goto(f"{live.url}/ui/repositories/{REPO}/refs/{commit}")
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    failed = page.locator('tr[data-check="row-count"]')
    failed.locator('[data-status="FAILED"]').wait_for(timeout=10_000)
    # May this commit merge into main? Not while row-count failed; schema passed on its retry.
    verdict = page.locator('#merge [data-branch="main"]')
    verdict.wait_for(timeout=10_000)
    assert verdict.get_attribute("data-mergeable") == "false"
    assert "Not mergeable into main" in verdict.inner_text()
    assert "row-count: FAILED" in verdict.locator('[data-mandatory="row-count"]').inner_text()
    assert "schema: SUCCESS" in verdict.locator('[data-mandatory="schema"]').inner_text()
    # The executor's log, uploaded to the event's output_url, is on the page.
    failed.locator("pre.log").wait_for(timeout=10_000)
    assert "2 rows have a null price" in failed.locator("pre.log").inner_text()
    # Only http(s) links: a committed javascript: link is never rendered as a link.
    assert page.locator('a[href^="javascript"]').count() == 0
    assert page.locator('tr[data-check="evil-link"] a').count() == 0
    assert page.locator("#commit").inner_text() == commit
    assert "add prices table" in page.locator("#commit-message").inner_text()
    assert "null_rows" in failed.inner_text() and "price" in failed.inner_text()
    assert failed.locator("a", has_text="logs").get_attribute("href").startswith("http://logs.example/")
    passed = page.locator('tr[data-check="schema"]')
    assert passed.locator('[data-status="SUCCESS"]').count() == 1
    assert passed.locator("button.retry").count() == 0  # no Retry for SUCCESS
    assert "attempt 2" in passed.inner_text()

    screenshot = tmp_path / "commit-page.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.stat().st_size > 10_000
    if os.environ.get("CHECKS_SCREENSHOT"):
        shutil.copy(screenshot, os.environ["CHECKS_SCREENSHOT"])

    # Without the API token the retry is refused and the page says so.
    failed.locator("button.retry").click()
    page.locator("#message.bad").wait_for(timeout=10_000)
    assert "missing or wrong API token" in page.locator("#message").inner_text()
    assert live.checks(commit)["row-count"]["attempt"] == 1

    page.fill("#api-token", API_TOKEN)
    page.locator("#api-token").dispatch_event("change")
    page.locator('tr[data-check="row-count"] button.retry').click()
    page.locator('tr[data-check="row-count"] [data-status="SUCCESS"]').wait_for(timeout=15_000)
    row = page.locator('tr[data-check="row-count"]')
    assert "rows" in row.inner_text() and "attempt 2" in row.inner_text()
    assert row.locator("button.retry").count() == 0
    assert live.checks(commit)["row-count"]["status"] == "SUCCESS"
    page.locator('#merge [data-branch="main"][data-mergeable="true"]').wait_for(timeout=10_000)
    assert "Mergeable into main" in page.locator('#merge [data-branch="main"]').inner_text()
    assert violations == []  # the page's own script and style load under its CSP

    page.goto(f"{live.url}/")
    page.locator("#recent a").first.wait_for(timeout=10_000)
    assert page.locator("#recent a").first.inner_text() == commit[:16]

    page.goto(f"{live.url}/ui/repositories/{REPO}/refs/no-such-branch")
    page.locator("#message.bad").wait_for(timeout=10_000)
    assert "ref 'no-such-branch' not found" in page.locator("#message").inner_text()


def requests_ok(answer) -> bool:
    return 200 <= answer.status_code < 300
