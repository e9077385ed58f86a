"""The engine's loop: a warm Spark session, one run at a time, each as the command would run it.

A run is ``lakewarden``'s own command line (:func:`lakewarden.cli.main`) called in this process
with the command's arguments, working directory and environment, its standard output and error
sent back as frames (:mod:`lakewarden.engine.protocol`). The session, dbt's parsed project and
the JVM's compiled code stay between runs; nothing else does: each run registers its snapshot
and state tables, holds its intermediates under its own names and restores the session's
settings when it ends, as a run of the Python API does in a long-lived caller.

Runs wait for each other: a command connecting while a run goes on waits in the socket's queue.
A run's Ctrl-C (or its command going away) cancels the run's Spark jobs and interrupts it; the
engine then takes the next one.
"""

from __future__ import annotations

import _thread
import io
import logging
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakewarden.engine.protocol import VERSION, Frames, code_fingerprint, engine_settings, send

log = logging.getLogger(__name__)

#: how long a command may take to send its request once connected
REQUEST_TIMEOUT_SECONDS = 30.0


class Relay(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr`` of the engine: what a run writes goes to its command as
    frames of ``kind``; between runs, to the engine's own stream."""

    def __init__(self, kind: str, fallback: Any) -> None:
        super().__init__()
        self.kind = kind
        self.fallback = fallback
        self._lock = threading.Lock()
        self._connection: socket.socket | None = None

    def attach(self, connection: socket.socket | None) -> None:
        with self._lock:
            self._connection = connection

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False  # progress comes as plain lines (lakewarden.runtime.progress)

    def write(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            connection = self._connection
            if connection is None:
                self.fallback.write(text)
                return len(text)
            try:
                send(connection, {self.kind: text})
            except OSError:
                self._connection = None  # the command went away: its watcher cancels the run
        return len(text)

    def flush(self) -> None:
        if self._connection is None:
            self.fallback.flush()


@dataclass
class Engine:
    """What the engine knows about itself, for ``status`` and for accepting runs."""

    socket_path: Path
    idle_seconds: float | None
    started_at: float = field(default_factory=time.time)
    runs: int = 0
    #: what the warm-up did (lakewarden.engine.warm_up.WarmUp.as_status); None: no warm-up
    warm_up: dict[str, float | int] | None = None
    code: str = field(default_factory=code_fingerprint)
    settings: dict[str, str | None] = field(default_factory=engine_settings)

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "socket": str(self.socket_path),
            "started_at": self.started_at,
            "runs": self.runs,
            "idle_seconds": self.idle_seconds,
            "warm_up": self.warm_up,
            "code": self.code,
        }

    def refusal(self, run: dict[str, Any]) -> str | None:
        """Why this engine must not take ``run``; None when it may."""
        if run.get("code") != self.code:
            return "it runs other lakewarden code or another dbt project (started before an edit or an upgrade?)"
        theirs = run.get("settings") or {}
        differ = sorted(name for name in set(self.settings) | set(theirs) if self.settings.get(name) != theirs.get(name))
        if differ:
            return f"it was started with other engine settings ({', '.join(differ)})"
        return None


def serve(
    socket_path: Path,
    *,
    state: Path,
    jit: str,
    idle_seconds: float | None,
    warm: bool = True,
) -> int:
    """Start the session, warm it up (``warm``: lakewarden.engine.warm_up), listen on
    ``socket_path`` and run what comes until told to stop, or until no command came for
    ``idle_seconds`` (None: never). Returns the process's exit status.

    The warm-up comes before the socket listens: a command started meanwhile runs in its own
    process (one line says so) instead of waiting behind it, and ``start`` returns once the
    engine is warm."""
    from lakewarden.runtime.spark_session import get_or_create

    engine = Engine(socket_path, idle_seconds)  # this process's settings, before Spark sets any
    _claim(socket_path)  # before the JVM starts: a second engine on one socket fails at once
    spark = get_or_create(state, jit=jit, write_archive=False)
    if warm:
        from lakewarden.engine.warm_up import warm_up

        def say(line: str) -> None:
            print(f"lakewarden: {line}", file=sys.stderr, flush=True)

        try:
            engine.warm_up = warm_up(state, say=say).as_status()
        except KeyboardInterrupt:
            return 130
        say(f"engine warm-up: {engine.warm_up['runs']} runs ({engine.warm_up['failed']} failed) in {engine.warm_up['seconds']} s")
    listener = _listen(socket_path)
    stdout, stderr = Relay("out", sys.stdout), Relay("err", sys.stderr)
    sys.stdout, sys.stderr = stdout, stderr
    log.info("engine %s ready (pid %d)", socket_path, os.getpid())
    try:
        while True:
            listener.settimeout(idle_seconds)
            try:
                connection, _ = listener.accept()
            except socket.timeout:
                stdout.fallback.write(f"lakewarden: engine {socket_path}: no run for {idle_seconds:.0f} s, stopping\n")
                return 0
            with connection:
                try:
                    if not _serve_one(engine, spark, connection, (stdout, stderr)):
                        return 0
                finally:
                    _hang_up(connection)
    except KeyboardInterrupt:
        return 130
    finally:
        sys.stdout, sys.stderr = stdout.fallback, stderr.fallback
        listener.close()
        socket_path.unlink(missing_ok=True)


def _claim(path: Path) -> None:
    """Remove a socket file an engine that died left at ``path``; BadInput when one listens there."""
    from lakewarden.engine.protocol import EngineUnavailable, connect
    from lakewarden.errors import BadInput

    if path.exists() or path.is_symlink():
        try:
            connect(path, timeout=2.0).close()
        except EngineUnavailable:
            path.unlink()  # nothing listens: a dead engine's
        else:
            raise BadInput(f"an engine is running at {path} already", field="--socket")


def _listen(path: Path) -> socket.socket:
    """A listening socket at ``path`` that only this user can open."""
    _claim(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    before = os.umask(0o177)  # rw for this user only: a run goes with its user's environment
    try:
        listener.bind(str(path))
    finally:
        os.umask(before)
    listener.listen(16)
    return listener


def _serve_one(engine: Engine, spark: Any, connection: socket.socket, relays: tuple[Relay, Relay]) -> bool:
    """One request on ``connection``; False when it asked the engine to stop."""
    connection.settimeout(REQUEST_TIMEOUT_SECONDS)
    frames = Frames(connection)
    try:
        request = frames.next()
    except (OSError, ValueError):
        return True  # a client that sent nothing usable: nothing to answer
    connection.settimeout(None)
    if request is None or request.get("version") != VERSION:
        _try_send(connection, {"refused": f"protocol version {None if request is None else request.get('version')!r}, not {VERSION}"})
        return True
    what = request.get("control")
    if what in ("status", "stop"):
        _try_send(connection, {"status": {**engine.status(), "stopping": what == "stop"}})
        return bool(what != "stop")
    run = request.get("run")
    if not isinstance(run, dict) or not isinstance(run.get("argv"), list):
        _try_send(connection, {"refused": "not a run request"})
        return True
    reason = engine.refusal(run)
    if reason is not None:
        _try_send(connection, {"refused": reason})
        return True
    engine.runs += 1
    status = _run(spark, connection, frames, run, relays)
    _try_send(connection, {"exit": status})
    return True


def _hang_up(connection: socket.socket) -> None:
    """End the connection both ways: the command reads its end, and the run's watcher (blocked
    reading it) wakes up and ends; closing alone does neither while a reader holds it."""
    try:
        connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # the command hung up first


def _try_send(connection: socket.socket, frame: dict[str, Any]) -> None:
    try:
        send(connection, frame)
    except OSError:
        pass  # the command went away


def _run(spark: Any, connection: socket.socket, frames: Frames, run: dict[str, Any], relays: tuple[Relay, Relay]) -> int:
    """``lakewarden ARGV`` in this process, in the command's directory and environment."""
    from lakewarden.cli import main

    lock = threading.Lock()
    running = {"now": True}

    def watch() -> None:
        # the command's Ctrl-C (a cancel frame) or its going away: the run's jobs stop now
        try:
            while True:
                frame = frames.next()
                if frame is None or frame.get("cancel"):
                    break
        except (OSError, ValueError):
            pass
        with lock:
            if running["now"]:
                spark.sparkContext.cancelAllJobs()
                _thread.interrupt_main()

    environment, directory = dict(os.environ), os.getcwd()
    env = {str(key): str(value) for key, value in (run.get("env") or {}).items()}
    env.pop("LAKEWARDEN_ENGINE", None)  # the run itself runs here, not in an engine again
    for relay in relays:
        relay.attach(connection)
    root = logging.getLogger()
    handlers = list(root.handlers)
    for handler in handlers:  # the run's own logging (its -v), as in a process of its own
        root.removeHandler(handler)
    status = 1
    try:
        os.environ.clear()
        os.environ.update(env)
        threading.Thread(target=watch, name="lakewarden-engine-watch", daemon=True).start()
        try:
            os.chdir(run.get("cwd") or directory)
            status = int(main([str(arg) for arg in run["argv"]]) or 0)
        except OSError as exc:  # the command's directory is gone: as a process started there would fail
            sys.stderr.write(f"lakewarden: cannot run in {run.get('cwd')}: {exc.strerror or exc}\n")
            status = 1
        except SystemExit as exc:  # argparse: usage errors (2) and --help (0)
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except KeyboardInterrupt:
            sys.stderr.write("lakewarden: interrupted\n")
            status = 1
        finally:
            with lock:
                running["now"] = False
    except KeyboardInterrupt:  # a cancel that came as the run ended
        status = 1
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        os.environ.clear()
        os.environ.update(environment)
        os.chdir(directory)
        for relay in relays:
            relay.attach(None)
    return status
