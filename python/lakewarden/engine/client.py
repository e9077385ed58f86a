"""A command's side of the engine: hand the run over, print what it prints, exit with its status.

Called first thing by :func:`lakewarden.cli.main`, before the parser imports every command's
module: a command that goes to the engine imports nothing else (its process costs a Python
start and this module, about 0.1 s). Whatever goes wrong before the engine took the run (no
engine there, another code version, other settings) is one line on stderr and the command runs
in its own process instead: the engine is a way to run faster, never a way to fail.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from lakewarden.engine.protocol import (
    FORWARDED,
    VERSION,
    EngineUnavailable,
    Frames,
    check_socket_path,
    code_fingerprint,
    connect,
    engine_settings,
    send,
)

if TYPE_CHECKING:  # pragma: no cover
    import socket

ENV = "LAKEWARDEN_ENGINE"


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs (its first word that is not an option), or None."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def forwarded_run(argv: Sequence[str]) -> int | None:
    """The exit status of ``lakewarden ARGV`` run by the engine ``LAKEWARDEN_ENGINE`` names;
    None when this process is to run it (no engine named, a command the engine does not run,
    or an engine that cannot take it: said on stderr)."""
    named = os.environ.get(ENV, "").strip()
    if not named or command_of(argv) not in FORWARDED or "-h" in argv or "--help" in argv:
        return None
    from lakewarden.errors import BadInput

    try:
        path = check_socket_path(Path(named))
        connection = connect(path)
    except (BadInput, EngineUnavailable) as exc:
        print(f"lakewarden: {ENV}: {exc}: running in this process", file=sys.stderr)
        return None
    request = {
        "version": VERSION,
        "run": {
            "argv": list(argv),
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "code": code_fingerprint(),
            "settings": engine_settings(),
        },
    }
    with connection:
        try:
            send(connection, request)
            return _follow(connection, path)
        except _Refused as refused:
            print(f"lakewarden: {ENV}: the engine at {path} did not take this run ({refused}): running in this process", file=sys.stderr)
            return None
        except OSError as exc:
            print(f"lakewarden: {ENV}: the engine at {path} went away ({exc.strerror or exc})", file=sys.stderr)
            return 1


class _Refused(Exception):
    pass


def _follow(connection: "socket.socket", path: Path) -> int:
    """Print the run's output as it comes; its exit status. Ctrl-C cancels the run (the engine
    stops its jobs and the run ends as an interrupted command does); a second one leaves it."""
    frames = Frames(connection)
    interrupted = False
    while True:
        try:
            frame = frames.next()
        except KeyboardInterrupt:
            if interrupted:
                print("lakewarden: interrupted (the engine is stopping the run)", file=sys.stderr)
                return 1
            interrupted = True
            try:
                send(connection, {"cancel": True})
            except OSError:
                return 1
            continue
        if frame is None:
            print(f"lakewarden: {ENV}: the engine at {path} stopped during the run", file=sys.stderr)
            return 1
        if "out" in frame:
            sys.stdout.write(str(frame["out"]))
            sys.stdout.flush()
        elif "err" in frame:
            sys.stderr.write(str(frame["err"]))
            sys.stderr.flush()
        elif "refused" in frame:
            raise _Refused(str(frame["refused"]))
        elif "exit" in frame:
            return int(frame["exit"])
