"""Kafka wire primitives: a zero-copy reader over one response buffer and an appending writer.

Responses are decoded from a single ``bytes`` object through ``memoryview`` slices, so record sets are never
copied on the background thread. Nothing here imports aiokafka: importing it costs a Spark streaming query's start.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol, Self, TypeVar

from asyncconsumer.errors import CorruptResponseError

T = TypeVar("T")

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)


def encode_uvarint(value: int) -> bytes:
    """An unsigned varint of the value's low 32 bits (Kafka's UNSIGNED_VARINT: 7 bits a byte, low bits first)."""
    value &= 0xFFFFFFFF
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """A signed 32-bit varint, zigzag-encoded (Kafka's VARINT): small magnitudes of either sign stay short."""
    return encode_uvarint((value << 1) ^ (value >> 31))


class Struct(Protocol):
    """A message or a part of one that encodes and decodes itself at a given version (``base.Message``)."""

    def encode(self, w: Writer, version: int) -> None: ...

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self: ...


S = TypeVar("S", bound=Struct)


class Reader:
    """Reads Kafka primitives from a buffer; every overrun raises ``CorruptResponseError``."""

    __slots__ = ("_buf", "_end", "pos")

    def __init__(self, buf: bytes | memoryview, pos: int = 0) -> None:
        self._buf = memoryview(buf) if not isinstance(buf, memoryview) else buf
        self._end = len(self._buf)
        self.pos = pos

    @property
    def remaining(self) -> int:
        return self._end - self.pos

    def _need(self, n: int) -> int:
        pos = self.pos
        if n < 0 or pos + n > self._end:
            raise CorruptResponseError(f"truncated response: need {n} bytes at {pos}, have {self._end - pos}")
        self.pos = pos + n
        return pos

    def int8(self) -> int:
        return int(_I8.unpack_from(self._buf, self._need(1))[0])

    def boolean(self) -> bool:
        return self.int8() != 0

    def int16(self) -> int:
        return int(_I16.unpack_from(self._buf, self._need(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack_from(self._buf, self._need(4))[0])

    def uint32(self) -> int:
        return int(_U32.unpack_from(self._buf, self._need(4))[0])

    def int64(self) -> int:
        return int(_I64.unpack_from(self._buf, self._need(8))[0])

    def float64(self) -> float:
        return float(_F64.unpack_from(self._buf, self._need(8))[0])

    def uuid(self) -> uuid.UUID:
        start = self._need(16)
        return uuid.UUID(bytes=bytes(self._buf[start : start + 16]))

    def uvarint(self) -> int:
        value = 0
        shift = 0
        while True:
            byte = self._buf[self._need(1)]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise CorruptResponseError("unsigned varint longer than 5 bytes")

    def varint(self) -> int:
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)

    def raw(self, n: int) -> memoryview:
        start = self._need(n)
        return self._buf[start : start + n]

    # Strings and bytes: classic (int16/int32 length) and compact (uvarint length + 1).
    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise CorruptResponseError("null where a non-nullable string was expected")
        return value

    def nullable_string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else str(self.raw(n), "utf-8")

    def compact_string(self) -> str:
        value = self.compact_nullable_string()
        if value is None:
            raise CorruptResponseError("null where a non-nullable compact string was expected")
        return value

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint() - 1
        return None if n < 0 else str(self.raw(n), "utf-8")

    def nullable_bytes(self) -> memoryview | None:
        n = self.int32()
        return None if n < 0 else self.raw(n)

    def compact_nullable_bytes(self) -> memoryview | None:
        n = self.uvarint() - 1
        return None if n < 0 else self.raw(n)

    def bytes_(self, flexible: bool) -> bytes:
        """A non-nullable ``bytes`` field, copied out of the buffer (for small fields: metadata, assignments)."""
        value = self.nbytes(flexible)
        if value is None:
            raise CorruptResponseError("null where non-nullable bytes were expected")
        return bytes(value)

    def str_(self, flexible: bool) -> str:
        return self.compact_string() if flexible else self.string()

    def nstr(self, flexible: bool) -> str | None:
        return self.compact_nullable_string() if flexible else self.nullable_string()

    def nbytes(self, flexible: bool) -> memoryview | None:
        return self.compact_nullable_bytes() if flexible else self.nullable_bytes()

    def _array_len(self, flexible: bool) -> int:
        """An array's length prefix, -1 for a null array."""
        n = self.uvarint() - 1 if flexible else self.int32()
        if n > self._end - self.pos:
            raise CorruptResponseError(f"array of {n} items cannot fit in {self._end - self.pos} bytes")
        return n

    def array(self, flexible: bool, item: Callable[[Reader], T]) -> list[T]:
        items = self.nullable_array(flexible, item)
        return [] if items is None else items

    def nullable_array(self, flexible: bool, item: Callable[[Reader], T]) -> list[T] | None:
        n = self._array_len(flexible)
        return None if n < 0 else [item(self) for _ in range(n)]

    def structs(self, item_type: type[S], version: int, flexible: bool) -> tuple[S, ...]:
        """An array of ``item_type`` structs decoded at ``version``; a null array reads as empty."""
        n = self._array_len(flexible)
        decode = item_type.decode
        return tuple([decode(self, version) for _ in range(n)])  # range(-1) is empty

    def nullable_structs(self, item_type: type[S], version: int, flexible: bool) -> tuple[S, ...] | None:
        """Like ``structs`` but a null array reads as ``None``."""
        n = self._array_len(flexible)
        if n < 0:
            return None
        decode = item_type.decode
        return tuple([decode(self, version) for _ in range(n)])

    def int32s(self, flexible: bool) -> tuple[int, ...]:
        """An array of int32 (partition indexes, node ids); a null array reads as empty."""
        return tuple(self.array(flexible, Reader.int32))

    def strs(self, flexible: bool) -> tuple[str, ...]:
        """An array of non-nullable strings; a null array reads as empty."""
        return tuple(self.array(flexible, lambda r: r.str_(flexible)))

    def topic(self, partition_type: type[S], version: int, flexible: bool) -> tuple[str, tuple[S, ...]]:
        """The common topic struct: its name and its array of ``partition_type`` structs; skips its tagged fields."""
        name = self.str_(flexible)
        partitions = self.structs(partition_type, version, flexible)
        self.end_struct(flexible)
        return name, partitions

    def end_struct(self, flexible: bool) -> None:
        """Skips the tagged-field section that ends every struct of a flexible version (none before)."""
        if flexible:
            for _ in range(self.uvarint()):
                self.uvarint()  # tag
                self._need(self.uvarint())

    def tagged_fields(self) -> dict[int, memoryview]:
        """Reads a tagged-field section; unknown tags are kept raw so callers may decode the ones they know."""
        count = self.uvarint()
        fields: dict[int, memoryview] = {}
        for _ in range(count):
            tag = self.uvarint()
            size = self.uvarint()
            fields[tag] = self.raw(size)
        return fields


class Writer:
    """Appends Kafka primitives to one ``bytearray``."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def boolean(self, v: bool) -> None:
        self.buf += b"\x01" if v else b"\x00"

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def uint32(self, v: int) -> None:
        self.buf += _U32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def float64(self, v: float) -> None:
        self.buf += _F64.pack(v)

    def uuid(self, v: uuid.UUID) -> None:
        self.buf += v.bytes

    def uvarint(self, v: int) -> None:
        self.buf += encode_uvarint(v)

    def varint(self, v: int) -> None:
        self.buf += encode_varint(v)

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self.buf += data

    def nstr(self, v: str | None, flexible: bool) -> None:
        if v is None:
            if flexible:
                self.uvarint(0)
            else:
                self.int16(-1)
            return
        data = v.encode("utf-8")
        if flexible:
            self.uvarint(len(data) + 1)
        else:
            self.int16(len(data))
        self.buf += data

    def str_(self, v: str, flexible: bool) -> None:
        self.nstr(v, flexible)

    def nbytes(self, v: bytes | bytearray | memoryview | None, flexible: bool) -> None:
        if v is None:
            if flexible:
                self.uvarint(0)
            else:
                self.int32(-1)
            return
        if flexible:
            self.uvarint(len(v) + 1)
        else:
            self.int32(len(v))
        self.buf += v

    def array_len(self, n: int | None, flexible: bool) -> None:
        """Writes an array's length prefix (``None`` = null array); the caller writes the items."""
        if flexible:
            self.uvarint(0 if n is None else n + 1)
        else:
            self.int32(-1 if n is None else n)

    def structs(self, items: Sequence[Struct] | None, version: int, flexible: bool) -> None:
        """An array of structs (``None``: a null array), each encoded at ``version``."""
        self.array_len(None if items is None else len(items), flexible)
        for item in items or ():
            item.encode(self, version)

    def int32s(self, values: Sequence[int], flexible: bool) -> None:
        self.array_len(len(values), flexible)
        for value in values:
            self.int32(value)

    def strs(self, values: Sequence[str], flexible: bool) -> None:
        self.array_len(len(values), flexible)
        for value in values:
            self.str_(value, flexible)

    def topic(self, name: str, partitions: Sequence[Struct], version: int, flexible: bool) -> None:
        """The common topic struct: its name, its array of partition structs and the tail (see ``end_struct``)."""
        self.str_(name, flexible)
        self.structs(partitions, version, flexible)
        self.end_struct(flexible)

    def end_struct(self, flexible: bool) -> None:
        """Ends a struct: an empty tagged-field section in flexible versions, nothing before."""
        if flexible:
            self.buf += b"\x00"

    def tagged_fields(self, fields: dict[int, bytes] | None = None) -> None:
        if not fields:
            self.uvarint(0)
            return
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag)
            self.uvarint(len(fields[tag]))
            self.buf += fields[tag]
