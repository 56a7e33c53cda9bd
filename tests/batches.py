"""Hand-built record batches for unit tests (aiokafka's builder; tests may import aiokafka directly)."""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka.record.default_records import DefaultRecordBatchBuilder


def build_batch(
    base_offset: int,
    values: Sequence[bytes | None],
    *,
    keys: Sequence[bytes | None] | None = None,
    timestamp: int = 1_700_000_000_000,
    headers: Sequence[tuple[str, bytes | None]] = (),
    compression: int = 0,
    transactional: bool = False,
    producer_id: int = -1,
) -> bytes:
    """One v2 batch whose records have offsets base_offset, base_offset+1, ..."""
    builder = DefaultRecordBatchBuilder(
        2,
        compression,
        int(transactional),
        producer_id,
        0 if producer_id >= 0 else -1,
        0 if producer_id >= 0 else -1,
        1 << 26,
    )
    for i, value in enumerate(values):
        key = keys[i] if keys is not None else None
        builder.append(i, timestamp + i, key, value, list(headers))
    data = bytearray(builder.build())
    data[0:8] = base_offset.to_bytes(8, "big", signed=True)
    return bytes(data)


def build_control_batch(offset: int, producer_id: int, commit: bool) -> bytes:
    """A transaction marker (COMMIT or ABORT) as the broker writes it."""
    builder = DefaultRecordBatchBuilder(2, 0, 1, producer_id, 0, -1, 1 << 20)
    key = (0).to_bytes(2, "big") + (1 if commit else 0).to_bytes(2, "big")
    value = (0).to_bytes(2, "big") + (0).to_bytes(4, "big")
    builder.append(0, 1_700_000_000_000, key, value, [])
    data = bytearray(builder.build())
    data[0:8] = offset.to_bytes(8, "big", signed=True)
    # attributes: set the control bit (0x20) and recompute the CRC over the bytes after it.
    attributes = int.from_bytes(data[21:23], "big") | 0x20
    data[21:23] = attributes.to_bytes(2, "big")
    from aiokafka.record.util import calc_crc32c

    data[17:21] = calc_crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)
