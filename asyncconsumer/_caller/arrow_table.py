"""``poll_arrow``'s tables: the column buffers a ``ColumnSink`` filled, wrapped by pyarrow without a copy.

pyarrow is optional (the ``arrow`` extra): it is imported here, when a table is first asked for, and its absence is
an ``ImportError`` naming the extra before anything is consumed.
"""

from __future__ import annotations

from array import array
from functools import cache
from typing import Any

__all__ = ["empty_table", "require_pyarrow", "schema", "to_table"]

_MISSING = "poll_arrow() needs pyarrow, installed by asyncconsumer's 'arrow' extra: pip install 'asyncconsumer[arrow]'"


def require_pyarrow() -> Any:
    """The pyarrow module; ``ImportError`` naming the extra when it is not installed."""
    try:
        import pyarrow
    except ImportError as exc:
        raise ImportError(_MISSING, name="pyarrow") from exc
    return pyarrow


@cache
def schema(include_headers: bool) -> Any:
    """The columns of ``poll_arrow``'s tables, in order."""
    pa = require_pyarrow()
    fields = [
        pa.field("topic", pa.dictionary(pa.int32(), pa.string()), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("timestamp_type", pa.int8(), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
    ]
    if include_headers:
        header = pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
        fields.append(pa.field("headers", pa.list_(pa.field("item", header, nullable=False)), nullable=False))
    return pa.schema(fields)


def _binary(pa: Any, kind: Any, rows: int, parts: tuple[Any, Any, Any, int]) -> Any:
    valid, offsets, data, nulls = parts
    validity = pa.py_buffer(valid) if nulls else None
    return pa.Array.from_buffers(kind, rows, [validity, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)


def _fixed(pa: Any, kind: Any, rows: int, buffer: Any) -> Any:
    return pa.Array.from_buffers(kind, rows, [None, pa.py_buffer(buffer)], null_count=0)


def _batch(pa: Any, parts: dict[str, Any], topics: Any, include_headers: bool) -> Any:
    rows = parts["rows"]
    target = schema(include_headers)
    columns = [
        pa.DictionaryArray.from_arrays(_fixed(pa, pa.int32(), rows, parts["topic"]), topics),
        _fixed(pa, pa.int32(), rows, parts["partition"]),
        _fixed(pa, pa.int64(), rows, parts["offset"]),
        _fixed(pa, pa.timestamp("ms", tz="UTC"), rows, parts["timestamp"]),
        _fixed(pa, pa.int8(), rows, parts["timestamp_type"]),
        _binary(pa, pa.binary(), rows, parts["key"]),
        _binary(pa, pa.binary(), rows, parts["value"]),
    ]
    if include_headers:
        count = parts["headers"]
        header_type = target.field("headers").type
        struct = pa.StructArray.from_arrays(
            [
                _binary(pa, pa.string(), count, parts["header_key"]),
                _binary(pa, pa.binary(), count, parts["header_value"]),
            ],
            fields=list(header_type.value_type),
        )
        columns.append(
            pa.Array.from_buffers(
                header_type, rows, [None, pa.py_buffer(parts["header_offsets"])], null_count=0, children=[struct]
            )
        )
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _strings(pa: Any, texts: list[str]) -> Any:
    """A ``pyarrow.string()`` array of ``texts``, built from its buffers: ``pa.array`` on a list first asks whether it
    is a pandas object, which imports pandas when it is installed (~250 ms and ~45 MB on the first poll; measured
    with bench_consume.py's ``asyncconsumer-arrow``)."""
    data = bytearray()
    offsets = array("i", [0])
    for text in texts:
        data += text.encode()
        offsets.append(len(data))
    return pa.Array.from_buffers(
        pa.string(), len(texts), [None, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=0
    )


def to_table(chunks: list[dict[str, Any]], topics: list[str], include_headers: bool) -> Any:
    """One ``pyarrow.Table`` of the chunks' rows (a chunk per 1 GiB of data at most); ``topic`` is dictionary-encoded
    over ``topics``."""
    pa = require_pyarrow()
    names = _strings(pa, topics)
    batches = [_batch(pa, parts, names, include_headers) for parts in chunks if parts["rows"] or len(chunks) == 1]
    return pa.Table.from_batches(batches, schema=schema(include_headers))


def empty_table(include_headers: bool) -> Any:
    """A table with ``poll_arrow``'s columns and no rows."""
    return schema(include_headers).empty_table()
