"""The executor reader's Arrow path without a broker: ``poll_arrow``-shaped tables in, Spark-schema record batches
out (trimmed at the range's end, batched by ``arrowBatchRows``), and the no-progress timeout."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.extras import requires_extra

requires_extra("spark", "pyspark")  # first: asyncconsumer.spark imports pyspark

from asyncconsumer._caller.arrow_table import schema as poll_arrow_schema
from asyncconsumer.errors import KafkaTimeoutError
from asyncconsumer.spark import reader
from asyncconsumer.spark.offsets import OffsetRange
from asyncconsumer.spark.options import SourceOptions

pa = requires_extra("spark", "pyarrow")

UTC = datetime.UTC


def polled(offsets: list[int], *, include_headers: bool = False, topic: str = "t", partition: int = 3) -> Any:
    """A table as ``poll_arrow`` returns it: row ``i`` has offset ``offsets[i]``; every third key and every fourth
    value is null; headers ``[("h", b"<offset>"), ("n", None)]``."""
    n = len(offsets)
    columns: dict[str, Any] = {
        "topic": pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array([topic])),
        "partition": [partition] * n,
        "offset": offsets,
        "timestamp": [1_700_000_000_000 + o for o in offsets],
        "timestamp_type": [o % 2 for o in offsets],
        "key": [None if o % 3 == 0 else f"k{o}".encode() for o in offsets],
        "value": [None if o % 4 == 0 else f"v{o}".encode() for o in offsets],
    }
    if include_headers:
        columns["headers"] = [[{"key": "h", "value": f"{o}".encode()}, {"key": "n", "value": None}] for o in offsets]
    return pa.table(columns, schema=poll_arrow_schema(include_headers))


def spark_row(offset: int, *, include_headers: bool = False, topic: str = "t", partition: int = 3) -> dict[str, Any]:
    """The row ``polled`` has at ``offset``, as Spark's Kafka schema reads back."""
    row: dict[str, Any] = {
        "key": None if offset % 3 == 0 else f"k{offset}".encode(),
        "value": None if offset % 4 == 0 else f"v{offset}".encode(),
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "timestamp": datetime.datetime.fromtimestamp((1_700_000_000_000 + offset) / 1000, tz=UTC),
        "timestampType": offset % 2,
    }
    if include_headers:
        row["headers"] = [{"key": "h", "value": f"{offset}".encode()}, {"key": "n", "value": None}]
    return row


def rows(batches: list[Any]) -> list[dict[str, Any]]:
    return [row for batch in batches for row in batch.to_pylist()]


@pytest.mark.parametrize("include_headers", [False, True])
def test_a_poll_arrow_table_becomes_spark_kafka_schema_with_nulls_kept(include_headers: bool) -> None:
    offsets = list(range(10, 22))
    batches = list(reader.arrow_batches([polled(offsets, include_headers=include_headers)], 100, include_headers, 50))
    assert len(batches) == 1
    assert batches[0].schema.equals(reader.arrow_schema(include_headers))
    assert batches[0].schema.names == reader.arrow_schema(include_headers).names  # names and order, as Spark checks
    assert rows(batches) == [spark_row(o, include_headers=include_headers) for o in offsets]
    assert batches[0].column("key").null_count == 4 and batches[0].column("value").null_count == 3


def test_rows_at_and_past_the_end_are_cut_even_across_an_offset_gap() -> None:
    # 13 is missing (a control record or a compacted one): the end falls in the gap
    tables = [polled([10, 11, 12]), polled([14, 15, 16]), polled([17])]
    out = rows(list(reader.arrow_batches(tables, 13, False, 100)))
    assert [row["offset"] for row in out] == [10, 11, 12]
    out = rows(list(reader.arrow_batches(tables, 16, False, 100)))
    assert [row["offset"] for row in out] == [10, 11, 12, 14, 15]


def test_the_end_is_found_in_a_table_of_several_chunks() -> None:
    table = pa.concat_tables([polled([1, 2]), polled([3, 4, 5]), polled([6])])
    assert table.column("offset").num_chunks == 3
    assert reader.below(table, 5).column("offset").to_pylist() == [1, 2, 3, 4]
    assert reader.below(table, 1).num_rows == 0
    assert reader.below(table, 7) is table


def test_small_polls_are_joined_and_large_ones_split_into_batches_of_at_most_batch_rows() -> None:
    offsets = list(range(23))
    cuts = [(0, 3), (3, 5), (5, 20), (20, 23)]
    tables = [polled(offsets[a:b], include_headers=True) for a, b in cuts]
    batches = list(reader.arrow_batches(tables, 100, True, 4))
    assert [b.num_rows for b in batches] == [4, 4, 4, 4, 4, 3]
    assert rows(batches) == [spark_row(o, include_headers=True) for o in offsets]


def test_polls_past_the_end_give_no_empty_batches() -> None:
    batches = list(reader.arrow_batches([polled([5, 6]), polled([7, 8])], 5, False, 10))
    assert batches == []


class ScriptedConsumer:
    """``Consumer`` as the reader uses it: each ``poll_arrow`` returns the next scripted table (then empty ones) and
    moves the position past it."""

    script: list[Any] = []
    last_config: dict[str, Any] = {}
    earliest = 0
    """What ``beginning_offsets`` answers (a scripted exception stands for records deleted under the read)."""

    def __init__(self, **config: Any) -> None:
        self.config = config
        ScriptedConsumer.last_config = config
        self.position_ = -1
        self.tables = list(self.script)

    def __enter__(self) -> ScriptedConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def assign(self, partitions: list[Any]) -> None:
        assert [(tp.topic, tp.partition) for tp in partitions] == [("t", 3)]

    def seek(self, tp: Any, offset: int) -> None:
        self.position_ = offset

    def position(self, tp: Any) -> int:
        return self.position_

    def poll_arrow(self, timeout_ms: float = 0, max_records: int | None = None, include_headers: bool = False) -> Any:
        if not self.tables:
            return polled([], include_headers=include_headers)
        table = self.tables.pop(0)
        if isinstance(table, Exception):
            raise table
        self.position_ = table.column("offset")[-1].as_py() + 1
        return table

    def beginning_offsets(self, partitions: list[Any]) -> dict[Any, int]:
        return dict.fromkeys(partitions, self.earliest)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[ScriptedConsumer]]:
    monkeypatch.setattr(reader, "Consumer", ScriptedConsumer)
    yield ScriptedConsumer
    ScriptedConsumer.script = []
    ScriptedConsumer.earliest = 0


def test_read_arrow_stops_at_the_end_of_its_range(scripted: type[ScriptedConsumer]) -> None:
    scripted.script = [polled([4, 5, 6]), polled([7, 8, 9]), polled([10])]
    options = SourceOptions(consumer={"bootstrap.servers": "h:1"}, arrow_batch_rows=2)
    batches = list(reader.read_arrow(options, OffsetRange("t", 3, 4, 8)))
    assert [b.num_rows for b in batches] == [2, 2]
    assert rows(batches) == [spark_row(o) for o in (4, 5, 6, 7)]


def test_read_arrow_raises_kafka_timeout_when_the_position_stops_moving(scripted: type[ScriptedConsumer]) -> None:
    scripted.script = [polled([4, 5])]
    options = SourceOptions(consumer={"bootstrap.servers": "h:1"}, poll_timeout_ms=1)
    batches = reader.read_arrow(options, OffsetRange("t", 3, 4, 8))
    with pytest.raises(KafkaTimeoutError, match=r"t-3.*no progress past offset 6 \(reading up to 8\)"):
        next(batches)


def test_a_record_without_headers_has_null_headers_as_in_spark_kafka_source() -> None:
    table = polled([1, 2, 3], include_headers=True)
    table = table.set_column(
        table.schema.get_field_index("headers"),
        "headers",
        pa.array([[], [{"key": "h", "value": None}], []], table.schema.field("headers").type),
    )
    got = [row["headers"] for row in rows(list(reader.arrow_batches([table], 100, True, 50)))]
    assert got == [None, [{"key": "h", "value": None}], None]
    untouched = polled([1, 2], include_headers=True)  # every record has headers: the column is kept as it is
    assert reader.to_spark(untouched, True).column("headers").null_count == 0


def test_polls_are_joined_only_until_they_hold_batch_bytes_and_a_large_poll_passes_without_a_copy() -> None:
    offsets = list(range(12))
    cuts = [(0, 2), (2, 4), (4, 10), (10, 12)]
    tables = [polled(offsets[a:b]) for a, b in cuts]
    one_row = reader.to_spark(polled([0]), False).nbytes
    batches = list(reader.arrow_batches(tables, 100, False, 1000, batch_bytes=3 * one_row))
    assert [b.num_rows for b in batches] == [4, 6, 2]  # 2 + 2 joined; 6 alone; the last 2 at the end
    assert rows(batches) == [spark_row(o) for o in offsets]
    big = reader.to_spark(tables[2], False)
    alone = list(reader.arrow_batches([tables[2]], 100, False, 1000, batch_bytes=one_row))
    assert [b.num_rows for b in alone] == [6]
    assert alone[0].column(1).buffers()[2].address == big.column("value").chunks[0].buffers()[2].address  # no copy


def test_the_executor_consumer_fetches_large_unless_the_user_says_otherwise(scripted: type[ScriptedConsumer]) -> None:
    from asyncconsumer.config import ConsumerConfig

    scripted.script = [polled([4])]
    options = SourceOptions(consumer={"bootstrap.servers": "h:1", "max.partition.fetch.bytes": "1024"})
    assert rows(list(reader.read_arrow(options, OffsetRange("t", 3, 4, 5)))) == [spark_row(4)]
    config = ConsumerConfig.from_kwargs(**scripted.last_config)
    assert config.max_partition_fetch_bytes == 1024  # the user's
    assert config.fetch_buffer_bytes == 32 << 20 and config.max_poll_records == 100_000


def test_records_deleted_under_a_read_follow_fail_on_data_loss_instead_of_being_skipped_silently(
    scripted: type[ScriptedConsumer],
) -> None:
    from asyncconsumer.errors import OffsetOutOfRangeError
    from asyncconsumer.spark.offsets import DataLossError

    r = OffsetRange("t", 3, 4, 10)
    scripted.script, scripted.earliest = [polled([4, 5]), OffsetOutOfRangeError("t-3 at 6"), polled([8, 9])], 8
    with pytest.raises(DataLossError, match=r"t-3: offsets from 6 are gone while reading \[4, 10\)"):
        list(reader.read_arrow(SourceOptions(consumer={"bootstrap.servers": "h:1"}), r))
    assert scripted.last_config["auto.offset.reset"] == "none"  # never reset past them silently
    lenient = SourceOptions(consumer={"bootstrap.servers": "h:1"}, fail_on_data_loss=False)
    assert rows(list(reader.read_arrow(lenient, r))) == [spark_row(o) for o in (4, 5, 8, 9)]  # on from the earliest
    scripted.script, scripted.earliest = [polled([4, 5]), OffsetOutOfRangeError("t-3 at 6")], 0  # a shorter log
    assert rows(list(reader.read_arrow(lenient, r))) == [spark_row(o) for o in (4, 5)]  # nothing of the range left
