"""``lakewarden engine start|serve|stop|status``: keep a warm Spark driver for the jobs.

``start`` runs ``serve`` in the background (its log beside the socket, ``SOCKET.log``) and
returns once the engine answers; ``serve`` runs it in the foreground (under a service manager);
``stop`` ends it after the run it is doing; ``status`` prints what it is doing as JSON (exit 1
when no engine answers). Commands use it when ``LAKEWARDEN_ENGINE`` names its socket.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from lakewarden.engine.protocol import EngineUnavailable, check_socket_path, control

#: how long ``start`` waits for a new engine's session (a JVM start, ~6-15 s on 2 cores) and
#: its warm-up (lakewarden.engine.warm_up: 60-110 s on 2 cores)
START_TIMEOUT_SECONDS = 600.0
DEFAULT_IDLE_SECONDS = 3600.0


def default_socket() -> Path:
    """``$LAKEWARDEN_ENGINE``, else ``engine/engine.sock`` in the user's cache directory."""
    from lakewarden.runtime.user_cache import user_cache_dir

    named = os.environ.get("LAKEWARDEN_ENGINE", "").strip()
    return Path(named) if named else user_cache_dir() / "engine" / "engine.sock"


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = subparsers.add_parser(
        "engine",
        help="keep a warm Spark driver that job commands hand their runs to (LAKEWARDEN_ENGINE)",
        description="A long-lived process with the Spark session, dbt's project and the JVM's compiled code warm. "
        "A job command (lifecycle, gc) run with LAKEWARDEN_ENGINE=SOCKET runs there, as if in its own process, "
        "without paying a process's start: see docs/operations.md, 'The engine'.",
    )
    actions = parser.add_subparsers(dest="engine_action", metavar="ACTION", required=True)
    for name, text in (
        ("start", "start an engine in the background; returns once it answers"),
        ("serve", "run an engine in the foreground (a service manager's form of start)"),
        ("stop", "stop the engine once its current run (if any) ends"),
        ("status", "print the engine's status as JSON; exit 1 when none answers"),
    ):
        action = actions.add_parser(name, help=text, description=text)
        action.add_argument("--socket", type=Path, default=None,
                            help="its Unix socket (default: $LAKEWARDEN_ENGINE, else engine/engine.sock in the user's cache directory)")
        if name in ("start", "serve"):
            action.add_argument("--scratch", type=Path, default=None,
                                help="the engine's own scratch directory (default: SOCKET.state, with the session's warehouse); each run keeps using its own --state")
            action.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_SECONDS, metavar="SECONDS",
                                help=f"stop after this long with no run (default {DEFAULT_IDLE_SECONDS:.0f}; 0: never)")
            action.add_argument("--jit", choices=("quick", "full"), default="full",
                                help="the JVM's compilers: full (default: a long-lived JVM's optimised code pays back) or quick")
            action.add_argument("--warm-up", action=argparse.BooleanOptionalAction, default=True,
                                help="before taking runs, run every job on a generated sample so the first runs find "
                                "their code compiled (default; 60-110 s on 2 cores); --no-warm-up takes runs at once")
        action.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = check_socket_path(args.socket or default_socket())
    if args.engine_action == "status":
        try:
            print(json.dumps(control(path, "status"), indent=2, sort_keys=True))
        except EngineUnavailable as exc:
            print(f"lakewarden engine: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.engine_action == "stop":
        try:
            status = control(path, "stop")
        except EngineUnavailable as exc:
            print(f"lakewarden engine: {exc}", file=sys.stderr)
            return 1
        print(f"lakewarden engine: stopping the engine at {path} (pid {status['pid']}, {status['runs']} runs)")
        return 0
    from lakewarden.errors import BadInput

    if args.idle_timeout < 0:
        raise BadInput("must be 0 (never) or a number of seconds", field="--idle-timeout")
    state = (args.scratch or path.with_name(path.name + ".state")).expanduser().absolute()
    if args.engine_action == "serve":
        from lakewarden.engine.server import serve

        return serve(path, state=state, jit=args.jit, idle_seconds=args.idle_timeout or None, warm=args.warm_up)
    return _start(path, state, args)


def _start(path: Path, state: Path, args: argparse.Namespace) -> int:
    """``serve`` as a process of its own session (it outlives this command and its terminal)."""
    from lakewarden.errors import BadInput

    try:
        control(path, "status", timeout=2.0)
    except EngineUnavailable:
        pass
    else:
        raise BadInput(f"an engine is running at {path} already", field="--socket")
    path.parent.mkdir(parents=True, exist_ok=True)
    log_path = path.with_name(path.name + ".log")
    command = [sys.executable, "-m", "lakewarden", "engine", "serve", "--socket", str(path), "--scratch", str(state),
               "--idle-timeout", str(args.idle_timeout), "--jit", args.jit, "--warm-up" if args.warm_up else "--no-warm-up"]
    environment = {key: value for key, value in os.environ.items() if key != "LAKEWARDEN_ENGINE"}
    # only its user reads the log, as the socket (a run's output lands there if its command went away)
    with open(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log_file:
        os.chmod(log_path, 0o600)  # a log an earlier engine left with other permissions
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                                   start_new_session=True, env=environment)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    warming = " and warming up on a generated sample (--no-warm-up skips it)" if args.warm_up else ""
    print(f"lakewarden engine: starting at {path}{warming} (pid {process.pid}, log {log_path})...", file=sys.stderr, flush=True)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            print(f"lakewarden engine: the engine exited with status {process.returncode} before it answered: see {log_path}",
                  file=sys.stderr)
            return 1
        try:
            status = control(path, "status", timeout=2.0)
        except EngineUnavailable:
            time.sleep(0.2)
            continue
        warmed = status.get("warm_up")
        after = f" after a warm-up of {warmed['runs']} runs in {warmed['seconds']} s" if warmed else ""
        print(f"lakewarden engine: ready at {path} (pid {status['pid']}){after}; commands use it with LAKEWARDEN_ENGINE={path}")
        return 0
    process.terminate()
    print(f"lakewarden engine: no answer within {START_TIMEOUT_SECONDS:.0f} s; stopped it: see {log_path}", file=sys.stderr)
    return 1
