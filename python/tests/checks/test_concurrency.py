"""Hundreds of concurrent callbacks and retries over HTTP must leave consistent state."""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Callable

import pytest
import requests

from checks_support import REPO, LiveService, webhook_actions


@pytest.fixture
def service_factory(service_factory: Callable[..., LiveService], store_url: str) -> Callable[..., LiveService]:
    """Every test here runs twice: the service's store on SQLite, then on PostgreSQL."""
    return partial(service_factory, db_url=store_url)


def test_hundreds_of_concurrent_callbacks_exactly_one_wins(snapshot, receiver, service_factory) -> None:
    receiver.mode = "record"
    commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["race"])}, branch="main")
    snapshot.write()
    # One client sends all 299 rejected callbacks: record every one (the default is 60 a minute).
    live = service_factory(snapshot.directory, {"rejections_per_client": 1000})
    live.trigger("main")
    live.wait_for("main", "race", {"EXECUTING"})
    event = receiver.events(1)[0]
    base = f"{live.checks_url(commit)}/race"

    def call(i: int) -> tuple[int, str, str]:
        if i % 3 == 2:  # forged
            answer = requests.post(base, params={"token": f"forged-{i}"}, json={"status": "SUCCESS"}, timeout=60)
            return answer.status_code, "forged", ""
        status = "SUCCESS" if i % 2 else "FAILED"
        answer = requests.post(event["callback_url"], json={"status": status, "metadata": {"caller": str(i)}}, timeout=60)
        return answer.status_code, "valid", status if answer.status_code == 200 else ""

    with ThreadPoolExecutor(max_workers=64) as pool:
        results = list(pool.map(call, range(300)))

    codes = Counter(code for code, _, _ in results)
    assert codes[200] == 1, codes
    assert codes[403] == 299, codes
    [(_, _, winner_status)] = [r for r in results if r[0] == 200]
    final = live.checks(commit)["race"]
    assert final["status"] == winner_status
    winner_caller = final["metadata"]["caller"]
    assert int(winner_caller) % 3 != 2
    rejected = live.store.rejections(REPO)
    assert len(rejected) == 299
    assert Counter(r["reason"] for r in rejected) == {"unknown token": 100, "token already used": 199}


def test_concurrent_retries_start_exactly_one_attempt(snapshot, receiver, service_factory) -> None:
    receiver.mode = "error"
    snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["flaky"])}, branch="main")
    snapshot.write()
    live = service_factory(snapshot.directory)
    assert live.trigger("main").status_code == 202
    live.wait_for("main", "flaky", {"FAILED"})
    receiver.mode = "record"

    with ThreadPoolExecutor(max_workers=32) as pool:
        codes = Counter(pool.map(lambda _: live.retry("main", "flaky").status_code, range(100)))
    assert codes == {202: 1, 409: 99}
    final = live.checks("main")["flaky"]
    assert final["attempt"] == 2
    assert live.wait_for("main", "flaky", {"EXECUTING"})["attempt"] == 2
    receiver.events(2)
    time.sleep(0.3)  # a second, wrong start would arrive by now
    assert len(receiver.received) == 2  # the failed first attempt and exactly one retry


def test_many_checks_calling_back_at_once_all_succeed(snapshot, receiver, service_factory) -> None:
    ids = [f"check-{i:03d}" for i in range(60)]
    snapshot.commit({"_lakefs_actions/many.yaml": webhook_actions(receiver.url, ids)}, branch="main")
    snapshot.write()
    live = service_factory(snapshot.directory, {"protected_branches": [{"branch": "main", "mandatory_checks": ids}]})
    assert live.trigger("main").status_code == 202
    for check in ids:
        live.wait_for("main", check, {"SUCCESS"})
    assert sorted(receiver.answers(len(ids))) == [200] * len(ids)
    assert live.gate("main", "main").status_code == 200
