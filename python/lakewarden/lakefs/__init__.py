"""lakeFS's storage formats, as lakeFS writes them: the bottom layer, which knows nothing of jobs.

Kept apart as lakeFS's Spark client keeps them (``jpebble/BlockParser``, ``SSTableReader``,
``VarInt``): :mod:`~lakewarden.lakefs.varint` (the integer encodings), :mod:`~lakewarden.lakefs.sstable`
(the RocksDB/pebble table container: footer, index, blocks, checksums, compression),
:mod:`~lakewarden.lakefs.records` (what a range or metarange record holds) and
:mod:`~lakewarden.lakefs.proto` (the protobuf messages inside them); beside them
:mod:`~lakewarden.lakefs.client`, the one ``lakefs-sdk`` client and credentials rule every part
that talks to a lakeFS server uses. The import contracts in
``pyproject.toml`` keep this package free of Spark, jobs, reports and services.
"""
