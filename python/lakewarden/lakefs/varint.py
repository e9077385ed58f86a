"""The one varint codec: LEB128 unsigned varints (RocksDB/pebble block format) and zig-zag
signed varints (Go's ``binary.Varint``, lakeFS's value framing). Readers return ``(value,
next_pos)`` and raise ``IndexError`` past the end and ``ValueError`` for a varint longer than 10
bytes, so a corrupt file is reported, never looped on."""

from __future__ import annotations

_MAX_SHIFT = 63


def read_uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode an unsigned LEB128 varint at ``pos``."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > _MAX_SHIFT:
            raise ValueError("varint too long")


def write_uvarint(value: int) -> bytes:
    """Encode a non-negative integer as an unsigned LEB128 varint."""
    if value < 0:
        raise ValueError("an unsigned varint cannot hold a negative number")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_svarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag signed varint (Go's ``binary.Varint``)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_svarint(value: int) -> bytes:
    """Encode a zig-zag signed varint (Go's ``binary.PutVarint``)."""
    return write_uvarint(((value << 1) ^ (value >> 63)) & ((1 << 64) - 1))
