"""Fixtures of the branch-checks tests: snapshot repositories, a webhook receiver, a live service.

Everything listens on 127.0.0.1 only and is stopped by the fixtures, also when a test fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from checks_support import LiveService, SnapshotBuilder, WebhookReceiver, start_service


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


@pytest.fixture
def service_factory(tmp_path: Path) -> Iterator[Callable[..., LiveService]]:
    started: list[LiveService] = []

    def factory(snapshot_dir: Path, config: dict[str, Any] | None = None, **kwargs: Any) -> LiveService:
        live = start_service(snapshot_dir, tmp_path / f"state-{len(started)}", config or {}, **kwargs)
        started.append(live)
        return live

    yield factory
    for live in started:
        live.stop()
