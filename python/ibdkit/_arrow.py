"""Assembles pyarrow RecordBatches from the column buffers built in C++ (no object per coin)."""

from __future__ import annotations

from typing import Any, Iterator


def schema(script_hex: bool) -> Any:
    import pyarrow as pa
    return pa.schema([
        ("txid", pa.string()),
        ("vout", pa.uint32()),
        ("height", pa.uint32()),
        ("coinbase", pa.bool_()),
        ("value", pa.int64()),
        ("script_type", pa.string()),
        ("address", pa.string()),
        ("script_pubkey", pa.string() if script_hex else pa.binary()),
    ])


def batches(raw: Iterator[dict], script_hex: bool) -> Iterator[Any]:
    try:
        import pyarrow as pa
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("Chainstate.to_arrow needs pyarrow: pip install pyarrow") from e
    sch = schema(script_hex)

    def buf(t: tuple) -> Any:  # (address, size, owner) of a buffer built in C++: no copy
        return pa.foreign_buffer(t[0], t[1], base=t[2])

    for b in raw:
        n = b["rows"]

        def var(t: Any, parts: tuple, validity: Any = None, nulls: int = 0) -> Any:
            return pa.Array.from_buffers(t, n, [validity, buf(parts[0]), buf(parts[1])], null_count=nulls)

        addr_valid, addr_off, addr_data, addr_nulls = b["address"]
        cols = [
            var(pa.string(), b["txid"]),
            pa.Array.from_buffers(pa.uint32(), n, [None, buf(b["vout"])]),
            pa.Array.from_buffers(pa.uint32(), n, [None, buf(b["height"])]),
            pa.Array.from_buffers(pa.bool_(), n, [None, buf(b["coinbase"])]),
            pa.Array.from_buffers(pa.int64(), n, [None, buf(b["value"])]),
            var(pa.string(), b["script_type"]),
            var(pa.string(), (addr_off, addr_data), buf(addr_valid) if addr_nulls else None, addr_nulls),
            var(sch.field("script_pubkey").type, b["script_pubkey"]),
        ]
        yield pa.RecordBatch.from_arrays(cols, schema=sch)


_TYPES = {"int64": "int64", "float64": "float64", "bool": "bool_", "string": "string", "binary": "binary"}


def table_schema(columns: list) -> Any:
    """The pyarrow schema of a table given as [(name, type name, nullable)] (arrow_table.h)."""
    import pyarrow as pa
    return pa.schema([pa.field(name, getattr(pa, _TYPES[t])(), nullable=nullable) for name, t, nullable in columns])


def table_batches(raw: Iterator[dict], columns: list) -> Iterator[Any]:
    """RecordBatches from the buffers of ArrowTableBuilder::TakeBatch (no copy, no object per row)."""
    try:
        import pyarrow as pa
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("to_arrow needs pyarrow: pip install pyarrow") from e
    sch = table_schema(columns)

    def buf(t: Any) -> Any:  # (address, size, owner) of a buffer built in C++
        return None if t is None else pa.foreign_buffer(t[0], t[1], base=t[2])

    for b in raw:
        n = b["rows"]
        arrays = []
        for field, (valid, nulls, offsets, values) in zip(sch, b["columns"]):
            bufs = [buf(valid)] + ([buf(offsets)] if offsets is not None else []) + [buf(values)]
            arrays.append(pa.Array.from_buffers(field.type, n, bufs, null_count=nulls))
        yield pa.RecordBatch.from_arrays(arrays, schema=sch)
