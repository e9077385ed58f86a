"""The ``lakewarden`` command line (docs/contract.md §1).

Each command lives in the module that owns its job; this module only assembles the parser
and maps errors to exit codes: 0 success, 2 bad input (one line on stderr), 1 anything else.
A module contributes commands through ``register(subparsers)``, setting ``func`` on its parser
to a callable taking the parsed arguments and returning an exit status.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Sequence

from lakewarden.errors import BadInput, LakewardenError, error_line

# Modules that contribute commands, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "lakewarden.jobs.demo",
    "lakewarden.jobs.warm_up",
    "lakewarden.jobs.lifecycle",
    "lakewarden.jobs.gc_committed",
    "lakewarden.sstable_cli",
    "lakewarden.extract.cli",
    "lakewarden.checks.cli",
    "lakewarden.jobs.sweep",
    "lakewarden.reports.explain",
    "lakewarden.engine.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lakewarden",
        description="Data retention and merge gating for lakeFS repositories.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging, including dbt's own log lines")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # a job handed to the engine LAKEWARDEN_ENGINE names (lakewarden.engine): before the parser
    # imports every command's module, which such a command never needs
    from lakewarden.engine.client import forwarded_run

    forwarded = forwarded_run(argv)
    if forwarded is not None:
        return forwarded
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        # quiet by default: progress lines (lakewarden.runtime.progress) and results; -v shows everything
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("py4j", "botocore", "urllib3", "s3transfer"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BadInput as exc:
        print(f"lakewarden: {exc}", file=sys.stderr)
        return 2
    except LakewardenError as exc:  # a job failed part-way; its report says so
        print(f"lakewarden: {error_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lakewarden: interrupted", file=sys.stderr)
        return 1
    except Exception as exc:  # anything else: one line too (the traceback goes to the debug log)
        logging.getLogger("lakewarden").debug("unexpected error", exc_info=True)
        print(f"lakewarden: {type(exc).__name__}: {error_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
