"""Kafka wire primitives: a zero-copy reader over one response buffer and an appending writer.

Responses are decoded from a single ``bytes`` object through ``memoryview`` slices, so record sets are never
copied on the background thread. The generated messages (``protocol/messages/``) call only what is here: classic
and compact (flexible) encodings are chosen by a ``flexible`` argument, null where a version allows it by the
``nullable_*`` twin of each reader. Nothing here imports aiokafka: importing it costs a Spark streaming query's start.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol, Self, TypeVar

from asyncconsumer.errors import CorruptResponseError

T = TypeVar("T")
Bytes = bytes | bytearray | memoryview

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")
# Typed twins of the unpackers the hot paths call (struct's own say tuple[Any, ...]).
_unpack_i16: Callable[[memoryview, int], tuple[int]] = _I16.unpack_from
_unpack_i32: Callable[[memoryview, int], tuple[int]] = _I32.unpack_from

ZERO_UUID = uuid.UUID(int=0)
EMPTY_VIEW = memoryview(b"")


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


def not_null(value: T | None, field: str, version: int, nullable: str) -> T:
    """``value``, unless it is None where ``version`` cannot say null (Kafka refuses to write that too)."""
    if value is None:
        raise ValueError(f"{field} is null, which v{version} cannot carry (nullable in v{nullable})")
    return value


def records_key(value: Bytes | None) -> bytes | None:
    """Compares record sets (views of a response, or bytes a test built) by content."""
    return None if value is None else bytes(value)


def blob_repr(value: Bytes | None) -> str:
    """Opaque bytes in a repr: their size only (they may be a SASL token, or a megabyte of records)."""
    return "None" if value is None else f"<{len(value)} bytes>"


class Reader:
    """Reads Kafka primitives from a buffer; every overrun raises ``CorruptResponseError``."""

    __slots__ = ("_buf", "_end", "pos")

    def __init__(self, buf: Bytes, pos: int = 0) -> None:
        self._buf = buf if isinstance(buf, memoryview) else memoryview(buf)
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

    def _truncated(self, n: int) -> CorruptResponseError:
        return CorruptResponseError(f"truncated response: need {n} bytes at {self.pos}, have {self._end - self.pos}")

    # The hot reads check bounds inline rather than through _need: a fetch response runs them per partition.
    def unpack(self, fixed: struct.Struct) -> tuple[Any, ...]:
        """Consecutive fixed-width fields in one call (the generated decoders merge them)."""
        pos = self.pos
        end = pos + fixed.size
        if end > self._end:
            raise self._truncated(fixed.size)
        self.pos = end
        return fixed.unpack_from(self._buf, pos)

    def int8(self) -> int:
        return int(_I8.unpack_from(self._buf, self._need(1))[0])

    def boolean(self) -> bool:
        return self._buf[self._need(1)] != 0

    def int16(self) -> int:
        return _unpack_i16(self._buf, self._need(2))[0]

    def uint16(self) -> int:
        return int(_U16.unpack_from(self._buf, self._need(2))[0])

    def int32(self) -> int:
        pos = self.pos
        if pos + 4 > self._end:
            raise self._truncated(4)
        self.pos = pos + 4
        return _unpack_i32(self._buf, pos)[0]

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
        pos = self.pos
        if pos < self._end and self._buf[pos] < 0x80:  # one byte: lengths and counts below 127, empty tag sections
            self.pos = pos + 1
            return self._buf[pos]
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
        pos = self.pos
        end = pos + n
        if n < 0 or end > self._end:
            raise self._truncated(n)
        self.pos = end
        return self._buf[pos:end]

    # Strings, bytes and arrays: classic (int16/int32 length, -1 null) or compact (uvarint length + 1, 0 null).
    def _length(self, flexible: bool, short: bool) -> int:
        if flexible:
            return self.uvarint() - 1
        return self.int16() if short else self.int32()

    def nullable_string(self, flexible: bool) -> str | None:
        n = self._length(flexible, True)
        return None if n < 0 else str(self.raw(n), "utf-8")

    def string(self, flexible: bool) -> str:
        value = self.nullable_string(flexible)
        if value is None:
            raise CorruptResponseError("null where a non-nullable string was expected")
        return value

    def nullable_view(self, flexible: bool) -> memoryview | None:
        """Bytes as a view of the buffer, no copy (record sets)."""
        n = self._length(flexible, False)
        return None if n < 0 else self.raw(n)

    def view(self, flexible: bool) -> memoryview:
        value = self.nullable_view(flexible)
        if value is None:
            raise CorruptResponseError("null where non-nullable bytes were expected")
        return value

    def nullable_bytes(self, flexible: bool) -> bytes | None:
        """Bytes copied out of the buffer (small fields: metadata, assignments, tokens)."""
        value = self.nullable_view(flexible)
        return None if value is None else bytes(value)

    def bytes_(self, flexible: bool) -> bytes:
        return bytes(self.view(flexible))

    def array_len(self, flexible: bool) -> int:
        """An array's length prefix, -1 for a null array; a count that cannot fit in what is left is corrupt."""
        n = self.uvarint() - 1 if flexible else self.int32()
        if n > self._end - self.pos:
            raise CorruptResponseError(f"array of {n} items cannot fit in {self._end - self.pos} bytes")
        return n

    def _count(self, flexible: bool) -> int:
        n = self.array_len(flexible)
        if n < 0:
            raise CorruptResponseError("null where a non-nullable array was expected")
        return n

    def structs(self, item_type: type[S], version: int, flexible: bool) -> tuple[S, ...]:
        decode = item_type.decode
        return tuple([decode(self, version) for _ in range(self._count(flexible))])

    def nullable_structs(self, item_type: type[S], version: int, flexible: bool) -> tuple[S, ...] | None:
        n = self.array_len(flexible)
        if n < 0:
            return None
        decode = item_type.decode
        return tuple([decode(self, version) for _ in range(n)])

    def array(self, flexible: bool, item: Callable[[Reader], T]) -> tuple[T, ...]:
        return tuple([item(self) for _ in range(self._count(flexible))])

    def nullable_array(self, flexible: bool, item: Callable[[Reader], T]) -> tuple[T, ...] | None:
        n = self.array_len(flexible)
        return None if n < 0 else tuple([item(self) for _ in range(n)])

    def strings(self, flexible: bool) -> tuple[str, ...]:
        return tuple([self.string(flexible) for _ in range(self._count(flexible))])

    def nullable_strings(self, flexible: bool) -> tuple[str, ...] | None:
        n = self.array_len(flexible)
        return None if n < 0 else tuple([self.string(flexible) for _ in range(n)])

    def int32s(self, flexible: bool) -> tuple[int, ...]:
        """An array of int32 (partition indexes, node ids) in one unpack."""
        n = self._count(flexible)
        return struct.unpack_from(f">{n}i", self._buf, self._need(4 * n))

    # Tagged fields (flexible versions): a count, then per field its tag, its size and its bytes.
    def tag(self) -> tuple[int, int]:
        """The next tagged field's tag and where it ends; read it, then ``skip_to`` that end."""
        tag = self.uvarint()
        size = self.uvarint()
        end = self.pos + size
        if end > self._end:
            raise CorruptResponseError(f"tagged field of {size} bytes cannot fit in {self._end - self.pos} bytes")
        return tag, end

    def skip_to(self, end: int) -> None:
        """Past a tagged field: what the decoder left of it is skipped, reading beyond it is corrupt."""
        if self.pos > end:
            raise CorruptResponseError(f"tagged field read {self.pos - end} bytes past its end")
        self.pos = end

    def skip_tags(self) -> None:
        """A tagged-field section whose fields this version does not know."""
        for _ in range(self.uvarint()):
            self.skip_to(self.tag()[1])


class Writer:
    """Appends Kafka primitives to one ``bytearray``."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def pack(self, fixed: struct.Struct, *values: Any) -> None:
        self.buf += fixed.pack(*values)

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def boolean(self, v: bool) -> None:
        self.buf += b"\x01" if v else b"\x00"

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def uint16(self, v: int) -> None:
        self.buf += _U16.pack(v)

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

    def raw(self, data: Bytes) -> None:
        self.buf += data

    def _length(self, n: int, flexible: bool, short: bool) -> None:
        """A length prefix, -1 for null."""
        if flexible:
            self.uvarint(n + 1)
        elif short:
            self.int16(n)
        else:
            self.int32(n)

    def nullable_string(self, v: str | None, flexible: bool) -> None:
        if v is None:
            self._length(-1, flexible, True)
            return
        data = v.encode("utf-8")
        self._length(len(data), flexible, True)
        self.buf += data

    def string(self, v: str, flexible: bool) -> None:
        self.nullable_string(v, flexible)

    def nullable_bytes(self, v: Bytes | None, flexible: bool) -> None:
        if v is None:
            self._length(-1, flexible, False)
            return
        self._length(len(v), flexible, False)
        self.buf += v

    def bytes_(self, v: Bytes, flexible: bool) -> None:
        self.nullable_bytes(v, flexible)

    def array_len(self, n: int | None, flexible: bool) -> None:
        """An array's length prefix (``None``: a null array); the caller writes the items."""
        self._length(-1 if n is None else n, flexible, False)

    def structs(self, items: Sequence[Struct] | None, version: int, flexible: bool) -> None:
        """An array of structs (``None``: a null array), each encoded at ``version``."""
        self.array_len(None if items is None else len(items), flexible)
        for item in items or ():
            item.encode(self, version)

    def nullable_struct(self, item: Struct | None, version: int) -> None:
        """A nullable struct field: an int8 marker (-1 null, 1 present), then the struct."""
        if item is None:
            self.int8(-1)
        else:
            self.int8(1)
            item.encode(self, version)

    def array(self, values: Sequence[T] | None, flexible: bool, item: Callable[[Writer, T], None]) -> None:
        self.array_len(None if values is None else len(values), flexible)
        for value in values or ():
            item(self, value)

    def strings(self, values: Sequence[str] | None, flexible: bool) -> None:
        self.array_len(None if values is None else len(values), flexible)
        for value in values or ():
            self.nullable_string(value, flexible)

    def int32s(self, values: Sequence[int] | None, flexible: bool) -> None:
        if values is None:
            self.array_len(None, flexible)
            return
        self.array_len(len(values), flexible)
        self.buf += struct.pack(f">{len(values)}i", *values)

    def tagged_fields(self, fields: dict[int, bytes]) -> None:
        """A tagged-field section, in tag order (what a version does not know it skips)."""
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag)
            self.uvarint(len(fields[tag]))
            self.buf += fields[tag]

    def empty_tags(self) -> None:
        self.buf += b"\x00"
