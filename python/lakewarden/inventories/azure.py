"""Azure Blob Inventory reports: a rule's ``<rule>-manifest.json`` and its CSV/Parquet files.

The manifest names the account (``endpoint``), the container the files were written to
(``destinationContainer``), the files (``files[].blob``, relative to that container), the
rule (``ruleDefinition``: ``format``, ``objectType``, ``schemaFields``, ``filters.prefixMatch``),
``status`` and ``inventoryCompletionTime``. Each row's ``Name`` is ``CONTAINER/BLOB``: rows of
other containers fall outside the namespace and are left out. Deleted blobs, snapshots,
non-current versions and directory markers (``hdi_isfolder``) are left out too: only a live blob
is an object the storage inventory may report.

Refused as bad input (one line naming the manifest and field): not ``Succeeded``, another
account, a blob-level rule without ``Name``, a ``prefixMatch`` that does not cover the namespace
(the report would silently miss objects), files missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import urlsplit

from lakewarden.errors import BadInput
from lakewarden.inventories.common import FORMATS, CloudInventory, is_remote, parse_time, sibling
from lakewarden.stores.azure import azure_location

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame


def _live_rows(df: "DataFrame") -> "Column":
    """Current, undeleted, non-snapshot blobs that are not directory markers."""
    from pyspark.sql import functions as F

    columns = {name.lower(): name for name in df.columns}
    keep = F.lit(True)
    for field, live in (("iscurrentversion", "true"), ("deleted", "false"), ("hdi_isfolder", "false")):
        if field in columns:
            keep = keep & (F.coalesce(F.lower(F.col(f"`{columns[field]}`").cast("string")), F.lit(live)) == live)
    if "snapshot" in columns:
        snapshot = F.col(f"`{columns['snapshot']}`").cast("string")
        keep = keep & (snapshot.isNull() | (snapshot == ""))
    return keep


def parse_manifest(raw: Mapping[str, Any], manifest: str, storage_namespace: str) -> CloudInventory:
    ns = azure_location(storage_namespace)
    status = raw.get("status")
    if status != "Succeeded":
        raise BadInput(f"inventory run is {status!r}, not 'Succeeded'", source=manifest, field="status")
    endpoint = raw.get("endpoint")
    if not isinstance(endpoint, str) or not endpoint:
        raise BadInput("missing", source=manifest, field="endpoint")
    account = (urlsplit(endpoint).hostname or "").split(".", 1)[0].lower()
    if account != ns.account:
        raise BadInput(f"inventory of account {account!r}, the storage namespace is in {ns.account!r}", source=manifest, field="endpoint")
    rule = raw.get("ruleDefinition")
    if not isinstance(rule, dict):
        raise BadInput("missing", source=manifest, field="ruleDefinition")
    file_format = FORMATS.get(str(rule.get("format", "")).lower())
    if file_format is None:
        raise BadInput(f"unsupported {rule.get('format')!r} (csv or parquet)", source=manifest, field="ruleDefinition.format")
    if str(rule.get("objectType", "blob")).lower() != "blob":
        raise BadInput(f"a {rule.get('objectType')!r} inventory lists no blobs", source=manifest, field="ruleDefinition.objectType")
    fields = rule.get("schemaFields")
    if not isinstance(fields, list) or "Name" not in fields:
        raise BadInput("has no Name field", source=manifest, field="ruleDefinition.schemaFields")
    prefixes = (rule.get("filters") or {}).get("prefixMatch") or []
    wanted = f"{ns.container}/{ns.name}".rstrip("/") + "/"
    if prefixes and not any(isinstance(p, str) and wanted.startswith(p) for p in prefixes):
        raise BadInput(f"prefixMatch {prefixes} does not cover {wanted}", source=manifest, field="ruleDefinition.filters.prefixMatch")
    destination = raw.get("destinationContainer")
    files = raw.get("files")
    if not isinstance(files, list) or not files:
        raise BadInput("missing or empty", source=manifest, field="files")
    locations = []
    for index, entry in enumerate(files):
        blob = entry.get("blob") if isinstance(entry, dict) else None
        if not isinstance(blob, str) or not blob:
            raise BadInput("missing blob", source=manifest, field=f"files[{index}].blob")
        if is_remote(manifest):
            if not isinstance(destination, str) or not destination:
                raise BadInput("missing", source=manifest, field="destinationContainer")
            locations.append(f"https://{urlsplit(endpoint).hostname}/{destination}/{blob}")
        else:  # a local copy: the files beside the manifest
            locations.append(sibling(manifest, blob.rsplit("/", 1)[-1]))
    return CloudInventory(
        kind="azure",
        manifest=manifest,
        created=parse_time(raw.get("inventoryCompletionTime") or raw.get("inventoryStartTime"), manifest, "inventoryCompletionTime"),
        file_format=file_format,
        data_files=tuple(locations),
        name_field="Name",
        size_field="Content-Length" if "Content-Length" in fields else None,
        modified_field="Last-Modified" if "Last-Modified" in fields else None,
        created_field="inventoryCompletionTime",
        uri_root=f"https://{ns.host}/",
        row_filter=_live_rows,
    )
