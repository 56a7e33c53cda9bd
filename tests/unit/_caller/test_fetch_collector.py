"""The caller's side of the record path: decoding, positions, corruption, deserializers, transactions, and the
bound on a batch's decompressed size."""

from __future__ import annotations

from typing import TYPE_CHECKING

import google_crc32c
import google_crc32c.python as google_crc32c_python
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncconsumer._caller import arrow_table
from asyncconsumer._caller.fetch_collector import FetchCollector
from asyncconsumer._state.fetch_buffer import GROW_AFTER_DRY_POLLS, CompletedFetch, FetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import (
    CorruptRecordError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordDeserializationError,
)
from asyncconsumer.protocol import records as records_module
from asyncconsumer.protocol.messages.fetch import AbortedTransaction
from asyncconsumer.records import TopicPartition
from tests.support.batches import (
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    batch_around,
    build_batch,
    build_control_batch,
    compressed_zeros,
    legacy_message_set,
    legacy_wrapper_around,
)
from tests.support.extras import requires_extra
from tests.support.fetch_buffer import add, held_back

if TYPE_CHECKING:
    import pyarrow as pa

TP = TopicPartition("t", 0)
MIB = 1 << 20


def setup(
    records: bytes, position: int = 0, fetch_offset: int | None = None, **config: object
) -> tuple[FetchCollector, SubscriptionState, FetchBuffer]:
    cfg = ConsumerConfig.from_kwargs("h:1", **config)
    subs = SubscriptionState("earliest")
    subs.assign([TP])
    subs.seek(TP, position)
    buffer = FetchBuffer(1 << 20, CallerSignal())
    add(buffer, subs, records, fetch_offset if fetch_offset is not None else position)
    return FetchCollector(cfg, subs, buffer), subs, buffer


def test_records_come_back_in_order_and_positions_advance_per_poll() -> None:
    batch = build_batch(0, [b"v0", b"v1", b"v2"], keys=[b"k0", None, b"k2"], headers=[("h", b"x")]) + build_batch(
        3, [b"v3", b"v4"]
    )
    collector, subs, buffer = setup(batch)
    first = collector.collect(2)[TP]
    assert [(r.offset, r.key, r.value) for r in first] == [(0, b"k0", b"v0"), (1, None, b"v1")]
    assert first[0].headers == (("h", b"x"),)
    assert first[0].serialized_key_size == 2 and first[1].serialized_key_size == -1
    assert subs.position(TP) == 2
    rest = collector.collect(10)[TP]
    assert [r.offset for r in rest] == [2, 3, 4]
    assert subs.position(TP) == 5
    assert collector.collect(10) == {}
    assert buffer.buffered_bytes == 0


def test_a_poll_that_takes_a_fetchs_last_record_frees_it_and_wakes_the_background() -> None:
    collector, subs, buffer = setup(build_batch(0, [b"a", b"b"]) + build_batch(2, [b"c"]))
    held_back(buffer)  # the background waits for room
    woken: list[bool] = []
    buffer.set_space_waiter(lambda: woken.append(True))
    assert [r.offset for r in collector.collect(3)[TP]] == [0, 1, 2]
    # freed by this poll, not the next one: the background fetches while the caller works on these records
    assert buffer.buffered_bytes == 0
    assert woken == [True]
    assert subs.position(TP) == 3


def test_records_without_headers_share_one_empty_tuple() -> None:
    collector, _, _ = setup(build_batch(0, [b"a", b"b"]))
    records = collector.collect(10)[TP]
    assert records[0].headers == () and records[0].headers is records[1].headers


def test_records_before_the_position_inside_a_batch_are_skipped() -> None:
    collector, _subs, _ = setup(build_batch(10, [b"a", b"b", b"c", b"d"]), position=12, fetch_offset=12)
    assert [r.offset for r in collector.collect(10)[TP]] == [12, 13]


def test_a_seek_drops_buffered_data_of_the_old_position() -> None:
    collector, subs, buffer = setup(build_batch(0, [b"a", b"b", b"c"]))
    assert [r.offset for r in collector.collect(1)[TP]] == [0]
    subs.seek(TP, 40)
    assert collector.collect(10) == {}
    assert subs.position(TP) == 40
    assert buffer.buffered_bytes == 0


def test_a_pause_keeps_what_was_fetched_and_resume_takes_it_up_where_it_stopped() -> None:
    # KAFKA-7548: a resumed partition hands out at once, with no fetch again (which could wait behind a long poll)
    collector, subs, buffer = setup(build_batch(0, [b"a", b"b", b"c"]), max_partition_fetch_bytes=1024)
    assert [r.offset for r in collector.collect(1)[TP]] == [0]
    epoch = subs.epoch(TP)
    subs.set_paused([TP], True)
    add(buffer, subs, build_batch(3, [b"d", b"e"]), 3)  # a fetch in flight at the pause arrives while paused
    held = buffer.buffered_bytes
    assert collector.collect(10) == {}
    assert buffer.buffered_bytes == held > 0 and subs.epoch(TP) == epoch and subs.position(TP) == 1
    subs.set_paused([TP], False)
    assert [r.offset for r in collector.collect(3)[TP]] == [1, 2, 3]
    assert [r.offset for r in collector.collect(10)[TP]] == [4]
    assert subs.position(TP) == 5 and buffer.buffered_bytes == 0


def test_a_fetch_paused_again_after_its_resume_stays_ahead_of_the_fetches_kept_behind_it() -> None:
    collector, subs, buffer = setup(build_batch(0, [b"a", b"b", b"c"]), max_partition_fetch_bytes=1024)
    assert [r.offset for r in collector.collect(1)[TP]] == [0]
    subs.set_paused([TP], True)
    add(buffer, subs, build_batch(3, [b"d", b"e"]), 3)
    assert collector.collect(10) == {}
    subs.set_paused([TP], False)
    assert [r.offset for r in collector.collect(1)[TP]] == [1]
    subs.set_paused([TP], True)  # the first fetch is under way again, the second still kept
    assert collector.collect(10) == {}
    subs.set_paused([TP], False)
    assert [r.offset for r in collector.collect(10)[TP]] == [2, 3, 4]
    assert buffer.buffered_bytes == 0


def test_a_paused_partitions_fetches_are_kept_while_others_are_handed_out() -> None:
    collector, subs, buffer = setup(build_batch(0, [b"a", b"b"]), max_partition_fetch_bytes=1024)
    other = TopicPartition("t", 1)
    subs.assign([TP, other])
    subs.seek(TP, 0)
    subs.seek(other, 0)
    add(buffer, subs, build_batch(0, [b"a", b"b"]), 0)
    view = memoryview(build_batch(0, [b"x"]))
    buffer.add_all([CompletedFetch(other, subs.epoch(other) or 0, 0, 1, view, 1)])
    buffer.deliver()
    subs.set_paused([TP], True)
    assert {tp: [r.value for r in rs] for tp, rs in collector.collect(10).items()} == {other: [b"x"]}
    subs.set_paused([TP], False)
    assert [r.offset for r in collector.collect(10)[TP]] == [0, 1]


def test_what_a_pause_kept_is_dropped_when_the_partition_is_sought_or_revoked() -> None:
    collector, subs, buffer = setup(build_batch(0, [b"a", b"b", b"c"]), max_partition_fetch_bytes=1024)
    assert [r.offset for r in collector.collect(1)[TP]] == [0]
    subs.set_paused([TP], True)
    assert collector.collect(10) == {} and buffer.buffered_bytes > 0
    subs.seek(TP, 40)
    subs.set_paused([TP], False)
    assert collector.collect(10) == {}
    assert buffer.buffered_bytes == 0 and subs.position(TP) == 40


def test_a_pause_over_the_budget_drops_its_fetches_and_seeks_back_to_the_position() -> None:
    # The budget is half the limit less one partition's fetch: here a 1 MiB limit and 1 MiB partition fetches
    # leave none, so the partition is fetched again from its position on resume, and others keep their room.
    collector, subs, buffer = setup(build_batch(0, [b"a", b"b", b"c"]))
    assert [r.offset for r in collector.collect(1)[TP]] == [0]
    epoch = subs.epoch(TP)
    subs.set_paused([TP], True)
    assert collector.collect(10) == {}
    assert buffer.buffered_bytes == 0 and subs.position(TP) == 1 and subs.epoch(TP) != epoch


@pytest.mark.parametrize("columns", [True, False], ids=["poll_arrow", "poll"])
def test_poll_arrow_takes_what_was_buffered_when_it_began(columns: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fetch the background adds while ``poll_arrow`` decodes waits for the next poll (which counts this one as
    dry), so a table stays within the fetch buffer; ``poll`` still takes it."""
    collector, subs, buffer = setup(build_batch(0, [b"a", b"b", b"c"]))
    take, poll_done = buffer.take, buffer.poll_done
    dry: list[bool] = []

    def take_while_the_background_adds() -> CompletedFetch | None:
        fetch = take()
        if fetch is not None and fetch.fetch_offset == 0:
            add(buffer, subs, build_batch(3, [b"d", b"e"]), 3)
        return fetch

    def record_poll_done(returned: int, ran_dry: bool) -> None:
        dry.append(ran_dry)
        poll_done(returned, ran_dry)

    monkeypatch.setattr(buffer, "take", take_while_the_background_adds)
    monkeypatch.setattr(buffer, "poll_done", record_poll_done)
    if columns:
        assert [chunk["rows"] for chunk in collector.collect_columns(100, False)[0]] == [3]
        assert subs.position(TP) == 3
        assert [chunk["rows"] for chunk in collector.collect_columns(100, False)[0]] == [2]
    else:
        assert [r.offset for r in collector.collect(100)[TP]] == [0, 1, 2, 3, 4]
    assert dry[0] is True
    assert subs.position(TP) == 5


@pytest.fixture(params=["compiled", "google", "google-python"])
def crc_implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a CRC test with each CRC32C ``RecordBatchView`` may use: the C extension's (when built: a pure-Python
    install has none), google-crc32c's (a dependency) in its C implementation, and in its pure-Python one (a
    platform its wheels do not cover)."""
    if request.param == "compiled":
        crc32c = records_module._compiled_crc32c()
        if crc32c is None:
            pytest.skip("the C extension is not built (test_v2records.test_compiled_decoder_in_use)")
    else:
        if request.param == "google":
            assert google_crc32c.implementation == "c", "google-crc32c's C implementation is a dependency's"
        else:
            monkeypatch.setattr(google_crc32c, "extend", google_crc32c_python.extend)
        crc32c = records_module._google_crc32c()
    monkeypatch.setattr(records_module, "_crc32c", crc32c)
    return str(request.param)


def test_both_crc_implementations_accept_good_batches(crc_implementation: str) -> None:
    collector, _, _ = setup(build_batch(0, [b"hello", b"world"] * 50))
    assert len(collector.collect(1000)[TP]) == 100


@pytest.mark.usefixtures("crc_implementation")
def test_bad_crc_raises_naming_partition_and_offset_and_keeps_the_position() -> None:
    data = bytearray(build_batch(7, [b"hello", b"world"]))
    data[-3] ^= 0xFF
    collector, subs, _ = setup(bytes(data), position=7)
    with pytest.raises(CorruptRecordError) as info:
        collector.collect(10)
    assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 0, 7)
    assert subs.position(TP) == 7
    with pytest.raises(CorruptRecordError):  # still there on the next poll: nothing is skipped silently
        collector.collect(10)


@pytest.mark.usefixtures("crc_implementation")
def test_records_before_a_corrupt_batch_are_returned_first() -> None:
    bad = bytearray(build_batch(2, [b"x"]))
    bad[-2] ^= 0xFF
    collector, _subs, _ = setup(build_batch(0, [b"a", b"b"]) + bytes(bad))
    assert [r.offset for r in collector.collect(10)[TP]] == [0, 1]
    with pytest.raises(CorruptRecordError) as info:
        collector.collect(10)
    assert info.value.offset == 2


@pytest.mark.usefixtures("crc_implementation")
def test_the_crc_covers_batches_larger_than_one_crc_chunk() -> None:
    values = [b"%06d" % i * 50 for i in range(1_000)]  # 300 KB: several of the hardware CRC's 64 KiB chunks
    good = build_batch(0, values)
    collector, _, _ = setup(good)
    assert [r.value for r in collector.collect(2_000)[TP]] == values
    bad = bytearray(good)
    bad[200_000] ^= 0x01  # in the fourth chunk
    collector, _, _ = setup(bytes(bad))
    with pytest.raises(CorruptRecordError, match="CRC"):
        collector.collect(2_000)


def test_records_before_a_corrupt_record_inside_a_batch_are_returned_once_and_the_position_stops_at_it() -> None:
    """Records are decoded as they are taken: a bad record in the middle of a batch (its CRC unchecked) lets the
    ones before it through, exactly once, and the next polls raise at it until a seek moves past it."""
    data = bytearray(build_batch(0, [b"a", b"b", b"c"]))
    records_at = 61  # a v2 batch's header is 61 bytes
    first_length = data[records_at] >> 1  # a zigzag varint, one byte for a record this small
    data[records_at + 1 + first_length] = 0x7E  # record 1 now claims 63 bytes: more than the batch holds
    collector, subs, buffer = setup(bytes(data), check_crcs=False)
    assert [r.value for r in collector.collect(10)[TP]] == [b"a"]
    assert subs.position(TP) == 1
    for _ in range(2):
        with pytest.raises(CorruptRecordError) as info:
            collector.collect(10)
        assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 0, 1)
        assert subs.position(TP) == 1
    subs.seek(TP, 3)
    add(buffer, subs, build_batch(3, [b"d"]), 3)
    assert [r.value for r in collector.collect(10)[TP]] == [b"d"]


@pytest.mark.usefixtures("crc_implementation")
def test_crc_check_can_be_disabled() -> None:
    data = bytearray(build_batch(0, [b"hello"]))
    data[18] ^= 0xFF  # inside the CRC field itself
    collector, _, _ = setup(bytes(data), check_crcs=False)
    assert [r.value for r in collector.collect(10)[TP]] == [b"hello"]


def test_a_failing_deserializer_stops_at_the_record_and_seek_skips_it() -> None:
    def value_deserializer(raw: bytes | None) -> str:
        assert raw is not None
        if raw == b"bad":
            raise ValueError("not text")
        return raw.decode()

    collector, subs, buffer = setup(build_batch(0, [b"a", b"bad", b"c"]), value_deserializer=value_deserializer)
    assert [r.value for r in collector.collect(10)[TP]] == ["a"]
    with pytest.raises(RecordDeserializationError) as info:
        collector.collect(10)
    assert (info.value.offset, info.value.part) == (1, "value")
    with pytest.raises(RecordDeserializationError):
        collector.collect(10)
    subs.seek(TP, 2)
    add(buffer, subs, build_batch(0, [b"a", b"bad", b"c"]), 2)
    assert [r.value for r in collector.collect(10)[TP]] == ["c"]


def test_read_committed_drops_aborted_transactions_and_control_records() -> None:
    pid_aborted, pid_committed = 5, 6
    data = (
        build_batch(0, [b"a1", b"a2"], transactional=True, producer_id=pid_aborted)
        + build_batch(2, [b"c1"], transactional=True, producer_id=pid_committed)
        + build_control_batch(3, pid_aborted, commit=False)
        + build_control_batch(4, pid_committed, commit=True)
        + build_batch(5, [b"plain"])
    )
    cfg = {"isolation_level": "read_committed"}
    subs = SubscriptionState("earliest")
    subs.assign([TP])
    subs.seek(TP, 0)
    buffer = FetchBuffer(1 << 20, CallerSignal())
    add(buffer, subs, data, 0, aborted=(AbortedTransaction(producer_id=pid_aborted, first_offset=0),))
    collector = FetchCollector(ConsumerConfig.from_kwargs("h:1", **cfg), subs, buffer)
    assert [r.value for r in collector.collect(100)[TP]] == [b"c1", b"plain"]
    assert subs.position(TP) == 6


def test_read_uncommitted_returns_aborted_data_but_never_control_records() -> None:
    data = build_batch(0, [b"a1"], transactional=True, producer_id=5) + build_control_batch(1, 5, commit=False)
    collector, subs, _ = setup(data)
    assert [r.value for r in collector.collect(100)[TP]] == [b"a1"]
    assert subs.position(TP) == 2


def read_committed(data: bytes, fetch_offset: int, aborted: tuple[AbortedTransaction, ...]) -> tuple[list[int], int]:
    """The offsets read_committed returns from one fetch of ``data`` at ``fetch_offset``, and the position after."""
    subs = SubscriptionState("earliest")
    subs.assign([TP])
    subs.seek(TP, fetch_offset)
    buffer = FetchBuffer(1 << 20, CallerSignal())
    add(buffer, subs, data, fetch_offset, aborted=aborted)
    collector = FetchCollector(ConsumerConfig.from_kwargs("h:1", isolation_level="read_committed"), subs, buffer)
    offsets = [r.offset for r in collector.collect(100).get(TP, [])]
    assert collector.collect(100) == {}
    position = subs.position(TP)
    assert position is not None
    return offsets, position


def test_read_committed_fetch_starting_at_an_abort_marker_returns_the_producers_next_committed_transaction() -> None:
    # Producer 5's transaction began at 4 and was aborted by the marker at 10, where this fetch starts: the broker
    # lists that transaction (it overlaps the fetch), and its marker ends it before the committed one at 11.
    pid, other = 5, 6
    data = (
        build_control_batch(10, pid, commit=False)
        + build_batch(11, [b"c1", b"c2"], transactional=True, producer_id=pid)
        + build_control_batch(13, pid, commit=True)
        + build_batch(14, [b"a1"], transactional=True, producer_id=pid)
        + build_batch(15, [b"o1"], transactional=True, producer_id=other)
        + build_control_batch(16, pid, commit=False)
        + build_control_batch(17, other, commit=True)
        + build_batch(18, [b"plain"])
    )
    aborted = (
        AbortedTransaction(producer_id=pid, first_offset=4),
        AbortedTransaction(producer_id=pid, first_offset=14),
    )
    assert read_committed(data, 10, aborted) == ([11, 12, 15, 18], 19)


def test_read_committed_still_drops_aborted_data_before_a_producers_committed_transaction() -> None:
    pid = 5
    data = (
        build_batch(0, [b"a1"], transactional=True, producer_id=pid)
        + build_batch(1, [b"a2"], transactional=True, producer_id=pid)
        + build_control_batch(2, pid, commit=False)
        + build_batch(3, [b"c1"], transactional=True, producer_id=pid)
        + build_control_batch(4, pid, commit=True)
    )
    aborted = (AbortedTransaction(producer_id=pid, first_offset=0),)
    assert read_committed(data, 0, aborted) == ([3], 5)
    # Fetched from inside the aborted transaction (the broker lists it, as it began before the fetch): still dropped.
    from_inside = data[len(build_batch(0, [b"a1"], transactional=True, producer_id=pid)) :]
    assert read_committed(from_inside, 1, aborted) == ([3], 5)


def test_a_failed_fetch_is_passed_over_without_raising_and_frees_its_partition() -> None:
    collector, subs, buffer = setup(build_batch(0, [b"a", b"b"]))
    woken: list[bool] = []
    buffer.set_space_waiter(lambda: woken.append(True))
    epoch = subs.epoch(TP)
    assert epoch is not None
    error = OffsetOutOfRangeError("offset 2 is out of range")
    buffer.add_all([CompletedFetch(TP, epoch, 2, 2, memoryview(b""), -1, None, None, error)])
    buffer.deliver()
    assert buffer.error_pending(TP, epoch)
    assert [r.offset for r in collector.collect(1)[TP]] == [0]
    assert buffer.error_pending(TP, epoch)  # not passed yet: records before it come first
    assert [r.offset for r in collector.collect(10)[TP]] == [1]  # its error was reported already: not raised again
    assert not buffer.error_pending(TP, epoch)
    assert woken == [True]
    assert subs.position(TP) == 2
    assert len(buffer) == 0 and buffer.buffered_bytes == 0
    assert collector.collect(10) == {}


# --- compressed batches within receive_message_max_bytes ---------------------------------------------------------

SMALL_LIMIT = {"fetch_max_bytes": 1_000, "receive_message_max_bytes": 16 << 20}


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=["gzip", "snappy", "lz4", "zstd"])
def test_a_compression_bomb_raises_naming_the_partition_and_batch_and_nothing_is_skipped(codec: int) -> None:
    """1 GiB of zeros (256 MiB for snappy) after five good records, at a 16 MiB limit: the good records come first,
    then every poll raises at the bomb, the position stays on it, and a seek past it goes on from there."""
    bomb = batch_around(5, codec, compressed_zeros(codec, 256 if codec == SNAPPY else 1024), records=10)
    collector, subs, buffer = setup(build_batch(0, [b"a", b"b", b"c", b"d", b"e"]) + bomb, **SMALL_LIMIT)
    assert [r.value for r in collector.collect(100)[TP]] == [b"a", b"b", b"c", b"d", b"e"]
    for _ in range(2):
        with pytest.raises(RecordBatchTooLargeError) as info:
            collector.collect(100)
        error = info.value
        assert isinstance(error, CorruptRecordError)
        assert (error.topic, error.partition, error.offset, error.next_offset) == ("t", 0, 5, 15)
        assert error.limit == 16 << 20
        assert str(error).startswith(
            "the record batch of t-0 at offset 5 would decompress to more than receive_message_max_bytes (16777216)"
        )
        assert "seek to offset 15 to skip the batch" in str(error)
        assert subs.position(TP) == 5
    subs.seek(TP, error.next_offset)
    add(buffer, subs, build_batch(15, [b"p"]), 15)
    assert [r.value for r in collector.collect(10)[TP]] == [b"p"]


def test_a_legacy_wrapper_whose_value_is_a_bomb_raises_the_same() -> None:
    wrapper = legacy_wrapper_around(3, GZIP, compressed_zeros(GZIP, 1024))
    collector, subs, _ = setup(wrapper, position=3, **SMALL_LIMIT)
    with pytest.raises(RecordBatchTooLargeError) as info:
        collector.collect(10)
    assert (info.value.offset, info.value.next_offset) == (3, 4)
    assert "gzip data inflated past 16777216 bytes" in str(info.value)
    assert subs.position(TP) == 3


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=["gzip", "snappy", "lz4", "zstd"])
def test_a_compressed_batch_decodes_up_to_the_limit_and_no_further(codec: int) -> None:
    values = [b"%05d" % i * 20 for i in range(2_000)]  # 200 KB of record values, some 230 KB of records
    batch = build_batch(0, values, compression=codec)
    collector, _, _ = setup(batch, fetch_max_bytes=1_000, receive_message_max_bytes=300_000)
    assert [r.value for r in collector.collect(5_000)[TP]] == values
    collector, subs, _ = setup(batch, fetch_max_bytes=1_000, receive_message_max_bytes=100_000)
    with pytest.raises(RecordBatchTooLargeError, match=r"receive_message_max_bytes \(100000\)"):
        collector.collect(5_000)
    assert subs.position(TP) == 0


# --- poll_arrow's columns against poll's records -----------------------------------------------------------------

Outcome = tuple[str, object]


def _rows_of(table: pa.Table) -> list[tuple[object, ...]]:
    """Rows as tuples, timestamps as integers (a corrupt one may lie outside ``datetime``'s range)."""
    import pyarrow as pa

    stamps = table.column("timestamp").cast(pa.int64())
    table = table.set_column(table.schema.get_field_index("timestamp"), "timestamp", stamps)
    columns = ["topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers"]
    return [tuple(row[c] for c in columns) for row in table.to_pylist()]


def _outcomes(data: bytes, position: int, limits: list[int], columns: bool, **config: object) -> list[Outcome]:
    """Polls one fetch of ``data`` with each limit in turn, as records or as columns: what each poll gave (rows,
    or the error's type and offset) and the position after it, in one comparable form."""
    aborted = config.pop("aborted", None)
    subs = SubscriptionState("earliest")
    subs.assign([TP])
    subs.seek(TP, position)
    buffer = FetchBuffer(1 << 24, CallerSignal())
    add(buffer, subs, data, position, aborted=aborted)  # type: ignore[arg-type]
    collector = FetchCollector(ConsumerConfig.from_kwargs("h:1", **config), subs, buffer)
    got: list[Outcome] = []
    for limit in limits:
        try:
            if columns:
                chunks, topics = collector.collect_columns(limit, include_headers=True)
                rows: object = _rows_of(arrow_table.to_table(chunks, topics, True))
            else:
                rows = [
                    (
                        r.topic,
                        r.partition,
                        r.offset,
                        r.timestamp,
                        r.timestamp_type,
                        r.key,
                        r.value,
                        [{"key": k, "value": v} for k, v in r.headers],
                    )
                    for r in collector.collect(limit).get(TP, [])
                ]
            got.append(("rows", rows))
        except CorruptRecordError as exc:
            got.append((type(exc).__name__, exc.offset))
        got.append(("position", subs.position(TP)))
    return got


@st.composite
def _fetches(draw: st.DrawFn) -> tuple[bytes, dict[str, object]]:
    """A fetch of several batches (plain, compressed, transactional with markers), maybe one record corrupted."""
    data = b""
    offset = 0
    pid = 7
    aborted: list[AbortedTransaction] = []
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 6))
        values = draw(st.lists(st.none() | st.binary(max_size=12), min_size=n, max_size=n))
        keys = draw(st.lists(st.none() | st.binary(max_size=4), min_size=n, max_size=n))
        headers = draw(st.lists(st.tuples(st.text(max_size=3), st.none() | st.binary(max_size=3)), max_size=2))
        kind = draw(st.sampled_from(["plain", "compressed", "aborted", "committed"]))
        if kind in ("plain", "compressed"):
            codec = draw(st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD])) if kind == "compressed" else 0
            data += build_batch(offset, values, keys=keys, headers=headers, compression=codec)
            offset += n
        else:
            data += build_batch(offset, values, keys=keys, headers=headers, transactional=True, producer_id=pid)
            if kind == "aborted":
                aborted.append(AbortedTransaction(producer_id=pid, first_offset=offset))
            offset += n
            data += build_control_batch(offset, pid, commit=kind == "committed")
            offset += 1
            pid += 1
    config: dict[str, object] = {"isolation_level": draw(st.sampled_from(["read_committed", "read_uncommitted"]))}
    config["aborted"] = tuple(aborted)
    if draw(st.booleans()):
        corrupt = bytearray(data)
        at = draw(st.integers(61, len(corrupt) - 1))
        corrupt[at] = draw(st.integers(0, 255))
        data = bytes(corrupt)
        config["check_crcs"] = draw(st.booleans())
    return data, config


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_fetches(), st.lists(st.integers(1, 7), min_size=1, max_size=6), st.integers(0, 3))
def test_poll_arrow_gives_the_rows_positions_and_errors_poll_gives(
    fetch: tuple[bytes, dict[str, object]], limits: list[int], position: int
) -> None:
    requires_extra("arrow", "pyarrow")
    data, config = fetch
    records = _outcomes(data, position, limits, columns=False, **dict(config))
    columns = _outcomes(data, position, limits, columns=True, **dict(config))
    assert columns == records


def test_poll_arrow_columns_of_a_legacy_message_set() -> None:
    requires_extra("arrow", "pyarrow")
    wrapper = legacy_wrapper_around(2, GZIP, legacy_message_set([b"a", None, b"c"]))
    records = _outcomes(wrapper, 0, [10], columns=False)
    assert _outcomes(wrapper, 0, [10], columns=True) == records
    assert [row[2] for row in records[0][1]] == [0, 1, 2]  # type: ignore[union-attr]


def test_the_collector_reports_dry_polls_to_the_buffer() -> None:
    cfg = ConsumerConfig.from_kwargs("h:1")
    subs = SubscriptionState("earliest")
    subs.assign([TP])
    subs.seek(TP, 0)
    buffer = FetchBuffer(8 * MIB, CallerSignal(), 4 * MIB)
    collector = FetchCollector(cfg, subs, buffer)
    offset = 0
    for _ in range(GROW_AFTER_DRY_POLLS):
        add(buffer, subs, build_batch(offset, [b"a", b"b", b"c"]), offset)
        held_back(buffer)
        assert len(collector.collect(2)[TP]) == 2  # not dry: it got all it asked for
        assert len(collector.collect(100)[TP]) == 1  # dry
        offset += 3
    assert buffer.limit == 8 * MIB
    assert subs.position(TP) == offset
