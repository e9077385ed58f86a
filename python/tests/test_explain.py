"""``lakewarden explain``: answers from the report directory and the snapshot it records, checked
against the snapshot read independently here (plain JSON), for a marked address, a kept one,
a physical address, a logical path, an unknown name and bad input."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import pytest

from lakewarden.cli import main
from lakewarden.sample import SampleConfig, generate
import report_files

pytestmark = pytest.mark.spark

RULES = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 14}]}
POLICY = {"logs": {"prefix": "logs/", "days": 10, "enabled": True, "branch_days": {"main": 12}}}


def stamp(moment) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def run(spark, test_state_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("explain")
    sample = generate(base / "sample", SampleConfig(seed=9, entries=700))
    (base / "rules.json").write_text(json.dumps(RULES))
    (base / "policy.json").write_text(json.dumps(POLICY))
    now = stamp(sample.end + timedelta(days=3))
    common = ["--snapshot", str(sample.snapshot_dir), "--state", str(test_state_dir), "--now", now, "--dry-run"]
    assert main(["gc", "committed", *common, "--rules", str(base / "rules.json"), "--report", str(base / "gc")]) == 0
    assert main(["lifecycle", *common, "--policy", str(base / "policy.json"), "--report", str(base / "lc")]) == 0
    snap = sample.snapshot_dir
    ranges = jsonl(snap / "ranges.jsonl")
    commits_of_metarange = defaultdict(set)
    for commit in jsonl(snap / "commits.jsonl"):
        commits_of_metarange[commit["meta_range_id"]].add(commit["commit_id"])
    commits_of_range = defaultdict(set)
    for row in jsonl(snap / "metaranges.jsonl"):
        commits_of_range[row["range_id"]] |= commits_of_metarange[row["meta_range_id"]]
    holders = defaultdict(set)
    for entry in ranges:
        holders[entry["address"]] |= commits_of_range[entry["range_id"]]
    return {"gc": base / "gc", "lc": base / "lc", "sample": sample, "ranges": ranges, "holders": holders}


def explain_json(report: Path, target: str, capsys) -> tuple[int, dict]:
    code = main(["explain", "--report", str(report), target, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def addresses(report: Path) -> list[dict[str, str]]:
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def commit_reasons(report: Path) -> dict[str, tuple[str, str]]:
    with open(report / "commits.csv", newline="", encoding="utf-8") as handle:
        return {row["commit_id"]: (row["is_active"], row["reason"]) for row in csv.DictReader(handle)}


def test_a_marked_address_lists_its_commits_all_expired(run, capsys) -> None:
    marked = addresses(run["gc"])
    target = next(row for row in marked if run["holders"][row["address"]])
    code, answer = explain_json(run["gc"], target["address"], capsys)
    assert code == 0 and answer["found"] is True
    (obj,) = answer["objects"]
    assert obj["marked"] is True and obj["verdict"].startswith("MARKED")
    assert {c["commit_id"] for c in obj["commits"]} == run["holders"][target["address"]]
    reasons = commit_reasons(run["gc"])
    assert all(c["state"] == "expired" and reasons[c["commit_id"]][0] == "false" for c in obj["commits"])
    assert all("retention" in c["reason"] for c in obj["commits"])
    assert target["example_path"] in {p for c in obj["commits"] for p in c["paths"]}
    assert obj["rules"][0].startswith("default retention 7 days")
    for branch in {b for c in obj["commits"] for b in c["branches"] if not b.startswith("(")}:
        assert f"branch {branch}: {14 if branch == 'main' else 7} days" in obj["rules"]
    # the same object named by its physical address
    code, again = explain_json(run["gc"], target["physical_address"], capsys)
    assert code == 0 and again["objects"][0]["address"] == target["address"] and again["objects"][0]["marked"]


def test_a_kept_address_names_an_active_commit_and_its_reason(run, capsys) -> None:
    marked = {row["address"] for row in addresses(run["gc"])}
    reasons = commit_reasons(run["gc"])
    kept = next(a for a, commits in run["holders"].items() if a not in marked and any(reasons[c][0] == "true" for c in commits))
    code, answer = explain_json(run["gc"], kept, capsys)
    assert code == 0
    (obj,) = answer["objects"]
    assert obj["marked"] is False and obj["verdict"].startswith("KEPT")
    assert {c["commit_id"] for c in obj["commits"]} == run["holders"][kept]
    active = [c for c in obj["commits"] if c["state"] == "active"]
    assert active and all(c["reason"] == reasons[c["commit_id"]][1] for c in active)
    assert any(word in active[0]["reason"] for word in ("HEAD of branch", "within the retention of branch", "dangling", "tagged"))
    assert main(["explain", "--report", str(run["gc"]), kept]) == 0
    text = capsys.readouterr().out
    assert "KEPT" in text and kept in text and active[0]["commit_id"][:12] in text


def test_a_path_explains_every_address_it_had(run, capsys) -> None:
    lifecycle_marked = addresses(run["lc"])
    assert lifecycle_marked, "the policy should expire something in the sample"
    path = lifecycle_marked[0]["paths"].split(";")[0]
    expected = {entry["address"] for entry in run["ranges"] if entry["key"] == path}
    code, answer = explain_json(run["lc"], path, capsys)
    assert code == 0
    found = {obj["address"] for obj in answer["objects"]}
    assert found == expected if len(expected) <= 10 else (len(found) == 10 and found <= expected)
    target = next(obj for obj in answer["objects"] if obj["address"] == lifecycle_marked[0]["address"])
    assert target["marked"] is True and "logs" in target["verdict"]
    assert any(rule.startswith("rule logs (prefix 'logs/'") and "main: 12 days" in rule for rule in target["rules"])
    assert all(path in c["paths"] for c in target["commits"])


def test_an_unknown_name_is_answered_and_bad_input_exits_2(run, capsys, tmp_path: Path) -> None:
    assert main(["explain", "--report", str(run["gc"]), "no/such/object"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "no/such/object" in captured.err
    assert main(["explain", "--report", str(tmp_path), "x"]) == 2
    assert "summary.json" in capsys.readouterr().err
    report = tmp_path / "copy"
    report.mkdir()
    summary = report_files.summary(run["gc"])
    summary.pop("snapshot_dir")
    (report / "summary.json").write_text(json.dumps(summary))
    assert main(["explain", "--report", str(report), "x"]) == 2
    assert "snapshot_dir" in capsys.readouterr().err
