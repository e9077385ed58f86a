"""The fake lakeFS answers as lakeFS does: its GC commits (prepare_commits) agree with lakeFS's
own TestActiveCommits cases (facts in lakefs_cases.py), its pagination and error bodies follow
swagger.yml, and its scenario is what test_lakefs_e2e.py says it is."""

from __future__ import annotations

import base64
import json
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from fake_lakefs import KEY, SECRET, Commit, LocalNamespace, build_scenario, lakefs_active_commits
from lakefs_cases import ACTIVE_COMMIT_CASES, DEFAULT_RETENTION_DAYS, ORDER_DEPENDENT_CASE

NOW = datetime(2026, 1, 31, 12, 0, tzinfo=timezone.utc)


def _active(commits: dict[str, tuple[int, list[str]]], heads: dict[str, int]) -> set[str]:
    """lakeFS's test set-up: each head is the HEAD of a branch named like it; current version."""
    history = {
        cid: Commit(cid, parents, NOW - timedelta(days=days), "", "t", "m", 1, 0, {})
        for cid, (days, parents) in commits.items()
    }
    rules = {
        "default_retention_days": DEFAULT_RETENTION_DAYS,
        "branches": [{"branch_id": cid, "retention_days": days} for cid, days in heads.items()],
    }
    return lakefs_active_commits(history, {cid: cid for cid in heads}, rules, NOW)


@pytest.mark.parametrize("case", sorted(ACTIVE_COMMIT_CASES))
def test_fake_prepare_commits_agrees_with_lakefs_cases(case: str) -> None:
    commits, heads, expected = ACTIVE_COMMIT_CASES[case]
    assert _active(commits, heads) == expected


def test_fake_stops_where_lakefs_stops() -> None:
    """The walk order matters in lakeFS; the fake reproduces lakeFS's answer, not the union."""
    commits, heads, lakefs_answer, _ = ORDER_DEPENDENT_CASE
    assert _active(commits, heads) == lakefs_answer


def test_version_zero_main_parent_is_the_last() -> None:
    day = timedelta(days=1)
    history = {
        "r": Commit("r", [], NOW - 30 * day, "", "t", "m", 0, 0, {}),
        "main1": Commit("main1", ["r"], NOW - 20 * day, "", "t", "m", 0, 0, {}),
        "side1": Commit("side1", ["r"], NOW - 20 * day, "", "t", "m", 0, 0, {}),
        "merge": Commit("merge", ["side1", "main1"], NOW - 1 * day, "", "t", "m", 0, 0, {}),
    }
    rules = {"default_retention_days": 5, "branches": []}
    # merge's main parent (main1, last) is active; side1 is a dangling leaf, 20 days old: expired.
    assert lakefs_active_commits(history, {"main": "merge"}, rules, NOW) == {"merge", "main1"}


def _get(endpoint: str, path: str) -> tuple[int, Any]:
    request = urllib.request.Request(endpoint + path)
    request.add_header("Authorization", "Basic " + base64.b64encode(f"{KEY}:{SECRET}".encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_fake_pagination_and_errors_follow_swagger(tmp_path: Path) -> None:
    scenario = build_scenario(LocalNamespace(tmp_path / "ns"))
    server = scenario.fake.serve()
    try:
        status, page = _get(server.endpoint, "/api/v1/repositories/repo1/branches?amount=2&show_hidden=true")
        assert status == 200 and set(page) == {"pagination", "results"}
        assert page["pagination"] == {"has_more": True, "next_offset": "dev", "results": 2, "max_per_page": 2}
        assert [r["id"] for r in page["results"]] == ["_sys", "dev"] and set(page["results"][0]) == {"id", "commit_id"}
        status, page = _get(server.endpoint, "/api/v1/repositories/repo1/branches?amount=2&after=dev&show_hidden=true")
        assert [r["id"] for r in page["results"]] == ["main", "wipe"] and page["pagination"]["has_more"] is False
        status, body = _get(server.endpoint, "/api/v1/repositories/nope")
        assert status == 404 and set(body) == {"message"}
        status, body = _get(server.endpoint, "/api/v1/repositories/repo1/settings/gc_rules")
        assert status == 200 and body == scenario.rules
    finally:
        server.stop()
