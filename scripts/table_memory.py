#!/usr/bin/env python3
"""What LevelDB holds in memory for a chainstate's tables when every one is open: the index block
and the Bloom filter block of each table, read from the table files themselves (footer, metaindex
block, filter handle). Use it on a chainstate that no process has open.

Files that end without LevelDB's table magic are skipped: a compaction a shutdown interrupted leaves
its output behind until the next open deletes it.

Usage: scripts/table_memory.py CHAINSTATE_DIR
"""
import os
import struct
import sys

TABLE_MAGIC = 0xdb4775248b80fb57


def varint(b, i):
    value = shift = 0
    while True:
        c = b[i]
        i += 1
        value |= (c & 0x7f) << shift
        shift += 7
        if c < 0x80:
            return value, i


def index_and_filter_bytes(path):
    """(index block bytes, filter block bytes) of one table, or None if it is not a whole table."""
    with open(path, "rb") as f:
        f.seek(-48, os.SEEK_END)
        footer = f.read(48)
        if struct.unpack("<Q", footer[40:])[0] != TABLE_MAGIC:
            return None
        meta_off, i = varint(footer, 0)
        meta_size, i = varint(footer, i)
        _, i = varint(footer, i)
        index_size, _ = varint(footer, i)
        f.seek(meta_off)
        meta = f.read(meta_size)
    restarts = struct.unpack("<I", meta[-4:])[0]
    end = len(meta) - 4 - 4 * restarts
    j, key, filter_size = 0, b"", 0
    while j < end:
        shared, j = varint(meta, j)
        unshared, j = varint(meta, j)
        value_len, j = varint(meta, j)
        key = key[:shared] + meta[j:j + unshared]
        j += unshared
        value = meta[j:j + value_len]
        j += value_len
        if key.startswith(b"filter."):
            _, k = varint(value, 0)
            filter_size, _ = varint(value, k)
    return index_size, filter_size


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    d = sys.argv[1]
    tables = disk = index = filters = 0
    for name in sorted(os.listdir(d)):
        if not name.endswith((".ldb", ".sst")):
            continue
        path = os.path.join(d, name)
        sizes = index_and_filter_bytes(path)
        if sizes is None:
            continue
        tables += 1
        disk += os.path.getsize(path)
        index += sizes[0]
        filters += sizes[1]
    if not tables:
        sys.exit(f"{d}: no LevelDB tables")
    mib = 1 << 20
    print(f"{tables} tables, {disk / mib:.1f} MiB on disk: index blocks {index / mib:.1f} MiB "
          f"({index / disk * 1000:.1f}‰), filter blocks {filters / mib:.1f} MiB ({filters / disk * 1000:.1f}‰)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
