"""The store only ever makes transitions of the state machine, whatever the order of operations."""

from __future__ import annotations

import random
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import event, select

from lakewarden.checks.definitions import CheckDefinition
from lakewarden.checks.errors import ChecksError
from lakewarden.checks.states import TRANSITIONS, Status, can_transition
from lakewarden.checks.store import Store, hash_token, metadata_obj, normalise_db_url, tokens

DEF = CheckDefinition(id="c", type="webhook", properties={"url": "http://x"}, source="a.yaml", action_name="a")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def test_random_operation_sequences_only_make_allowed_transitions(store_url: str) -> None:
    """On SQLite and on PostgreSQL (the store_url fixture runs both)."""
    clock = Clock()
    store = Store(store_url, clock=clock)
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


def test_tokens_are_stored_hashed_only(store_url: str, tmp_path) -> None:
    store = Store(store_url)
    try:
        _, token = store.start("r", "commit", "main", DEF, timedelta(hours=1))
        assert token and len(token) >= 40
        with store.engine.connect() as conn:
            rows = [row for table in metadata_obj.sorted_tables for row in conn.execute(select(table))]
        values = [str(v) for row in rows for v in row]
        assert not any(token in v for v in values)
        assert hash_token(token) in values
        if store_url.startswith("sqlite"):  # nor anywhere in the database's files
            raw = (tmp_path / "store.sqlite").read_bytes() + (tmp_path / "store.sqlite-wal").read_bytes()
            assert token.encode() not in raw
            assert hash_token(token).encode() in raw
    finally:
        store.close()


def test_postgresql_urls_use_psycopg_3() -> None:
    assert normalise_db_url("postgresql://u:p@h:5432/d") == "postgresql+psycopg://u:p@h:5432/d"
    assert normalise_db_url("postgres://u@h/d") == "postgresql+psycopg://u@h/d"
    assert normalise_db_url("postgresql+psycopg2://u@h/d") == "postgresql+psycopg2://u@h/d"
    assert normalise_db_url("sqlite:////tmp/x.sqlite") == "sqlite:////tmp/x.sqlite"


def test_store_runs_on_postgresql_by_plain_url(postgres_url: str) -> None:
    assert postgres_url.startswith("postgresql://")
    store = Store(postgres_url)
    try:
        assert store.engine.dialect.name == "postgresql" and store.engine.dialect.driver == "psycopg"
        execution, token = store.start("r", "commit", "main", DEF, timedelta(hours=1))
        assert token is not None
        assert store.callback("r", "commit", "c", token, Status.SUCCESS, {"k": "v"}).status is Status.SUCCESS
        assert store.recent_commits()[0]["commit_id"] == "commit"
    finally:
        store.close()


def test_memory_sqlite_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a SQLite file"):
        Store("sqlite:///:memory:")


def test_transition_table_is_closed() -> None:
    assert set(TRANSITIONS) == set(Status)
    assert not TRANSITIONS[Status.SUCCESS]


def test_retry_records_the_attempt_it_made_while_another_retry_races(store_url: str) -> None:
    """A retry that has read the row must not see it moved on before its UPDATE (PostgreSQL).

    Between retry A's read and its UPDATE, retry B (and B's failed start) try to run. Without a row
    lock on PostgreSQL B finishes in between, A then makes attempt 3 while recording its token as
    attempt 2; with the lock (and on SQLite, BEGIN IMMEDIATE) B waits and finds A's STARTING.
    """
    a, b = Store(store_url), Store(store_url)
    try:
        execution, _ = a.start("r", "commit", "main", DEF, timedelta(hours=1))
        assert a.mark_start_failed(execution.row_id, execution.execution_id, "boom")
        outcome: list[Any] = []

        def retry_b() -> None:
            try:
                retried, _ = b.retry("r", "commit", "c", None)
                b.mark_start_failed(retried.row_id, retried.execution_id, "boom again")
                outcome.append(retried.attempt)
            except ChecksError as e:
                outcome.append(e)

        racer = threading.Thread(target=retry_b)
        armed = [True]

        def after_execute(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if armed[0] and statement.lstrip().upper().startswith("SELECT") and "check_executions" in statement:
                armed[0] = False
                racer.start()
                racer.join(timeout=2)  # B either completes (no lock) or waits for A's commit

        event.listen(a.engine, "after_cursor_execute", after_execute)
        mine, token = a.retry("r", "commit", "c", None)
        racer.join(timeout=60)
        assert not racer.is_alive()
        final = a.get("r", "commit", "c")
        assert final is not None
        with a.engine.connect() as conn:
            issued = conn.execute(select(tokens).where(tokens.c.token_hash == hash_token(token))).one()
        assert issued.attempt == final.attempt == mine.attempt == 2, (issued.attempt, final.attempt, outcome)
        assert final.status is Status.STARTING and isinstance(outcome[0], ChecksError)
    finally:
        a.close()
        b.close()
