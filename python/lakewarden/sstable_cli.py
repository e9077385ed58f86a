"""``lakewarden sstable cat FILE`` (docs/contract.md §5): print an SSTable as JSON Lines.

This is how users and support look inside a repository's metadata (``<ns>/_lakefs/<id>``
files) without a Go toolchain. The whole table is opened (footer, metaindex, properties)
before anything is printed, so a file with a bad footer fails with exit 2 and no output; a
block that turns out corrupt later still exits 2 with a one-line reason.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from typing import Any, TextIO

from lakewarden.lakefs.records import RECORD_TYPES, iter_decoded
from lakewarden.lakefs.sstable import SSTableReader

__all__ = ["register", "cat", "properties_json"]


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``sstable`` command and its ``cat`` sub-command."""
    parser = subparsers.add_parser(
        "sstable",
        help="inspect lakeFS SSTables (ranges, metaranges)",
        description="Inspect SSTables written by lakeFS (ranges and metaranges under _lakefs/).",
    )
    commands = parser.add_subparsers(dest="sstable_command", metavar="SUBCOMMAND", required=True)
    cat_parser = commands.add_parser(
        "cat",
        help="print an SSTable's records as JSON Lines",
        description=(
            "Print one JSON object per record, in key order. --type auto (default) picks range or "
            "metarange from the table's lakeFS 'type' property, else raw."
        ),
    )
    cat_parser.add_argument("file", metavar="FILE", help="the SSTable file")
    cat_parser.add_argument(
        "--type",
        dest="record_type",
        choices=("auto", *RECORD_TYPES),
        default="auto",
        help="how to decode values (commit/branch/tag decode refs-dump tables)",
    )
    cat_parser.add_argument(
        "--properties", action="store_true", help="print the properties block (one JSON object) instead"
    )
    cat_parser.add_argument(
        "--no-verify-checksums",
        dest="verify_checksums",
        action="store_false",
        help="skip the per-block CRC32C check (to salvage records from a damaged file)",
    )
    cat_parser.set_defaults(func=_run_cat)


def _run_cat(args: argparse.Namespace) -> int:
    try:
        return cat(
            args.file,
            record_type=args.record_type,
            properties=args.properties,
            verify_checksums=args.verify_checksums,
            out=sys.stdout,
        )
    except BrokenPipeError:
        # `lakewarden sstable cat F | head` is normal use: stop quietly, like cat(1).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def properties_json(reader: SSTableReader) -> dict[str, Any]:
    """The properties as JSON values: integers, UTF-8 strings, else ``{"base64": ...}``."""
    out: dict[str, Any] = {}
    for name, value in sorted(reader.properties.items()):
        if isinstance(value, bytes):
            out[name] = {"base64": base64.b64encode(value).decode("ascii")}
        else:
            out[name] = value
    return out


def cat(
    path: str,
    *,
    record_type: str = "auto",
    properties: bool = False,
    verify_checksums: bool = True,
    out: TextIO,
) -> int:
    """Write the table at ``path`` to ``out`` as JSON Lines; raise ``SSTableError`` if corrupt."""
    reader = SSTableReader(path, verify_checksums=verify_checksums)
    if properties:
        out.write(json.dumps(properties_json(reader), ensure_ascii=False) + "\n")
        return 0
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
    write = out.write
    for record in iter_decoded(reader, record_type):
        write(dumps(record) + "\n")
    return 0
