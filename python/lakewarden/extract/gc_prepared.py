"""Read what lakeFS's GC preparations write into the storage namespace.

* ``prepare_commits`` writes ``_lakefs/retention/gc/commits/run_id=<run>/commits.csv``: lakeFS's
  own answer to "which commits does GC keep" (``commit_id,expired,metarange_id``, active commits
  only). Extract keeps it, byte for byte, beside the snapshot (``lakefs_gc_commits.csv``) with
  ``lakefs_gc_commits.json`` (run id, when it was asked for, the rules lakeFS used), so the jobs
  can refuse to mark anything when lakeFS keeps a commit they would not.
* ``prepare_uncommited`` writes Parquet files (``physical_address`` relative to the namespace,
  ``creation_date`` in epoch seconds) under ``_lakefs/retention/gc/uncommitted/<run>/uncommitted/``:
  every uncommitted (staged) entry of every branch, tombstones and addresses outside the
  namespace left out. Extract turns them into the snapshot's ``staged`` table, streaming file by
  file (never all addresses in memory at once).

A location lakeFS returns is used when it lies inside the namespace; otherwise (a blockstore
whose URIs are spelled differently) the key is rebuilt from lakeFS's fixed layout and run id.

Other files under ``_lakefs/`` (lakeFS issue #9055: refs dumps saved there, other tools' output,
lakewarden's own ``_lakefs/retention/...``) are never listed: extract reads metaranges and
ranges by the ids lakeFS names, and lists only the directory prepare_uncommited named. In that
directory, what Hadoop and Spark (lakeFS's own GC reads these files with Spark) treat as hidden
is skipped: a name starting with ``_`` or ``.`` (``_SUCCESS``, ``.crc`` checksums, ``_temporary/``)
and directory-marker objects (keys ending in ``/``). Any other file must be lakeFS's Parquet:
one that is not is bad input, since a staged list missing a file would leave staged objects
unprotected.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakewarden.errors import BadInput
from lakewarden.extract.api import GCPreparation, UncommittedPreparation
from lakewarden.extract.storage import METADATA_DIR, MetadataStore
from lakewarden.timestamps import rfc3339

__all__ = [
    "GC_COMMITS_CSV",
    "GC_COMMITS_JSON",
    "GC_COMMITS_HEADER",
    "is_hidden_file",
    "save_gc_commits",
    "write_prepared_staged",
]

GC_COMMITS_CSV: Final = "lakefs_gc_commits.csv"
GC_COMMITS_JSON: Final = "lakefs_gc_commits.json"
GC_COMMITS_HEADER: Final = "commit_id,expired,metarange_id"
_UNCOMMITTED_COLUMNS: Final = ("physical_address", "creation_date")


def _key(store: MetadataStore, location: str, fallback: str) -> str:
    return store.relative_key(location) or fallback


def save_gc_commits(store: MetadataStore, prepared: GCPreparation, rules: dict[str, Any], out: Path) -> int:
    """Copy lakeFS's commits CSV into ``out`` and describe it; return its number of rows."""
    key = _key(store, prepared.commits_location, f"{METADATA_DIR}/retention/gc/commits/run_id={prepared.run_id}/commits.csv")
    data = store.read_key(key, "GC commits CSV")
    text = data.decode("utf-8", "replace")
    lines = text.splitlines()
    header = lines[0].strip() if lines else ""
    if header != GC_COMMITS_HEADER:
        raise BadInput(f"lakeFS's GC commits CSV starts with {header!r}, not {GC_COMMITS_HEADER!r}", source=store.uri(key), field="header")
    (out / GC_COMMITS_CSV).write_bytes(data)
    document = {"run_id": prepared.run_id, "prepared_at": rfc3339(prepared.prepared_at), "gc_rules": rules}
    (out / GC_COMMITS_JSON).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return sum(1 for line in lines[1:] if line.strip())


def is_hidden_file(key: str, prefix: str) -> bool:
    """True for a key under ``prefix`` that Hadoop/Spark readers skip, as lakeFS's GC does: any
    path segment below ``prefix`` starting with ``_`` or ``.``, or a directory marker."""
    relative = key[len(prefix):] if key.startswith(prefix) else key
    return key.endswith("/") or any(part.startswith(("_", ".")) for part in relative.split("/") if part)


def write_prepared_staged(store: MetadataStore, prepared: UncommittedPreparation, target: Path, schema: pa.Schema) -> int:
    """Write the snapshot's ``staged`` table from prepare_uncommited's files; return its rows.

    Those files carry no branch and no path, so ``branch_id`` and ``key`` are null; the address
    is relative to the namespace (``RELATIVE``) and ``last_modified`` is the entry's time.
    """
    keys: list[str] = []
    for location in prepared.locations:
        prefix = _key(store, location, f"{METADATA_DIR}/retention/gc/uncommitted/{prepared.run_id}/uncommitted/")
        prefix = prefix.rstrip("/") + "/"
        keys.extend(k for k in store.list_keys(prefix) if k not in keys and not is_hidden_file(k, prefix))
    rows = 0
    with pq.ParquetWriter(target, schema) as writer:
        for key in keys:
            data = store.read_key(key, "uncommitted GC file")
            try:
                table = pq.read_table(io.BytesIO(data))
            except (pa.ArrowException, OSError) as exc:
                raise BadInput(f"not a Parquet file ({str(exc).splitlines()[0]})", source=store.uri(key)) from None
            for column in _UNCOMMITTED_COLUMNS:
                if column not in table.column_names:
                    raise BadInput("column missing from lakeFS's uncommitted GC file", source=store.uri(key), field=column)
            addresses = table.column("physical_address").cast(pa.string())
            if addresses.null_count:
                raise BadInput("null address in lakeFS's uncommitted GC file", source=store.uri(key), field="physical_address")
            seconds = table.column("creation_date").cast(pa.int64())
            n = table.num_rows
            staged = pa.table(
                {
                    "branch_id": pa.nulls(n, pa.string()),
                    "key": pa.nulls(n, pa.string()),
                    "address": addresses,
                    "address_type": pa.array(["RELATIVE"] * n, pa.string()),
                    "last_modified": pc.multiply(seconds, 1_000_000).cast(pa.timestamp("us", tz="UTC")),
                },
                schema=schema,
            )
            writer.write_table(staged)
            rows += n
    return rows


