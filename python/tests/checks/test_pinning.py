"""A mandatory check is defined by the protected branch (or the server config), never by the
commit being merged: a branch that redefines it runs the protected definition anyway."""

from __future__ import annotations

import yaml

from checks_support import CapturingServer, WebhookReceiver

PROTECT = {"protected_branches": [{"branch": "main", "mandatory_checks": ["row-count"]}]}


def action(checks: list[dict]) -> str:
    return yaml.safe_dump({"name": "data checks", "on": {"pre-merge": {"branches": ["main"]}}, "checks": checks})


def hook(check_id: str, url: str) -> dict:
    return {"id": check_id, "type": "webhook", "properties": {"url": url}}


def test_a_branch_that_redefines_a_mandatory_check_cannot_pass_the_gate(snapshot, service_factory) -> None:
    with WebhookReceiver() as strict, WebhookReceiver() as yes_man:
        strict.result = {"status": "FAILED", "metadata": {"rows": "0"}}
        yes_man.result = {"status": "SUCCESS", "metadata": {"rows": "plenty"}}
        main = snapshot.commit({"_lakefs_actions/checks.yaml": action([hook("row-count", strict.url)])}, branch="main")
        # The source points the mandatory check at a URL that always says SUCCESS, and adds its own check.
        sneaky = snapshot.commit(
            {"_lakefs_actions/checks.yaml": action([hook("row-count", yes_man.url), hook("lint", yes_man.url)])},
            parents=[main], branch="sneaky",
        )
        snapshot.write()
        live = service_factory(snapshot.directory, PROTECT)

        answer = live.trigger("sneaky")
        assert answer.status_code == 202
        assert {c["id"]: c["pinned_for"] for c in answer.json()["checks"]} == {"lint": [], "row-count": ["main"]}
        failed = live.wait_for("sneaky", "row-count", {"SUCCESS", "FAILED"})
        assert failed["status"] == "FAILED" and failed["metadata"] == {"rows": "0"}
        assert failed["action"] == "_lakefs_actions/checks.yaml"
        assert live.wait_for("sneaky", "lint", {"SUCCESS"})["metadata"] == {"rows": "plenty"}  # its own check runs
        # The protected definition ran (strict got row-count), the source's did not.
        assert [e["check_id"] for e in strict.events()] == ["row-count"]
        assert [e["check_id"] for e in yes_man.events()] == ["lint"]

        blocked = live.gate("main", sneaky)
        assert blocked.status_code == 412 and blocked.json()["reasons"][0]["status"] == "FAILED"
        merge = {m["branch"]: m for m in live.checks_report("sneaky")["merge"]}
        assert merge["main"]["mergeable"] is False
        assert merge["main"]["checks"] == [{"id": "row-count", "status": "FAILED", "pinned": True}]


def test_a_check_run_from_the_source_definition_does_not_count(snapshot, service_factory) -> None:
    """main requires row-count but does not define it: the source's own row-count runs, and the
    gate refuses it, because it is not the definition the protected branch pins."""
    with WebhookReceiver() as yes_man:
        main = snapshot.commit({"data/x.csv": "1"}, branch="main")
        source = snapshot.commit({"_lakefs_actions/checks.yaml": action([hook("row-count", yes_man.url)])},
                                 parents=[main], branch="feature")
        snapshot.write()
        live = service_factory(snapshot.directory, PROTECT)
        live.trigger("feature")
        assert live.wait_for("feature", "row-count", {"SUCCESS"})["pinned_for"] == []
        blocked = live.gate("main", source)
        assert blocked.status_code == 412
        assert "not the one main requires" in blocked.json()["message"]
        assert live.gate("dev", source).status_code == 200  # unprotected: allowed


def test_server_config_definitions_win_over_every_branch(snapshot, service_factory) -> None:
    with WebhookReceiver() as central, CapturingServer(202) as branch_hook:
        main = snapshot.commit({"_lakefs_actions/checks.yaml": action([hook("row-count", branch_hook.url)])}, branch="main")
        snapshot.commit({"_lakefs_actions/checks.yaml": action([hook("row-count", branch_hook.url)])},
                        parents=[main], branch="feature")
        snapshot.write()
        config = {
            "protected_branches": [{"branch": "main", "mandatory_checks": ["row-count"]},
                                   {"branch": "release-*", "mandatory_checks": ["row-count"]}],
            "checks": [{"id": "row-count", "type": "webhook", "executor": "central"}],
            "executors": {"central": {"type": "webhook", "url": central.url}},
        }
        snapshot.branches["release-1"] = main
        snapshot.write()
        live = service_factory(snapshot.directory, config)
        live.trigger("feature")
        done = live.wait_for("feature", "row-count", {"SUCCESS"})
        assert sorted(done["pinned_for"]) == ["main", "release-1"]  # the glob rule, matched to existing branches
        assert branch_hook.requests == []
        assert live.gate("main", "feature").status_code == 200
        assert live.gate("release-1", "feature").status_code == 200
