"""Read a live lakeFS repository into a snapshot directory (CONTRACT section 2).

Refs, GC rules and uncommitted entries come from the lakeFS REST API (through the official
``lakefs-sdk`` client); the object listings come straight from the metarange and range SSTables
under ``<storage namespace>/_lakefs/``, decoded by :mod:`lakewarden.sstable`. Ranges are
immutable and content-addressed, so decoded ranges are cached as Parquet keyed by range id and
a second extract only reads ranges it has not seen.
"""

from lakewarden.extract.core import ExtractResult, extract_repository

__all__ = ["ExtractResult", "extract_repository"]
