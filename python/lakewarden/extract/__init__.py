"""Read a live lakeFS repository into a snapshot directory (CONTRACT section 2).

Every commit, branch and tag comes from a lakeFS refs dump; lakeFS's own GC answer and the
staged entries come from lakeFS's GC preparations (all through the official ``lakefs-sdk``
client); the object listings come straight from the metarange and range SSTables under
``<storage namespace>/_lakefs/``, decoded by :mod:`lakewarden.sstable`. Ranges are immutable and
content-addressed, so decoded ranges are cached as Parquet keyed by range id and a second
extract only reads ranges it has not seen. docs/extract.md has the calls, choices and costs.
"""

from lakewarden.extract.core import ExtractResult, extract_repository

__all__ = ["ExtractResult", "extract_repository"]
