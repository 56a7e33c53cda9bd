"""The compiled v2 record decoder (``_v2records_c.c``): the same API and results as ``_v2records``."""

from typing import Any

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
) -> tuple[int, int, int]: ...

class ColumnSink:
    def __init__(self, include_headers: bool) -> None: ...
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
