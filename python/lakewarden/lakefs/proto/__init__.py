"""Protobuf schemas (and generated modules) of the lakeFS records stored in SSTables."""
