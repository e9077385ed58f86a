"""The state dir's run history, ``STATE/history/runs.jsonl``: one line per finished run of any
job (its id, job, repository, namespace, clock, counts and outcome).

Two readers: ``report.html``'s trend (lakewarden.reports.page) and, before a job's JVM starts,
the hint that the run continues from an earlier one (lakewarden.jobs.common.start_job). Neither
decides a mark: each job finds the run it continues from in its own state tables. Light on
purpose (json, no pyarrow, no Spark): a job reads it before anything else is imported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

#: the history file, under the state dir
HISTORY = Path("history") / "runs.jsonl"
#: what a line keeps of a run's summary.json
RECORDED_FIELDS = (
    "run_id", "job", "repository_id", "storage_namespace", "dry_run", "now", "started_at", "finished_at",
    "num_marked", "bytes_marked", "num_deleted", "num_failed", "success", "status",
)


def record_run(state: Path, summary: dict[str, Any]) -> None:
    """Append one finished run to ``STATE/history/runs.jsonl`` (the trend's source)."""
    path = state / HISTORY
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({key: summary.get(key) for key in RECORDED_FIELDS}, default=str, sort_keys=True) + "\n")


def recorded_runs(state: Path | None, job: Any, storage_namespace: Any) -> Iterator[dict[str, Any]]:
    """The finished runs the history holds of ``job`` on ``storage_namespace``, in the order
    recorded. A line that is not a JSON object is skipped: the history draws a trend and gives
    a hint, it decides nothing."""
    if state is None or not (state / HISTORY).is_file():
        return
    with open(state / HISTORY, encoding="utf-8") as handle:
        for line in handle:
            try:
                run = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(run, dict) and run.get("job") == job and run.get("storage_namespace") == storage_namespace:
                yield run


def ran_before(state: Path, job: str, storage_namespace: str) -> bool:
    """Whether ``job`` finished a run successfully on ``storage_namespace`` with this state dir:
    the next run of an incremental job likely continues from it and reads what changed since
    (the JVM's compiler follows: lakewarden.runtime.spark_session.jit_mode)."""
    return any(run.get("success") is True for run in recorded_runs(state, job, storage_namespace))
