"""The store only ever makes transitions of the state machine, whatever the order of operations."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from lakewarden.checks.config import CheckDefinition
from lakewarden.checks.errors import ChecksError
from lakewarden.checks.states import TRANSITIONS, Status, can_transition
from lakewarden.checks.store import Store, hash_token

DEF = CheckDefinition(id="c", type="webhook", properties={"url": "http://x"}, source="a.yaml", action_name="a")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def test_random_operation_sequences_only_make_allowed_transitions(tmp_path) -> None:
    clock = Clock()
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}", clock=clock)
    rng = random.Random(7)
    seen: set[tuple[Status, Status]] = set()
    try:
        commit_no = 0
        commit = ""
        tokens: list[str] = []
        for _ in range(600):
            current = store.get("r", commit, "c") if commit else None
            if current is None or current.status is Status.SUCCESS:  # final: go on with a new commit
                commit_no += 1
                commit = f"commit-{commit_no}"
                execution, token = store.start("r", commit, "main", DEF, timedelta(hours=1))
                assert token is not None and execution.status is Status.STARTING
                tokens = [token]
            before = store.get("r", commit, "c")
            assert before is not None
            op = rng.choice(["executing", "start_failed", "callback", "stale", "retry", "sweep", "tick"])
            try:
                if op == "executing":
                    store.mark_executing(before.row_id, before.execution_id, "http://log")
                elif op == "start_failed":
                    store.mark_start_failed(before.row_id, before.execution_id, "boom")
                elif op == "callback":
                    store.callback("r", commit, "c", tokens[-1], rng.choice([Status.SUCCESS, Status.FAILED]), {})
                elif op == "stale" and len(tokens) > 1:
                    store.callback("r", commit, "c", rng.choice(tokens[:-1]), Status.SUCCESS, {})
                elif op == "retry":
                    _, new = store.retry("r", commit, "c", timedelta(hours=1))
                    tokens.append(new)
                elif op == "sweep":
                    store.sweep()
                else:
                    clock.now += timedelta(minutes=rng.choice([1, 30, 90]))
            except ChecksError:
                pass
            after = store.get("r", commit, "c")
            assert after is not None
            if after.status is not before.status or after.execution_id != before.execution_id:
                assert can_transition(before.status, after.status), (op, before.status, after.status)
                seen.add((before.status, after.status))
            if after.status in (Status.SUCCESS, Status.FAILED) and before.status != after.status:
                assert after.finished_at == clock.now
        # The walk exercised the whole machine, not one corner of it.
        expected = {(old, new) for old, targets in TRANSITIONS.items() for new in targets}
        assert seen == expected, expected - seen
        assert commit_no > 5
    finally:
        store.close()


def test_tokens_are_stored_hashed_only(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    try:
        _, token = store.start("r", "commit", "main", DEF, timedelta(hours=1))
        assert token and len(token) >= 40
        raw = (tmp_path / "s.sqlite").read_bytes() + (tmp_path / "s.sqlite-wal").read_bytes()
        assert token.encode() not in raw
        assert hash_token(token).encode() in raw
    finally:
        store.close()


def test_memory_sqlite_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a SQLite file"):
        Store("sqlite:///:memory:")


def test_transition_table_is_closed() -> None:
    assert set(TRANSITIONS) == set(Status)
    assert not TRANSITIONS[Status.SUCCESS]
