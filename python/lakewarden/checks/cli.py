"""``lakewarden checks ...``: the client commands and ``checks serve`` (docs/contract.md §1, §6)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence, cast

from lakewarden.checks.client import (
    DEFAULT_PORT,
    TOKEN_FILE,
    ChecksClient,
    find_token,
    parse_ref_uri,
)
from lakewarden.errors import BadInput
from lakewarden.runtime.state_dir import add_state_option, state_dir

log = logging.getLogger(__name__)

ACTIVE = {"STARTING", "EXECUTING"}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    checks = subparsers.add_parser("checks", help="branch checks: run, list, retry, show; serve the service")
    sub = checks.add_subparsers(dest="checks_command", metavar="SUBCOMMAND", required=True)

    def client_parser(name: str, help_text: str, func: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("ref_uri", metavar="lakefs://REPO/REF", help="branch, tag or commit to check")
        p.add_argument("--id", dest="check_id", metavar="CHECK", help="only this check")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--server", metavar="URL", help="checks service (default $LAKEWARDEN_CHECKS_URL or %(default)s)")
        p.add_argument("--token", metavar="TOKEN", help="API token (default $LAKEWARDEN_CHECKS_TOKEN)")
        add_state_option(p, "where a local server wrote its API token file")
        p.set_defaults(func=func)
        return p

    run = client_parser("run", "trigger the checks of a commit (those not run yet)", cmd_run)
    run.add_argument(
        "--wait", type=float, metavar="SECONDS", help="wait for the checks to finish; exit 1 unless all succeed"
    )
    client_parser("list", "list the checks of a commit", cmd_list)
    client_parser("retry", "retry FAILED or LOST checks (all of them, or --id)", cmd_retry)
    client_parser("show", "details of the checks: metadata, errors, log links", cmd_show)

    serve = sub.add_parser("serve", help="run the branch checks service (HTTP API, merge gate, web page)")
    source = serve.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", metavar="DIR", help="repository snapshot directory")
    source.add_argument("--lakefs-endpoint", metavar="URL", help="lakeFS server (credentials as lakectl finds them: LAKECTL_CREDENTIALS_* or ~/.lakectl.yaml)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default %(default)s; 0 picks one)")
    serve.add_argument("--db", metavar="URL", help="SQLAlchemy URL (default: SQLite file under the state dir)")
    serve.add_argument("--config", metavar="FILE", help="service config: protected branches, executors, API token")
    add_state_option(serve, "the SQLite store (without --db) and the API token file")
    serve.set_defaults(func=cmd_serve)


# -- output --------------------------------------------------------------------------------------


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    return "\n".join(lines)


def short_time(ts: str | None) -> str:
    return ts.replace("T", " ")[:19] if ts else "-"


def print_checks(report: dict[str, Any], *, triggered: bool = False) -> None:
    print(f"{report['repository']}/{report['ref']} @ {report['commit_id']}")
    if not report["checks"]:
        print("no checks have run for this commit")
        return
    header = ["CHECK", "STATUS", "ATTEMPT", "STARTED", "FINISHED", "EXECUTION"]
    rows = []
    for c in report["checks"]:
        row = [c["id"], c["status"], str(c["attempt"]), short_time(c["started_at"]), short_time(c["finished_at"]), c["execution_id"]]
        if triggered:
            row.append("yes" if c.get("triggered") else "no (already ran)")
        rows.append(row)
    print(table(rows, header + (["TRIGGERED"] if triggered else [])))
    print_merge(report)


def print_merge(report: dict[str, Any]) -> None:
    """One line per protected branch: may this commit merge into it?"""
    for m in report.get("merge") or []:
        if m["mergeable"]:
            print(f"mergeable into {m['branch']}: all {len(m['mandatory_checks'])} mandatory checks passed")
        else:
            why = "; ".join(r["reason"] for r in m["reasons"])
            print(f"NOT mergeable into {m['branch']}: {why}")


def print_details(checks: list[dict[str, Any]]) -> None:
    for i, c in enumerate(checks):
        if i:
            print()
        print(f"check {c['id']} ({c['type']}){': ' + c['description'] if c.get('description') else ''}")
        fields = [
            ("status", c["status"]),
            ("attempt", str(c["attempt"])),
            ("execution", c["execution_id"]),
            ("commit", c["commit_id"]),
            ("action", c.get("action") or "-"),
            ("started", short_time(c["started_at"])),
            ("finished", short_time(c["finished_at"])),
            ("deadline", short_time(c["deadline_at"])),
            ("log link", c.get("output_url") or "-"),
        ]
        if c.get("error"):
            fields.append(("error", c["error"]))
        if c.get("mandatory_for"):
            fields.append(("mandatory for", ", ".join(c["mandatory_for"])))
        for name, value in fields:
            print(f"  {name + ':':<14}{value}")
        metadata = c.get("metadata") or {}
        print(f"  {'metadata:':<14}{'-' if not metadata else ''}")
        for k, v in sorted(metadata.items()):
            print(f"    {k} = {v}")
        if "log" in c:
            text = c["log"] or ""
            print(f"  {'log:':<14}{'-' if not text else ''}")
            for line in text.splitlines()[-200:]:  # the tail: the end of a log says why it ended
                print(f"    | {line}")


def emit(args: argparse.Namespace, payload: Any, human: Callable[[], None]) -> None:
    if args.json:
        json.dump(payload, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        human()


def client_for(args: argparse.Namespace) -> ChecksClient:
    return ChecksClient(args.server, find_token(args.token, args.state))


# -- client commands -----------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    repo, ref = parse_ref_uri(args.ref_uri)
    client = client_for(args)
    report = client.trigger(repo, ref, args.check_id)
    if args.wait is None:
        emit(args, report, lambda: print_checks(report, triggered=True))
        return 0
    ids = {c["id"] for c in report["checks"]}
    deadline = time.monotonic() + args.wait
    commit = report["commit_id"]
    while True:
        current = client.list(repo, commit)
        current["checks"] = [c for c in current["checks"] if c["id"] in ids]
        if not any(c["status"] in ACTIVE for c in current["checks"]) or time.monotonic() >= deadline:
            break
        time.sleep(1)
    emit(args, current, lambda: print_checks(current))
    return 0 if all(c["status"] == "SUCCESS" for c in current["checks"]) else 1


def cmd_list(args: argparse.Namespace) -> int:
    repo, ref = parse_ref_uri(args.ref_uri)
    report = client_for(args).list(repo, ref)
    if args.check_id:
        report["checks"] = [c for c in report["checks"] if c["id"] == args.check_id]
        if not report["checks"]:
            raise BadInput(f"check {args.check_id!r} has not run for {args.ref_uri}", field="id")
    emit(args, report, lambda: print_checks(report))
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    repo, ref = parse_ref_uri(args.ref_uri)
    client = client_for(args)
    if args.check_id:
        targets = [args.check_id]
    else:
        listing = client.list(repo, ref)
        ref = listing["commit_id"]  # retry exactly the commit that was listed
        targets = [c["id"] for c in listing["checks"] if c["status"] in {"FAILED", "LOST"}]
        if not targets:
            emit(args, {**listing, "checks": []}, lambda: print("nothing to retry: no FAILED or LOST checks"))
            return 0
    results = [client.retry(repo, ref, check)["checks"][0] for check in targets]
    first = client.list(repo, ref)
    report = {**first, "checks": results}
    emit(args, report, lambda: print_checks(report))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    repo, ref = parse_ref_uri(args.ref_uri)
    client = client_for(args)
    if args.check_id:
        checks = [client.get(repo, ref, args.check_id)]
        payload: Any = checks[0]
    else:
        payload = client.list(repo, ref)
        # The details of each check carry its executor log.
        checks = [client.get(repo, payload["commit_id"], c["id"]) for c in payload["checks"]]
        payload["checks"] = checks

    def human() -> None:
        if not args.check_id:
            print(f"{payload['repository']}/{payload['ref']} @ {payload['commit_id']}")
            if payload.get("commit_message"):
                print(f"  {payload['commit_message']}")
            print()
        if not checks:
            print("no checks have run for this commit")
        print_details(checks)
        if not args.check_id:
            print()
            print_merge(payload)

    emit(args, payload, human)
    return 0


# -- serve ---------------------------------------------------------------------------------------


def _api_token(config_token: str | None, state: Path) -> str:
    """The configured token, or ``$LAKEWARDEN_CHECKS_TOKEN``, or one generated into the state dir."""
    if config_token:
        return config_token
    if os.environ.get("LAKEWARDEN_CHECKS_TOKEN"):
        return os.environ["LAKEWARDEN_CHECKS_TOKEN"]
    path = state / TOKEN_FILE
    if path.is_file() and path.read_text().strip():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    state.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    log.info("no api_token configured: generated one into %s", path)
    return token


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM ends ``serve`` like Ctrl-C: the server loop unwinds and everything is closed."""
    raise KeyboardInterrupt


def cmd_serve(args: argparse.Namespace) -> int:
    from lakewarden.checks.catalog import Catalog, LakeFSCatalog, SnapshotCatalog
    from lakewarden.checks.config import load_service_config
    from lakewarden.checks.connections import ConnectionLimits
    from lakewarden.checks.server import ChecksServer
    from lakewarden.checks.service import ChecksService
    from lakewarden.checks.store import Store, default_db_url
    from lakewarden.checks.timeout_reaper import TimeoutReaper

    state = state_dir(args.state)
    config = load_service_config(args.config, os.environ)
    catalog: Catalog
    if args.snapshot:
        catalog = SnapshotCatalog(args.snapshot)
    else:
        from lakewarden.lakefs.client import resolve_config

        catalog = LakeFSCatalog(resolve_config(args.lakefs_endpoint))
    if not 0 <= args.port <= 65535:
        raise BadInput(f"invalid port {args.port}", field="port")
    token = _api_token(config.api_token, state)
    try:
        store = Store(args.db or default_db_url(state), max_rejections=config.max_rejections,
                      rejections_per_client=config.rejections_per_client)
    except Exception as exc:  # a wrong URL or missing driver is the user's to fix
        raise BadInput(f"cannot open the state store: {exc}", field="db") from None
    try:
        service = ChecksService(catalog, store, config)
    except BadInput:
        store.close()
        raise
    try:
        # parse_connection_limits gives the caps as ints and the deadlines as floats, each
        # matching its ConnectionLimits field; the dict's value type cannot say which is which.
        limits = ConnectionLimits(**cast("dict[str, Any]", config.connection_limits))
        server = ChecksServer(service, host=args.host, port=args.port, api_token=token, limits=limits)
    except OSError as exc:
        service.close()
        store.close()
        raise BadInput(f"cannot listen on {args.host}:{args.port}: {exc.strerror}", field="port") from None
    reaper = TimeoutReaper(store, config.reaper_interval).start()
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    print(f"lakewarden checks: serving on {server.url} (merge gate: {server.url}/api/v1/hooks/pre-merge)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        reaper.stop()
        server.socket.close()
        service.close()
        store.close()
    return 0
