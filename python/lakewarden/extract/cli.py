"""``lakewarden extract``: a live lakeFS repository -> a snapshot directory (docs/contract.md §2)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from lakewarden.runtime.state_dir import add_state_option, state_dir

if TYPE_CHECKING:  # pragma: no cover
    from lakewarden.extract.config import LakeFSSource
    from lakewarden.extract.core import ExtractResult
    from lakewarden.stores.options import StoreOptions

__all__ = ["register", "add_lakefs_arguments", "add_s3_arguments", "extract_from_args", "extract_source", "lakefs_source_from_args"]


def add_lakefs_arguments(parser: argparse.ArgumentParser) -> None:
    """``--lakefs-endpoint``/``--repo`` and friends; jobs reuse this to extract then run."""
    parser.add_argument(
        "--lakefs-endpoint",
        metavar="URL",
        help="lakeFS server (default: LAKECTL_SERVER_ENDPOINT_URL or ~/.lakectl.yaml); "
        "credentials come from LAKECTL_CREDENTIALS_* or ~/.lakectl.yaml",
    )
    parser.add_argument("--repo", metavar="NAME", help="the repository to read")
    parser.add_argument(
        "--local-blockstore",
        metavar="DIR",
        help="the server's blockstore.local.path, for repositories on a local:// namespace",
    )
    parser.add_argument("--cache-dir", metavar="DIR", help="decoded-range cache (default: STATE/range-cache)")
    parser.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="processes decoding ranges in parallel (default 1)"
    )


def add_s3_arguments(parser: argparse.ArgumentParser) -> None:
    """``--s3-endpoint``/``--s3-region`` alone (kept for callers that only reach S3; the commands
    take every store's options: :func:`lakewarden.stores.add_store_arguments`)."""
    parser.add_argument("--s3-endpoint", metavar="URL", help="S3 endpoint URL (default: AWS_ENDPOINT_URL or AWS)")
    parser.add_argument("--s3-region", metavar="REGION", help="S3 region (default: AWS_REGION or boto3's default)")


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = subparsers.add_parser(
        "extract",
        help="read a live lakeFS repository into a snapshot directory",
        description=(
            "Read a lakeFS repository into a snapshot directory: every commit, branch and tag from a "
            "refs dump, lakeFS's own GC answer (when GC rules are set) and its staged entries from "
            "its GC preparations, the metaranges and ranges from the storage namespace. Decoded "
            "ranges are cached by range id; the summary says how many were reused. Staged entries "
            "are always read (see docs/extract.md)."
        ),
    )
    add_lakefs_arguments(parser)
    # the namespace's store (S3, Azure, GCS): where the _lakefs/ range and metarange files are read
    from lakewarden.stores.options import add_store_arguments

    add_store_arguments(parser)
    parser.add_argument("--out", required=True, metavar="SNAPSHOT_DIR", help="snapshot directory to write")
    parser.add_argument("--force", action="store_true", help="replace an existing snapshot directory")
    add_state_option(parser, "the cache of range files already read (range-cache/, unless --cache-dir)")
    parser.set_defaults(func=_run)


def lakefs_source_from_args(args: argparse.Namespace) -> "LakeFSSource | None":
    """:func:`add_lakefs_arguments` as a :class:`~lakewarden.extract.config.LakeFSSource`
    (None without ``--repo``): the ``extract`` command and every job's command line."""
    from lakewarden.extract.config import LakeFSSource

    if not getattr(args, "repo", None):
        return None
    cache_dir = getattr(args, "cache_dir", None)
    return LakeFSSource(
        repo=args.repo,
        endpoint=getattr(args, "lakefs_endpoint", None),
        cache_dir=Path(cache_dir) if cache_dir else None,
        jobs=max(1, getattr(args, "jobs", 1) or 1),
    )


def extract_from_args(args: argparse.Namespace, *, out: Path, force: bool) -> "ExtractResult":
    """Run an extract from parsed ``add_lakefs_arguments`` options (the ``extract`` command)."""
    from lakewarden.errors import BadInput
    from lakewarden.stores.options import store_options_from_args

    source = lakefs_source_from_args(args)
    if source is None:
        raise BadInput("missing --repo NAME", field="--repo")
    store = store_options_from_args(args)  # a malformed option: exit 2 before lakeFS is asked
    return extract_source(source, state=state_dir(args.state), store=store, out=out, force=force)


def extract_source(source: "LakeFSSource", *, state: Path, store: "StoreOptions", out: Path, force: bool) -> "ExtractResult":
    """Extract ``source`` into ``out`` (the ``extract`` command, and a job given a lakeFS source)."""
    # imported here, not at start-up: lakeFS's SDK and pyarrow cost ~1 s, and every other
    # command (a sweep, checks) would pay it
    from lakewarden.lakefs.client import resolve_config
    from lakewarden.extract.core import extract_repository

    return extract_repository(
        config=resolve_config(source.endpoint),
        repository=source.repo,
        out=out,
        cache_dir=source.cache_dir if source.cache_dir is not None else state / "range-cache",
        force=force,
        local_blockstore=store.local_blockstore,
        store_options=store,
        jobs=source.jobs,
    )


def _run(args: argparse.Namespace) -> int:
    print(extract_from_args(args, out=Path(args.out), force=args.force).summary())
    return 0
