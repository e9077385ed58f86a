"""Inventory reports the clouds write, beside S3 Inventory (:mod:`lakewarden.inventory`).

* Azure Blob Inventory (:mod:`.azure`): a rule's ``*-manifest.json`` and its CSV or Parquet files.
* GCS Storage Insights inventory reports (:mod:`.gcs`): ``*_manifest.json`` and its CSV or
  Parquet shards.

Each is validated before any row is read (bad input names the file and the field), then read
into the storage inventory's shape (``physical_address``, ``size``, ``last_modified``) with the
same conservative namespace filter as S3 inventories and listings: only objects strictly inside
the namespace, never ``_lakefs/`` under any reading of the name. :func:`read_cloud_inventory`
picks the reader by the manifest's content.
"""

from __future__ import annotations

from lakewarden.inventories.common import CloudInventory, inventory_created, inventory_kind, read_cloud_inventory

__all__ = ["CloudInventory", "inventory_created", "inventory_kind", "read_cloud_inventory"]
