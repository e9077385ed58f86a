"""Fixtures of the branch-checks tests: snapshot repositories, a webhook receiver, a live service.

Everything listens on 127.0.0.1 only and is stopped by the fixtures, also when a test fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import checks_support
from checks_support import LiveService, SnapshotBuilder, WebhookReceiver, start_service
from lakewarden.checks.store import Store
from postgres_support import PostgresCluster, postgres_cluster_or_skip


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "airflow: runs a real Apache Airflow 3 (needs scripts/setup-airflow.sh)")
    config.addinivalue_line("markers", "browser: drives the commit page in headless Chromium")


@pytest.fixture
def snapshot(tmp_path: Path) -> SnapshotBuilder:
    return SnapshotBuilder(tmp_path / "snapshot", tmp_path / "namespace")


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as r:
        yield r


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 for the whole session (see postgres_support)."""
    cluster = postgres_cluster_or_skip()
    try:
        yield cluster
    finally:
        cluster.stop()
        cluster.remove()


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """A fresh, empty database of the session's cluster, as a ``postgresql://`` URL."""
    return postgres_cluster.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The state store's database, once per backend: a SQLite file, then a PostgreSQL database.

    The cluster is started only when a PostgreSQL case runs (-k sqlite needs no server).
    """
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def service_factory(tmp_path: Path) -> Iterator[Callable[..., LiveService]]:
    """Starts services; ``db_url=`` puts a service's store on that database instead of SQLite."""
    started: list[LiveService] = []

    def factory(
        snapshot_dir: Path, config: dict[str, Any] | None = None, *, db_url: str | None = None, **kwargs: Any
    ) -> LiveService:
        state_dir = tmp_path / f"state-{len(started)}"
        if db_url is None:
            live = start_service(snapshot_dir, state_dir, config or {}, **kwargs)
        else:
            # start_service opens its own SQLite file; hand it a store on db_url instead.
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(checks_support, "Store", lambda _default_url, **kw: Store(db_url, **kw))
                live = start_service(snapshot_dir, state_dir, config or {}, **kwargs)
        started.append(live)
        return live

    yield factory
    for live in started:
        live.stop()
