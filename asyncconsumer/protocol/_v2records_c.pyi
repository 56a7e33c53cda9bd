"""The compiled v2 record decoder (``_v2records_c.c``): the same API and results as ``_v2records``."""

from typing import Any

CRC32C_IMPLEMENTATION: str
"""``"sse4.2"`` (the CPU's crc32 instruction, found at run time) or ``"software"`` (slicing-by-8 tables)."""

def crc32c(data: Any, value: int = 0, /) -> int:
    """The CRC-32C of a bytes-like ``data`` continuing from ``value`` (as ``zlib.crc32``); the GIL is released
    over 64 KiB and more."""

def crc32c_software(data: Any, value: int = 0, /) -> int:
    """``crc32c`` by the portable tables whatever the CPU has (for the tests)."""

def fill_records(
    batch: Any,
    pos: int,
    left: int,
    position: int,
    limit: int,
    out: list[Any],
    record_type: type,
    topic: str,
    partition: int,
    leader_epoch: int | None,
    extra: object = None,
) -> tuple[int, int, int]: ...

class ColumnSink:
    """One poll's column buffers; ``fill`` decodes with the GIL released, and refuses other threads meanwhile."""

    def __init__(self, include_headers: bool, expected_bytes: int = 0) -> None: ...
    @property
    def include_headers(self) -> bool: ...
    @property
    def rows(self) -> int: ...
    @property
    def data_bytes(self) -> int: ...
    def fill(
        self, batch: Any, pos: int, left: int, position: int, limit: int, topic: int, partition: int
    ) -> tuple[int, int, int]: ...
    def append(
        self,
        topic: int,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, bytes | None], ...],
    ) -> None: ...
    def finish(self) -> dict[str, Any]: ...
