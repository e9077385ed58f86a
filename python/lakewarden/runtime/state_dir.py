"""The state directory: where a lakewarden process keeps what outlives it (the scratch
warehouse of its Spark session, the state tables and run history, report and mark copies, the
checks service's SQLite store and API token file).

One rule, used by every command (docs/contract.md section 1): ``--state DIR``, else
``$LAKEWARDEN_HOME``, else ``./.lakewarden``. It lives here, apart from the Spark session, so the
checks service and its client resolve the same directory without importing Spark.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

DEFAULT_STATE_DIR = ".lakewarden"
STATE_ENV = "LAKEWARDEN_HOME"


def state_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--state``, else ``LAKEWARDEN_HOME``, else ``./.lakewarden``; absolute, ``~`` expanded
    (a relative state dir must mean the same directory after the process changes directory)."""
    raw = explicit or os.environ.get(STATE_ENV) or DEFAULT_STATE_DIR
    return Path(raw).expanduser().resolve()


def add_state_option(parser: argparse.ArgumentParser, holds: str) -> None:
    """The ``--state DIR`` option of a command, one help text for all: ``holds`` says what this
    command keeps there or reads from there."""
    parser.add_argument(
        "--state",
        metavar="DIR",
        help=f"state directory: {holds} (default ${STATE_ENV}, else ./{DEFAULT_STATE_DIR})",
    )
