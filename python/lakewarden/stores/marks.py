"""lakeFS's GC marks, in lakeFS's own layout, on any store.

lakeFS's garbage collector (mark-only mode) writes what it would delete to
``<namespace>/_lakefs/retention/gc/unified/<RUN_ID>/``: ``deleted/`` (Parquet, one ``address``
column), ``deleted.text/`` (the same addresses, one per line) and ``summary.json``
(``run_id``, ``success``, ``first_slice``, ``start_time``, ``cutoff_time``,
``num_deleted_objects``); its sweep-only mode reads a mark back by its id and refuses a mark
whose summary says it did not succeed. Writing and reading that layout lets a lakewarden mark be
swept by lakeFS's own GC and the other way round.

Both directions stream: addresses go through a Parquet writer in row groups and a text file on
local disk, then are uploaded; reading walks the Parquet files batch by batch.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable, Iterator

from lakewarden.errors import BadInput
from lakewarden.stores.base import ObjectMissing, ObjectStore

__all__ = ["MARKS_DIR", "MarkSummary", "mark_prefix", "read_mark", "write_mark"]

#: where lakeFS keeps its GC marks, relative to the namespace (``outputPrefix`` "unified")
MARKS_DIR = "_lakefs/retention/gc/unified"
_ROW_GROUP = 65_536


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ").replace(".000000Z", "Z")


@dataclass(frozen=True)
class MarkSummary:
    """``summary.json`` of a mark, with lakeFS's field names."""

    run_id: str
    success: bool
    first_slice: str
    start_time: str
    cutoff_time: str
    num_deleted_objects: int

    def to_json(self) -> bytes:
        return json.dumps(self.__dict__, separators=(",", ":")).encode()


def mark_prefix(store: ObjectStore, run_id: str) -> str:
    """The URI under which the mark ``run_id`` lives (ends with ``/``)."""
    if not run_id or "/" in run_id or run_id in (".", ".."):
        raise BadInput(f"not a mark id: {run_id!r}", field="mark_id")
    return store.uri(f"{MARKS_DIR}/{run_id}/")


def write_mark(
    store: ObjectStore,
    run_id: str,
    addresses: Iterable[str],
    *,
    start_time: datetime,
    cutoff_time: datetime,
    first_slice: str = "",
    success: bool = True,
) -> MarkSummary:
    """Write ``addresses`` as lakeFS's mark ``run_id``; ``summary.json`` last, so a reader never
    sees a summary without its addresses."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    prefix = mark_prefix(store, run_id)
    schema = pa.schema([("address", pa.string())])
    count = 0
    part = f"part-00000-{uuid.uuid4()}-c000"
    with tempfile.TemporaryDirectory(prefix="lakewarden-mark-") as scratch:
        parquet_path = os.path.join(scratch, "deleted.parquet")
        text_path = os.path.join(scratch, "deleted.txt")
        with pq.ParquetWriter(parquet_path, schema, compression="snappy") as writer, open(text_path, "w", encoding="utf-8") as text:
            batch: list[str] = []
            for address in addresses:
                if "\n" in address or "\r" in address:
                    raise BadInput(f"address with a line break: {address!r}", field="address")
                batch.append(address)
                text.write(address + "\n")
                if len(batch) >= _ROW_GROUP:
                    writer.write_table(pa.table({"address": batch}, schema=schema))
                    count += len(batch)
                    batch = []
            if batch or not count:
                writer.write_table(pa.table({"address": batch}, schema=schema))
                count += len(batch)
        store.upload(parquet_path, f"{prefix}deleted/{part}.snappy.parquet")
        store.write(f"{prefix}deleted/_SUCCESS", b"")
        store.upload(text_path, f"{prefix}deleted.text/{part}.txt")
        store.write(f"{prefix}deleted.text/_SUCCESS", b"")
    summary = MarkSummary(run_id, success, first_slice, _iso(start_time), _iso(cutoff_time), count)
    store.write(f"{prefix}summary.json", summary.to_json())
    return summary


def read_mark(store: ObjectStore, mark_id: str) -> tuple[MarkSummary, Iterator[str]]:
    """The summary of mark ``mark_id`` and its addresses (streamed), as lakeFS's sweep reads
    them: a missing mark or one that did not succeed is bad input, naming the summary; a data
    file that is not Parquet or has no string ``address`` column is bad input naming the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    prefix = mark_prefix(store, mark_id)
    source = f"{prefix}summary.json"
    try:
        raw = json.loads(store.read(source))
    except ObjectMissing:
        raise BadInput(f"mark {mark_id} does not exist", source=source) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"not JSON: {exc}", source=source) from None
    if not isinstance(raw, dict):
        raise BadInput("not a JSON object", source=source)
    try:
        summary = MarkSummary(
            run_id=str(raw["run_id"]),
            success=bool(raw["success"]),
            first_slice=str(raw.get("first_slice", "")),
            start_time=str(raw.get("start_time", "")),
            cutoff_time=str(raw.get("cutoff_time", "")),
            num_deleted_objects=int(raw.get("num_deleted_objects", 0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BadInput(f"missing or malformed ({exc})", source=source, field=str(exc).strip("'")) from None
    if raw.get("success") is not True:
        raise BadInput(f"mark {mark_id} is of a failed run", source=source, field="success")
    files = sorted(listed.uri for listed in store.list(f"{prefix}deleted/") if listed.uri.endswith(".parquet"))

    def addresses() -> Iterator[str]:
        for uri in files:
            with tempfile.NamedTemporaryFile(prefix="lakewarden-mark-", suffix=".parquet") as local:
                store.download(uri, local.name)
                try:
                    parquet = pq.ParquetFile(local.name)
                except (pa.ArrowException, OSError) as exc:
                    raise BadInput(f"not a Parquet file ({exc})", source=uri, field="address") from None
                if "address" not in parquet.schema_arrow.names:
                    raise BadInput(f"no address column (columns: {', '.join(parquet.schema_arrow.names)})", source=uri, field="address")
                if not pa.types.is_string(parquet.schema_arrow.field("address").type) and not pa.types.is_large_string(parquet.schema_arrow.field("address").type):
                    raise BadInput(f"address is {parquet.schema_arrow.field('address').type}, not a string", source=uri, field="address")
                try:
                    for batch in parquet.iter_batches(columns=["address"]):
                        yield from (value for value in batch.column(0).to_pylist() if value is not None)
                except (pa.ArrowException, OSError) as exc:
                    raise BadInput(f"unreadable Parquet ({exc})", source=uri, field="address") from None

    return summary, addresses()
