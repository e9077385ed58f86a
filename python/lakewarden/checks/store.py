"""The state store: one row per (repository, commit, check), changed only by compare-and-set.

Every transition is a single ``UPDATE ... WHERE <row> AND status IN (<allowed sources>) [AND
token_hash = :hash]``; the row count says whether this caller won. Hundreds of concurrent
callbacks, retries and sweeps therefore cannot interleave into an impossible state, on SQLite
(where write transactions are ``BEGIN IMMEDIATE`` so they queue instead of failing to upgrade a
read lock) as well as on PostgreSQL (where a blocked UPDATE re-checks its WHERE clause).

Tokens are random (:mod:`secrets`), only their SHA-256 is stored, the row holds the hash of the
latest token only, and a successful callback clears it: single use, latest wins. Every issued
token is kept in ``check_tokens`` so a rejection can say *why* (superseded, used, unknown), and
every rejection is logged and recorded in ``check_callback_rejections``.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import ipaddress
import logging
import os
import secrets
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

from sqlalchemy import (
    Column,
    DateTime,
    Engine,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.types import TypeDecorator

from lakewarden.checks.definitions import CheckDefinition
from lakewarden.checks.errors import Conflict, NotFound, TokenRejected
from lakewarden.checks.states import ACTIVE, RETRYABLE, Status

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _finished(status: Status, metadata: Mapping[str, str], now: Any) -> dict[str, Any]:
    """The columns an execution ends with, whoever ends it (a callback, a watched DAG run):
    the final status and metadata, its token spent."""
    return {
        "status": status.value,
        "result_metadata": json.dumps(dict(metadata), sort_keys=True),
        "token_hash": None,
        "updated_at": now,
        "finished_at": now,
    }


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps stored as naive UTC (portable to SQLite) and read back timezone-aware."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the checks store")
        return value.astimezone(timezone.utc).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return value.replace(tzinfo=timezone.utc) if value is not None else None


metadata_obj = MetaData()

executions = Table(
    "check_executions",
    metadata_obj,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("repository", String(255), nullable=False),
    Column("commit_id", String(128), nullable=False),
    Column("check_id", String(128), nullable=False),
    Column("ref", String(512), nullable=False),
    Column("check_type", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("execution_id", String(64), nullable=False),
    Column("token_hash", String(64)),
    Column("definition", Text, nullable=False),
    Column("result_metadata", Text, nullable=False),
    Column("output_url", Text),
    Column("error", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("deadline_at", UTCDateTime, nullable=False),
    UniqueConstraint("repository", "commit_id", "check_id", name="uq_check_execution"),
)
Index("ix_check_executions_active", executions.c.status, executions.c.deadline_at)

tokens = Table(
    "check_tokens",
    metadata_obj,
    Column("token_hash", String(64), primary_key=True),
    Column("execution_row", Integer, ForeignKey("check_executions.id"), nullable=False),
    Column("execution_id", String(64), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("issued_at", UTCDateTime, nullable=False),
    Column("used_at", UTCDateTime),
)

rejections = Table(
    "check_callback_rejections",
    metadata_obj,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", UTCDateTime, nullable=False),
    Column("repository", String(255), nullable=False),
    Column("commit_id", String(128), nullable=False),
    Column("check_id", String(128), nullable=False),
    Column("token_fingerprint", String(16), nullable=False),
    Column("reason", Text, nullable=False),
)


#: The executor log of each execution (appended through the event's ``output_url``).
outputs = Table(
    "check_outputs",
    metadata_obj,
    Column("execution_id", String(64), primary_key=True),
    Column("execution_row", Integer, ForeignKey("check_executions.id"), nullable=False),
    Column("text", Text, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)


class OutputTooLarge(Conflict):
    """Appending would make the execution's log larger than the limit; nothing was appended."""

    http_status = 413


def hash_token(token: str) -> str:
    """SHA-256 of a token; tokens carry 256 random bits, so no salt or slow hash is needed."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Execution:
    """One check's latest execution for a commit, as the API reports it (never the token)."""

    row_id: int
    repository: str
    commit_id: str
    check_id: str
    ref: str
    check_type: str
    status: Status
    attempt: int
    execution_id: str
    definition: CheckDefinition
    metadata: dict[str, str]
    output_url: str | None
    error: str | None
    created_at: datetime
    started_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    deadline_at: datetime

    @classmethod
    def from_row(cls, row: Row[Any]) -> "Execution":
        m = row._mapping
        return cls(
            row_id=m["id"],
            repository=m["repository"],
            commit_id=m["commit_id"],
            check_id=m["check_id"],
            ref=m["ref"],
            check_type=m["check_type"],
            status=Status(m["status"]),
            attempt=m["attempt"],
            execution_id=m["execution_id"],
            definition=CheckDefinition.from_json(json.loads(m["definition"])),
            metadata=json.loads(m["result_metadata"]),
            output_url=m["output_url"],
            error=m["error"],
            created_at=m["created_at"],
            started_at=m["started_at"],
            updated_at=m["updated_at"],
            finished_at=m["finished_at"],
            deadline_at=m["deadline_at"],
        )

    def to_json(self) -> dict[str, Any]:
        def ts(value: datetime | None) -> str | None:
            return value.isoformat().replace("+00:00", "Z") if value else None

        return {
            "id": self.check_id,
            "status": self.status.value,
            "execution_id": self.execution_id,
            "attempt": self.attempt,
            "type": self.check_type,
            "description": self.definition.description,
            "action": self.definition.source,
            "repository": self.repository,
            "commit_id": self.commit_id,
            "ref": self.ref,
            "metadata": self.metadata,
            "output_url": self.output_url,
            "error": self.error,
            "created_at": ts(self.created_at),
            "started_at": ts(self.started_at),
            "updated_at": ts(self.updated_at),
            "finished_at": ts(self.finished_at),
            "deadline_at": ts(self.deadline_at),
        }


def default_db_url(state_dir: Path) -> str:
    """The SQLite file used when ``--db`` is not given."""
    state_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(state_dir / 'checks.sqlite').resolve()}"


def normalise_db_url(url: str) -> str:
    """``postgresql://`` (and libpq's ``postgres://``) mean psycopg 3, the driver lakewarden ships.

    SQLAlchemy's default PostgreSQL driver is psycopg2, which is not installed; an explicit
    driver (``postgresql+psycopg://``, ``postgresql+psycopg2://``, ...) is left as given.
    """
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        if ":memory:" in url or url.rstrip("/") == "sqlite:":
            raise ValueError("the checks store needs a SQLite file (threads share it), not :memory:")
        engine = create_engine(
            url,
            connect_args={"timeout": 60, "check_same_thread": False},
            pool_size=8,
            max_overflow=24,
            pool_timeout=120,
        )

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # Let SQLAlchemy, not the driver, decide when transactions begin (see _on_begin).
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=60000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # Take the write lock up front: a deferred transaction that reads then writes can fail
            # with SQLITE_BUSY at once (no busy wait) when another writer got there first.
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=8, max_overflow=24)


def _private_sqlite_file(url: str) -> None:
    """Create a SQLite store file readable by its owner only (0600), or make an existing one so:
    it holds tokens' hashes, metadata and logs."""
    if not url.startswith("sqlite:///"):
        return
    path = Path(url[len("sqlite:///"):].split("?", 1)[0])
    if not path.name or str(path) == ":memory:":
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)
        if path.stat().st_uid == os.getuid():
            os.chmod(path, 0o600)
    except OSError:  # the engine reports a path it cannot open with its own message
        pass


def client_key(host: str | None) -> str:
    """Whom a request is counted against: its IPv4 address, or the /64 of an IPv6 one (one host
    usually has a whole /64)."""
    if not host:
        return "-"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:64]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class ClientRateLimit:
    """A token bucket per client: ``per_minute`` events, refilled evenly; clients kept bounded."""

    def __init__(self, per_minute: int, *, max_clients: int = 10_000, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self.max_clients = max_clients
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, client: str) -> bool:
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.pop(client, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - at) * self.per_minute / 60.0)
            allowed = tokens >= 1.0
            if allowed:
                tokens -= 1.0
            self._buckets[client] = (tokens, now)  # re-inserted: the dict is ordered by last use
            if len(self._buckets) > self.max_clients:
                self._buckets.pop(next(iter(self._buckets)))
            return allowed


class Store:
    """All reads and atomic transitions of check executions."""

    def __init__(
        self, url: str, *, clock: Clock = utcnow, max_rejections: int = 10_000, rejections_per_client: int = 60
    ):
        self.url = normalise_db_url(url)
        self.clock = clock
        self.max_rejections = max_rejections
        #: Rejections recorded per client and minute; beyond, they are counted ("suppressed") and
        #: not recorded, so one client cannot push everyone else's rejections out of the log.
        self.rejection_limit = ClientRateLimit(rejections_per_client)
        self._suppressed = 0
        self._suppressed_lock = threading.Lock()
        #: Applied to every text written (errors, metadata, logs, links, rejections): the service
        #: sets its secret mask here, so nothing reaches the database unmasked.
        self.mask: Callable[[str], str | None] = lambda text: text
        _private_sqlite_file(self.url)
        self.engine = _make_engine(self.url)
        # SQLite allows one writer; contending writers wait in its busy handler, which sleeps in
        # steps of up to 100 ms, so under hundreds of concurrent callbacks throughput collapses.
        # Writers of this process queue on a lock instead (other processes still use busy_timeout).
        self._write_lock: threading.Lock | None = threading.Lock() if self.url.startswith("sqlite") else None
        metadata_obj.create_all(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def _m(self, text: str | None) -> Any:
        return self.mask(text) if text else text

    def _m_map(self, metadata: Mapping[str, str]) -> dict[str, str]:
        return {str(self._m(str(k))): str(self._m(str(v))) for k, v in metadata.items()}

    def ping(self) -> None:
        """Raise unless the database answers (the health check)."""
        with self.engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        if self._write_lock is None:
            with self.engine.begin() as conn:
                yield conn
            return
        with self._write_lock, self.engine.begin() as conn:
            yield conn

    # -- reads ---------------------------------------------------------------------------------

    def list(self, repository: str, commit_id: str) -> list[Execution]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(executions)
                .where(executions.c.repository == repository, executions.c.commit_id == commit_id)
                .order_by(executions.c.check_id)
            ).all()
        return [Execution.from_row(r) for r in rows]

    def get(self, repository: str, commit_id: str, check_id: str) -> Execution | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(executions).where(
                    executions.c.repository == repository,
                    executions.c.commit_id == commit_id,
                    executions.c.check_id == check_id,
                )
            ).first()
        return Execution.from_row(row) if row else None

    def recent_commits(self, limit: int = 50) -> builtins.list[dict[str, Any]]:
        """Commits with executions, most recently updated first (for the index page)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(
                    executions.c.repository,
                    executions.c.commit_id,
                    func.max(executions.c.ref).label("ref"),
                    func.max(executions.c.updated_at, type_=UTCDateTime()).label("updated_at"),
                    func.count().label("checks"),
                )
                .group_by(executions.c.repository, executions.c.commit_id)
                .order_by(func.max(executions.c.updated_at).desc())
                .limit(limit)
            ).all()
        return [
            {
                "repository": r.repository,
                "commit_id": r.commit_id,
                "ref": r.ref,
                "checks": r.checks,
                "updated_at": r.updated_at.isoformat().replace("+00:00", "Z") if r.updated_at else None,
            }
            for r in rows
        ]

    def rejections(self, repository: str | None = None, limit: int | None = None) -> builtins.list[dict[str, Any]]:
        """Kept rejections, oldest first (the newest ``limit`` when given)."""
        with self.engine.connect() as conn:
            q = select(rejections).order_by(rejections.c.id.desc())
            if repository is not None:
                q = q.where(rejections.c.repository == repository)
            if limit is not None:
                q = q.limit(limit)
            return [dict(r._mapping) for r in reversed(conn.execute(q).all())]

    def rejection_counts(self) -> dict[str, int]:
        """``recorded`` ever, ``kept`` now, ``dropped`` (oldest, beyond ``max_rejections``).

        Ids only grow and only the oldest rows are deleted, so the newest id is the number ever
        recorded: no separate counter has to be kept consistent.
        """
        with self.engine.connect() as conn:
            row = conn.execute(select(func.max(rejections.c.id), func.count())).one()
        # indexed, not unpacked: mypy types the items of an unpacked untyped Row as object
        newest, kept = row[0], row[1]
        recorded = int(newest or 0)
        return {"recorded": recorded, "kept": int(kept), "dropped": recorded - int(kept), "suppressed": self._suppressed}

    # -- executor logs -------------------------------------------------------------------------

    def execution_for_token(
        self, repository: str, commit_id: str, check_id: str, token: str, *, client: str | None = None
    ) -> Execution:
        """The execution ``token`` was issued for, if it is still the check's current one.

        The log endpoint accepts the callback token also after the callback (an executor may
        upload its final log last), but never a token of an earlier attempt.
        """
        token_hash = hash_token(token)
        with self.engine.connect() as conn:
            row = conn.execute(
                select(executions).where(
                    executions.c.repository == repository,
                    executions.c.commit_id == commit_id,
                    executions.c.check_id == check_id,
                )
            ).first()
            issued = None
            if row is not None:
                issued = conn.execute(
                    select(tokens).where(tokens.c.token_hash == token_hash, tokens.c.execution_row == row.id)
                ).first()
        if row is None:
            reason = f"no execution of check {check_id!r} for commit {commit_id}"
            self._record_rejection(repository, commit_id, check_id, token_hash, f"log: {reason}", client)
            raise NotFound(reason, check_id=check_id)
        if issued is None:
            reason = "unknown token"
        elif issued.execution_id != row.execution_id:
            reason = f"token of attempt {issued.attempt} superseded by attempt {row.attempt}"
        else:
            return Execution.from_row(row)
        self._record_rejection(repository, commit_id, check_id, token_hash, f"log: {reason}", client)
        raise TokenRejected(reason, check_id=check_id)

    def append_output(self, execution: Execution, text: str, max_chars: int) -> int:
        """Append to the execution's log atomically; :class:`OutputTooLarge` beyond ``max_chars``."""
        now = self.clock()
        text = str(self._m(text) or "")
        size = len(text)
        for _ in range(3):  # insert-or-append; a concurrent first append makes the insert fail once
            with self._tx() as conn:
                moved = conn.execute(
                    update(outputs)
                    .where(
                        outputs.c.execution_id == execution.execution_id,
                        func.length(outputs.c.text) + size <= max_chars,
                    )
                    .values(text=outputs.c.text + text, updated_at=now)
                ).rowcount
                if moved:
                    total: int = conn.execute(
                        select(func.length(outputs.c.text)).where(outputs.c.execution_id == execution.execution_id)
                    ).scalar_one()
                    return int(total)
                current = conn.execute(
                    select(func.length(outputs.c.text)).where(outputs.c.execution_id == execution.execution_id)
                ).scalar()
                if current is not None or size > max_chars:
                    have = int(current or 0)
                    raise OutputTooLarge(
                        f"log limit is {max_chars} characters; {have} stored, {size} more refused",
                        check_id=execution.check_id,
                    )
            try:
                with self._tx() as conn:
                    conn.execute(
                        insert(outputs).values(
                            execution_id=execution.execution_id, execution_row=execution.row_id, text=text, updated_at=now
                        )
                    )
                return size
            except IntegrityError:
                continue
        raise Conflict("concurrent log appends; try again", check_id=execution.check_id)

    def output(self, execution: Execution) -> str:
        """The current execution's log ('' when none was uploaded)."""
        with self.engine.connect() as conn:
            text = conn.execute(select(outputs.c.text).where(outputs.c.execution_id == execution.execution_id)).scalar()
        return str(text or "")

    # -- transitions ---------------------------------------------------------------------------

    def start(
        self, repository: str, commit_id: str, ref: str, definition: CheckDefinition, timeout: timedelta
    ) -> tuple[Execution, str | None]:
        """Create the check's first execution in STARTING and issue its token.

        When the check already has an execution for this commit, nothing changes and the token is
        ``None``: triggering twice must not invalidate a running execution's token.
        """
        now = self.clock()
        token = new_token()
        token_hash = hash_token(token)
        execution_id = uuid.uuid4().hex
        try:
            with self._tx() as conn:
                existing = conn.execute(
                    select(executions).where(
                        executions.c.repository == repository,
                        executions.c.commit_id == commit_id,
                        executions.c.check_id == definition.id,
                    )
                ).first()
                if existing is not None:
                    return Execution.from_row(existing), None
                inserted = conn.execute(
                    insert(executions).values(
                        repository=repository,
                        commit_id=commit_id,
                        check_id=definition.id,
                        ref=ref,
                        check_type=definition.type,
                        status=Status.STARTING.value,
                        attempt=1,
                        execution_id=execution_id,
                        token_hash=token_hash,
                        definition=json.dumps(definition.to_json(), sort_keys=True),
                        result_metadata="{}",
                        created_at=now,
                        started_at=now,
                        updated_at=now,
                        deadline_at=now + timeout,
                    )
                ).inserted_primary_key
                assert inserted is not None  # a single-row INSERT always reports its primary key
                row_id = inserted[0]
                conn.execute(
                    insert(tokens).values(
                        token_hash=token_hash, execution_row=row_id, execution_id=execution_id, attempt=1, issued_at=now
                    )
                )
        except IntegrityError:
            # A concurrent trigger inserted the row first (PostgreSQL); report its execution.
            found = self.get(repository, commit_id, definition.id)
            if found is None:
                raise
            return found, None
        found = self.get(repository, commit_id, definition.id)
        assert found is not None
        return found, token

    def retry(self, repository: str, commit_id: str, check_id: str, timeout: timedelta | None) -> tuple[Execution, str]:
        """FAILED/LOST -> STARTING with a new execution id and token; older tokens stop working."""
        now = self.clock()
        token = new_token()
        token_hash = hash_token(token)
        execution_id = uuid.uuid4().hex
        with self._tx() as conn:
            # FOR UPDATE: on PostgreSQL the row read here (attempt, timeout) must be the row the
            # UPDATE below changes; without the lock a concurrent retry could move it on in between
            # and this token would be recorded under a stale attempt. (SQLite: BEGIN IMMEDIATE
            # already serialises the transaction; SQLAlchemy omits FOR UPDATE there.)
            row = conn.execute(
                select(executions)
                .where(
                    executions.c.repository == repository,
                    executions.c.commit_id == commit_id,
                    executions.c.check_id == check_id,
                )
                .with_for_update()
            ).first()
            if row is None:
                raise NotFound(f"check {check_id!r} has not run for commit {commit_id}", check_id=check_id)
            current = Execution.from_row(row)
            effective_timeout = timeout or current.deadline_at - current.started_at
            result = conn.execute(
                update(executions)
                .where(
                    executions.c.id == current.row_id,
                    executions.c.status.in_([s.value for s in RETRYABLE]),
                )
                .values(
                    status=Status.STARTING.value,
                    attempt=executions.c.attempt + 1,
                    execution_id=execution_id,
                    token_hash=token_hash,
                    result_metadata="{}",
                    output_url=None,
                    error=None,
                    started_at=now,
                    updated_at=now,
                    finished_at=None,
                    deadline_at=now + effective_timeout,
                )
            )
            if result.rowcount != 1:
                raise Conflict(
                    f"check {check_id!r} is {current.status.value}; only FAILED or LOST checks can be retried",
                    check_id=check_id,
                    status=current.status.value,
                )
            conn.execute(
                insert(tokens).values(
                    token_hash=token_hash,
                    execution_row=current.row_id,
                    execution_id=execution_id,
                    attempt=current.attempt + 1,
                    issued_at=now,
                )
            )
        found = self.get(repository, commit_id, check_id)
        assert found is not None
        return found, token

    def rerun(
        self, current: Execution, definition: CheckDefinition, timeout: timedelta
    ) -> tuple[Execution, str | None]:
        """Run ``current``'s check again with another definition (the one its protected branch now
        pins), from any state: the way out of "ran a definition other than the pinned one". A
        compare-and-set on the execution id: when another trigger re-ran it first, nothing
        changes and the token is ``None``."""
        now = self.clock()
        token = new_token()
        token_hash = hash_token(token)
        execution_id = uuid.uuid4().hex
        with self._tx() as conn:
            moved = conn.execute(
                update(executions)
                .where(executions.c.id == current.row_id, executions.c.execution_id == current.execution_id)
                .values(
                    status=Status.STARTING.value,
                    check_type=definition.type,
                    attempt=executions.c.attempt + 1,
                    execution_id=execution_id,
                    token_hash=token_hash,
                    definition=json.dumps(definition.to_json(), sort_keys=True),
                    result_metadata="{}",
                    output_url=None,
                    error=None,
                    started_at=now,
                    updated_at=now,
                    finished_at=None,
                    deadline_at=now + timeout,
                )
            ).rowcount
            if moved:
                conn.execute(
                    insert(tokens).values(token_hash=token_hash, execution_row=current.row_id,
                                          execution_id=execution_id, attempt=current.attempt + 1, issued_at=now)
                )
        found = self.get(current.repository, current.commit_id, current.check_id)
        assert found is not None
        return found, token if moved else None

    def mark_executing(self, row_id: int, execution_id: str, output_url: str | None) -> bool:
        """STARTING -> EXECUTING once the executor accepted the job; records its log link anyway.

        The callback may already have moved the check on (fast executors answer before their own
        HTTP response arrives): then only the output link is filled in.
        """
        now = self.clock()
        with self._tx() as conn:
            moved = conn.execute(
                update(executions)
                .where(
                    executions.c.id == row_id,
                    executions.c.execution_id == execution_id,
                    executions.c.status == Status.STARTING.value,
                )
                .values(status=Status.EXECUTING.value, updated_at=now, output_url=self._m(output_url))
            ).rowcount
            if not moved and output_url:
                conn.execute(
                    update(executions)
                    .where(
                        executions.c.id == row_id,
                        executions.c.execution_id == execution_id,
                        executions.c.output_url.is_(None),
                    )
                    .values(output_url=self._m(output_url))
                )
        return bool(moved)

    def mark_start_failed(self, row_id: int, execution_id: str, error: str) -> bool:
        """STARTING -> FAILED when calling the executor failed; the token stops working."""
        now = self.clock()
        with self._tx() as conn:
            return bool(
                conn.execute(
                    update(executions)
                    .where(
                        executions.c.id == row_id,
                        executions.c.execution_id == execution_id,
                        executions.c.status == Status.STARTING.value,
                    )
                    .values(status=Status.FAILED.value, error=self._m(error), updated_at=now, finished_at=now,
                            token_hash=None)
                ).rowcount
            )

    def complete(self, row_id: int, execution_id: str, status: Status, metadata: Mapping[str, str]) -> bool:
        """An ACTIVE execution ends without its token (the service saw the result itself, e.g.
        polling an Airflow DAG run); False when a callback, retry or sweep came first."""
        now = self.clock()
        with self._tx() as conn:
            return bool(
                conn.execute(
                    update(executions)
                    .where(
                        executions.c.id == row_id,
                        executions.c.execution_id == execution_id,
                        executions.c.status.in_([s.value for s in ACTIVE]),
                    )
                    .values(**_finished(status, self._m_map(metadata), now))
                ).rowcount
            )

    def callback(
        self,
        repository: str,
        commit_id: str,
        check_id: str,
        token: str,
        status: Status,
        metadata: Mapping[str, str],
        *,
        client: str | None = None,
    ) -> Execution:
        """Apply an executor's result if ``token`` is the check's latest, unused token.

        Raises :class:`TokenRejected` (logged and recorded) for any other token, and
        :class:`Conflict` when the execution is no longer running (e.g. LOST).
        """
        now = self.clock()
        token_hash = hash_token(token)
        with self._tx() as conn:
            won = conn.execute(
                update(executions)
                .where(
                    executions.c.repository == repository,
                    executions.c.commit_id == commit_id,
                    executions.c.check_id == check_id,
                    executions.c.token_hash == token_hash,
                    executions.c.status.in_([s.value for s in ACTIVE]),
                )
                .values(**_finished(status, self._m_map(metadata), now))
            ).rowcount
            if won == 1:
                conn.execute(update(tokens).where(tokens.c.token_hash == token_hash).values(used_at=now))
        if won == 1:
            found = self.get(repository, commit_id, check_id)
            assert found is not None
            log.info("check %s/%s@%s: callback %s accepted", repository, check_id, commit_id[:12], status.value)
            return found
        reason, error = self._rejection_reason(repository, commit_id, check_id, token_hash)
        self._record_rejection(repository, commit_id, check_id, token_hash, reason, client)
        raise error

    def _rejection_reason(
        self, repository: str, commit_id: str, check_id: str, token_hash: str
    ) -> tuple[str, Exception]:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(executions).where(
                    executions.c.repository == repository,
                    executions.c.commit_id == commit_id,
                    executions.c.check_id == check_id,
                )
            ).first()
            if row is None:
                reason = f"no execution of check {check_id!r} for commit {commit_id}"
                return reason, NotFound(reason, check_id=check_id)
            issued = conn.execute(
                select(tokens).where(tokens.c.token_hash == token_hash, tokens.c.execution_row == row.id)
            ).first()
        status = row.status
        if issued is None:
            reason = "unknown token"
        elif issued.used_at is not None:
            reason = "token already used"
        elif issued.execution_id != row.execution_id:
            reason = f"token of attempt {issued.attempt} superseded by attempt {row.attempt}"
        elif status not in {s.value for s in ACTIVE}:
            reason = f"execution is {status}; retry the check to run it again"
            return reason, Conflict(reason, check_id=check_id, status=status)
        else:  # the row changed between the UPDATE and this read: a concurrent callback won
            reason = "token already used"
        return reason, TokenRejected(reason, check_id=check_id)

    def _record_rejection(
        self, repository: str, commit_id: str, check_id: str, token_hash: str, reason: str, client: str | None = None
    ) -> None:
        fingerprint = token_hash[:12]
        who = client_key(client)
        if not self.rejection_limit.allow(who):
            with self._suppressed_lock:
                self._suppressed += 1
                first = self._suppressed == 1 or self._suppressed % 1000 == 0
            if first:
                log.warning("rejected callbacks beyond %d per minute from %s are counted, not recorded (%d so far)",
                            self.rejection_limit.per_minute, who, self._suppressed)
            return
        log.warning(
            "rejected callback from %s for %s/%s@%s (token sha256 %s...): %s",
            who,
            repository,
            check_id,
            commit_id[:12],
            fingerprint,
            reason,
        )
        with self._tx() as conn:
            inserted = conn.execute(
                insert(rejections).values(
                    at=self.clock(),
                    repository=self._m(repository)[:255],
                    commit_id=self._m(commit_id)[:128],
                    check_id=self._m(check_id)[:128],
                    token_fingerprint=fingerprint,
                    reason=self._m(reason),
                )
            ).inserted_primary_key
            assert inserted is not None  # a single-row INSERT always reports its primary key
            new_id = inserted[0]
            # Bounded: a flood of forged callbacks must not grow the table; the oldest go first.
            conn.execute(rejections.delete().where(rejections.c.id <= int(new_id) - self.max_rejections))

    def sweep(self) -> builtins.list[Execution]:
        """Move every STARTING/EXECUTING execution past its deadline to LOST; returns them."""
        now = self.clock()
        with self.engine.connect() as conn:
            candidates = conn.execute(
                select(executions.c.id, executions.c.execution_id).where(
                    executions.c.status.in_([s.value for s in ACTIVE]), executions.c.deadline_at < now
                )
            ).all()
        lost: list[Execution] = []
        for row_id, execution_id in candidates:
            with self._tx() as conn:
                moved = conn.execute(
                    update(executions)
                    .where(
                        executions.c.id == row_id,
                        executions.c.execution_id == execution_id,
                        executions.c.status.in_([s.value for s in ACTIVE]),
                        executions.c.deadline_at < now,
                    )
                    .values(
                        status=Status.LOST.value,
                        updated_at=now,
                        finished_at=now,
                        error="no callback before the check's timeout",
                    )
                ).rowcount
                if moved:
                    row = conn.execute(select(executions).where(executions.c.id == row_id)).first()
                    assert row is not None
                    lost.append(Execution.from_row(row))
        return lost
