"""A throwaway PostgreSQL cluster for the state store tests (Debian's ``postgresql`` package).

``initdb`` into a fresh temporary directory, ``pg_ctl start`` listening on 127.0.0.1 only (a free
port, the Unix socket inside that directory, password authentication over TCP), one new database
per test, and ``pg_ctl stop -m immediate`` plus removal of the directory at the end, always.
PostgreSQL refuses to run as root: as root, the directory is given to the ``postgres`` system user
and the server binaries run through ``runuser -u postgres --``.

Missing binaries skip the PostgreSQL tests with the reason, except under CI (``CI=true``), where
they fail: CI must not silently test SQLite only.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

SERVER_USER = "postgres"
INSTALL_HINT = "install Debian's postgresql package (scripts/test.sh does, as root)"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def unavailable(reason: str) -> None:
    """Fail under CI, skip elsewhere: the PostgreSQL tests cannot run here."""
    message = f"PostgreSQL tests cannot run: {reason}"
    if in_ci():
        pytest.fail(f"{message} (CI=true, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(message)


def find_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding initdb and pg_ctl (or PATH's)."""

    def version(p: Path) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", p.parent.name))

    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    for bin_dir in candidates:
        if (bin_dir / "initdb").is_file() and (bin_dir / "pg_ctl").is_file():
            return bin_dir
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and Path(initdb).parent == Path(pg_ctl).parent:
        return Path(initdb).parent
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresCluster:
    """One running cluster; :meth:`new_database` hands out empty databases by URL."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.as_root = os.geteuid() == 0
        self.base = Path(tempfile.mkdtemp(prefix="lakewarden-pg-"))  # mode 0700
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.password = secrets.token_hex(16)
        self.port = 0
        self.started = False
        self._databases = 0
        if self.as_root:
            try:
                user = pwd.getpwnam(SERVER_USER)
            except KeyError:
                self.remove()
                unavailable(f"running as root and there is no {SERVER_USER!r} system user to run the server")
            os.chown(self.base, user.pw_uid, user.pw_gid)

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self.as_root:
            command = ["runuser", "-u", SERVER_USER, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)

    def _server_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return "(no server log)"

    def start(self) -> None:
        pwfile = self.base / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.as_root:
            user = pwd.getpwnam(SERVER_USER)
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        pwfile.chmod(0o600)
        init = self._run(
            "initdb", "-D", str(self.data), "-U", SERVER_USER, f"--pwfile={pwfile}",
            "--auth-host=scram-sha-256", "--auth-local=peer", "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        pwfile.unlink()
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed ({init.returncode}): {init.stderr or init.stdout}")
        last_error = ""
        for _ in range(5):  # the free port may be taken between probing and binding it
            self.port = free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.base} "
                "-c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            self.started = True  # from here on, stop() is attempted whatever happens
            result = self._run(
                "pg_ctl", "start", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "90", "-o", options
            )  # fmt: skip
            if result.returncode == 0:
                return
            last_error = f"{result.stderr or result.stdout}\n{self._server_log()}"
            self.stop()
            if "could not bind" not in last_error and "already in use" not in last_error:
                break
        raise RuntimeError(f"pg_ctl start failed: {last_error}")

    def url(self, database: str, driver: str = "postgresql") -> str:
        return f"{driver}://{SERVER_USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database and return its ``postgresql://`` URL."""
        import psycopg

        self._databases += 1
        name = f"store_{self._databases}"
        with psycopg.connect(self.url("postgres"), autocommit=True, connect_timeout=30) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.started:
            self.started = False
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w", "-t", "60")

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def postgres_cluster_or_skip() -> PostgresCluster:
    """A started cluster, or skip (fail under CI) saying why there is none."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        unavailable(f"no initdb/pg_ctl under /usr/lib/postgresql/*/bin or on PATH; {INSTALL_HINT}")
    assert bin_dir is not None
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        unavailable("running as root, and runuser (util-linux) is missing to run the server as postgres")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        unavailable("the psycopg driver is not installed (pip install --constraint constraints.txt -e .)")
    cluster = PostgresCluster(bin_dir)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        cluster.remove()
        raise
    return cluster
