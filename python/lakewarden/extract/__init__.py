"""Read a live lakeFS repository into a snapshot directory (docs/contract.md §2).

Every commit, branch and tag comes from a lakeFS refs dump; lakeFS's own GC answer and the
staged entries come from lakeFS's GC preparations (all through the official ``lakefs-sdk``
client); the object listings come straight from the metarange and range SSTables under
``<storage namespace>/_lakefs/``, decoded by :mod:`lakewarden.lakefs.sstable`. Ranges are immutable and
content-addressed, so decoded ranges are cached as Parquet keyed by range id and a second
extract only reads ranges it has not seen. docs/extract.md has the calls, choices and costs.
"""

from typing import Any

__all__ = ["ExtractResult", "extract_repository"]


def __getattr__(name: str) -> Any:
    # lazily: importing the package (as the command line does to register ``extract``) must not
    # load lakeFS's SDK and pyarrow, which cost about a second
    if name in __all__:
        from lakewarden.extract import core

        return getattr(core, name)
    raise AttributeError(name)
