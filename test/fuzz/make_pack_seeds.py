#!/usr/bin/env python3
"""Writes the seed corpus for pack-reader-fuzzer into DIR.

Each seed is a fuzzer input: a 32-byte expectation (model_hash, pack_bytes,
data_offset, data_size as little-endian u64) followed by a pack file. One valid
pack that verifies, then one variant per check of the reader, so the corpus
starts with every rejection path covered. Standard library only.
"""
import os
import struct
import sys

PAGE = 4096
HASH = 0x0123456789ABCDEF


def pack(magic=b"KILNPACK", version=1, flags=0, model_hash=HASH, table_offset=64,
         table_size=32, data_offset=PAGE, data_size=128, file_size=None, ident=b"KLNP",
         length=None):
    """Returns the pack bytes and the expectation matching its header."""
    if file_size is None:
        file_size = data_offset + data_size
    header = magic + struct.pack("<II6Q", version, flags, model_hash, table_offset,
                                 table_size, data_offset, data_size, file_size)
    body = bytearray(max(file_size if length is None else length, 64))
    body[:64] = header
    if table_offset + 8 <= len(body):
        # A FlatBuffers buffer begins with its root offset, then the identifier.
        body[table_offset:table_offset + 8] = struct.pack("<I", 8) + ident
    for i in range(data_offset, min(file_size, len(body))):
        body[i] = (i * 7 + 3) & 0xFF
    if length is not None:
        body = body[:length]
    expect = struct.pack("<4Q", model_hash, file_size, data_offset, data_size)
    return expect, bytes(body)


def seeds():
    valid = pack()
    yield "valid", valid[0] + valid[1]
    empty = pack(data_size=0)
    yield "valid-empty-data", empty[0] + empty[1]
    yield "wrong-hash", struct.pack("<4Q", HASH ^ 1, PAGE + 128, PAGE, 128) + valid[1]
    yield "wrong-size", struct.pack("<4Q", HASH, PAGE + 64, PAGE, 64) + valid[1]
    yield "no-expect", bytes(32) + valid[1]
    yield "header-only", valid[0] + valid[1][:64]
    yield "short", valid[1][:20]
    cases = {
        "bad-magic": dict(magic=b"KILNPACX"),
        "bad-version": dict(version=2),
        "bad-identifier": dict(ident=b"KLNQ"),
        "table-in-header": dict(table_offset=32),
        "table-too-small": dict(table_size=4),
        "table-overlaps-data": dict(table_size=PAGE),
        "data-unaligned": dict(data_offset=PAGE + 64),
        "file-size-mismatch": dict(file_size=PAGE + 129),
        "truncated": dict(length=PAGE + 64),
    }
    for name, args in cases.items():
        expect, body = pack(**args)
        yield name, expect + body


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_pack_seeds.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(out, name + ".pack"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
