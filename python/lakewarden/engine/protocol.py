"""What a command and the engine say to each other on the engine's Unix socket, and what must
agree between them for a run to go there.

Frames are JSON objects, one a line (UTF-8). A command sends one request::

    {"version": 1, "run": {"argv": [...], "cwd": "...", "env": {...}, "code": "...", "settings": {...}}}
    {"version": 1, "control": "status" | "stop"}

and, while its run goes on, may send ``{"cancel": true}`` (Ctrl-C; closing the socket does the
same). The engine answers a run with ``{"out": "..."}`` and ``{"err": "..."}`` frames as the run
writes to its standard output and error, then ``{"exit": N}``; or with ``{"refused": "why"}``
when the run must not go there (the command then runs it itself). A control request gets one
``{"status": {...}}`` frame.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

VERSION = 1
#: the commands a command hands to the engine: the jobs that run on Spark. Every other command
#: (checks, extract, sweep, sstable, demo, warm-up, engine itself) runs in its own process.
FORWARDED = frozenset({"lifecycle", "gc"})
#: the environment a JVM and a Spark session take when they start: an engine started with other
#: values would run the command with settings it did not ask for
SETTINGS_ENV = (
    "LAKEWARDEN_SPARK_CONF",
    "LAKEWARDEN_DRIVER_MEMORY",
    "LAKEWARDEN_SHUFFLE_PARTITIONS",
    "LAKEWARDEN_SPARK_MASTER",
    "LAKEWARDEN_SPARK_LOG_LEVEL",
    "LAKEWARDEN_JVM_JIT",
    "LAKEWARDEN_JVM_CACHE",
    "LAKEWARDEN_PROJECT_DIR",
    "JAVA_HOME",
    "LAKEWARDEN_JAVA_HOME",
    "SPARK_HOME",
    "PYSPARK_PYTHON",
)
#: the longest path a Unix socket can have (``sun_path`` is 108 bytes on Linux, with its NUL)
MAX_SOCKET_PATH = 107


class EngineUnavailable(Exception):
    """The engine cannot take this run: not there, not answering, or refusing it (the reason)."""


def engine_settings() -> dict[str, str | None]:
    """This process's engine settings: the interpreter and :data:`SETTINGS_ENV`."""
    from lakewarden.runtime.java_runtime import java_home_setting

    found = {name: os.environ.get(name) for name in SETTINGS_ENV}
    # the runtime a JVM started here would take (lakewarden.runtime.java_runtime): an engine has
    # set JAVA_HOME to its choice, a command that hands its run over has not started a JVM
    found["JAVA_HOME"] = java_home_setting()
    return {"python": sys.executable, **found}


def code_fingerprint() -> str:
    """A digest of the lakewarden code and the dbt project this process would run (every file's
    path, size and modification time): an engine started before an edit or an upgrade runs other
    code, and must not take the run."""
    from lakewarden.runtime.project import PROJECT_PARTS, project_dir

    package = Path(__file__).resolve().parent.parent
    roots = [package] + [project_dir() / part for part in PROJECT_PARTS]
    digest = hashlib.sha256()
    for root in roots:
        paths = [root] if root.is_file() else sorted(root.rglob("*")) if root.is_dir() else []
        for path in paths:
            if "__pycache__" in path.parts or not path.is_file():
                continue
            stat = path.stat()
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def check_socket_path(path: Path) -> Path:
    """``path`` as an absolute path a Unix socket can have, or BadInput naming the variable."""
    from lakewarden.errors import BadInput

    absolute = path.expanduser().absolute()
    if len(os.fsencode(absolute)) > MAX_SOCKET_PATH:
        raise BadInput(f"{absolute} is longer than a Unix socket's path may be ({MAX_SOCKET_PATH} bytes)", field="LAKEWARDEN_ENGINE")
    return absolute


def send(connection: socket.socket, frame: dict[str, Any]) -> None:
    connection.sendall(json.dumps(frame, separators=(",", ":")).encode() + b"\n")


class Frames:
    """The frames arriving on a connection, one :meth:`next` at a time (None once it closed)."""

    def __init__(self, connection: socket.socket) -> None:
        self._reader = connection.makefile("rb")

    def next(self) -> dict[str, Any] | None:
        line = self._reader.readline()
        if not line:
            return None
        frame = json.loads(line)
        if not isinstance(frame, dict):
            raise ValueError("a frame is a JSON object")
        return frame


def connect(path: Path, *, timeout: float = 5.0) -> socket.socket:
    """A connection to the engine at ``path``; EngineUnavailable when nothing listens there."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(timeout)
    try:
        connection.connect(str(path))
    except OSError as exc:
        connection.close()
        raise EngineUnavailable(f"no engine at {path} ({exc.strerror or exc})") from None
    connection.settimeout(None)
    return connection


def control(path: Path, what: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """Ask the engine at ``path`` for its ``status`` or to ``stop``; its status frame."""
    connection = connect(path, timeout=timeout)
    try:
        connection.settimeout(timeout)
        send(connection, {"version": VERSION, "control": what})
        frame = Frames(connection).next()
    except (OSError, ValueError) as exc:
        raise EngineUnavailable(f"the engine at {path} did not answer ({exc})") from None
    finally:
        connection.close()
    status = None if frame is None else frame.get("status")
    if not isinstance(status, dict):
        raise EngineUnavailable(f"the engine at {path} did not answer")
    return status
