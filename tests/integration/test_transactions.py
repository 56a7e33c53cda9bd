"""Transactions against real brokers: ``isolation_level="read_committed"`` returns committed records only, never a
transaction marker, and stops at the last stable offset while a transaction is open.

Every test runs against both brokers (the ``txn_broker`` fixture): a fresh Tansu per test and the module's one Apache
Kafka node, each behind a fault proxy. The transactional producer is librdkafka's (``confluent_kafka.Producer``),
but for the test of aiokafka's.

Apache Kafka 4.4 is taken as it answers, nothing rewritten: every read_committed Fetch response lists the aborted
transactions overlapping the fetched range (AbortedTransactions, from its transaction index), the last stable offset
(in Fetch responses and in ListOffsets LATEST at read_committed) is the first offset of the oldest open transaction,
and both aiokafka's and librdkafka's transactional producers commit and abort. The proxy only observes there (the
markers, the broker's lists and last stable offsets), and the lists Kafka sends are checked against
``KafkaTxnIndex``, the model the Tansu leg fills its lists in with.

What Tansu 0.6.0 does with transactions, seen on the wire on 2026-11-23 (each pinned by a strict xfail on Tansu only,
``xfail_on_tansu``, the same test passing on Kafka):

* aiokafka's producer sends InitProducerId v0, which has no producer id/epoch fields; Tansu answers
  UNKNOWN_SERVER_ERROR (-1) and logs ``tansu_storage::dynostore: producer=None epoch=None``. librdkafka sends a
  version with those fields (-1/-1) and gets a producer id.
* It writes COMMIT and ABORT markers and answers the right last stable offset in Fetch responses, but its
  read_committed Fetch responses carry an empty AbortedTransactions list even when the records returned hold an
  aborted transaction and its ABORT marker. Kafka lists every aborted transaction overlapping the fetched range
  there, and that list is the only thing a consumer (Java's, librdkafka, this one) tells aborted data by;
  librdkafka returns the aborted records from Tansu too.
* ListOffsets LATEST at read_committed answers 0 while a transaction is open, where Kafka answers the last stable
  offset (librdkafka sees the same).

So on Tansu the tests of aborted-record filtering put the list into Tansu's responses through the fault proxy,
computed from the batches the broker returned the way Kafka's transaction index computes it (``KafkaTxnIndex``);
everything else (the batches, markers, producer ids, offsets, high watermark, last stable offset) is Tansu's own.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator

import attrs
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import UnknownError as AioUnknownError
from confluent_kafka import KafkaError as ConfluentError
from confluent_kafka import Message, Producer

from asyncconsumer import AsyncConsumer, ConsumerRecord, TopicPartition
from asyncconsumer.protocol.messages.fetch import AbortedTransaction, FetchResponse, PartitionData
from asyncconsumer.protocol.records import iter_batches
from tests.conftest import BROKER_KINDS, ProxiedBroker, ProxiedKafka, fail_on_mutator_errors
from tests.support.consume import consume_exactly, consume_until
from tests.support.faultproxy import FaultProxy
from tests.support.fetch_rewrite import FetchExchange, FetchTap, with_partitions
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

_ABORT = 0
_COMMIT = 1
_READ_COMMITTED = 1


# --- the brokers ------------------------------------------------------------------------------------------------


@attrs.frozen
class TxnBroker:
    """What a test here runs against: a fresh Tansu behind a fault proxy (``proxied_broker``), or the module's
    Kafka behind one (``proxied_kafka``); every client connection goes through ``proxy``."""

    fronted: ProxiedBroker | ProxiedKafka

    @property
    def kind(self) -> str:
        return "tansu" if isinstance(self.fronted, ProxiedBroker) else "kafka"

    @property
    def bootstrap_servers(self) -> str:
        return self.fronted.bootstrap_servers

    @property
    def proxy(self) -> FaultProxy:
        return self.fronted.proxy

    @property
    def lists_aborted_transactions(self) -> bool:
        """Whether the broker lists aborted transactions in its read_committed Fetch responses (Kafka does); Tansu
        leaves those lists empty, so there the tests that filter aborted records fill them in through the proxy."""
        return self.kind == "kafka"

    def create_topic(self, partitions: int) -> str:
        return self.fronted.create_topic(partitions)


@pytest.fixture(params=BROKER_KINDS)
def txn_broker(request: pytest.FixtureRequest) -> Iterator[TxnBroker]:
    """A fresh Tansu behind a fault proxy per test, or the module's Kafka behind one (its proxy's mutators taken
    off before and after each test). Teardown fails the test if a proxy mutator raised."""
    if request.param == "tansu":
        yield TxnBroker(request.getfixturevalue("proxied_broker"))
        return
    kafka: ProxiedKafka = request.getfixturevalue("proxied_kafka")
    proxy = kafka.proxy
    proxy.set_request_mutator(None)
    proxy.set_response_mutator(None)
    try:
        yield TxnBroker(kafka)
    finally:
        proxy.set_request_mutator(None)
        proxy.set_response_mutator(None)
    fail_on_mutator_errors(proxy)


# --- producing --------------------------------------------------------------------------------------------------


@attrs.frozen
class Written:
    partition: int
    offset: int
    value: bytes


class TxnProducer:
    """librdkafka's transactional producer, blocking calls; ``send`` returns where each record went."""

    def __init__(self, bootstrap: str, transactional_id: str | None = None) -> None:
        config: dict[str, object] = {"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 3}
        if transactional_id is not None:
            config["transactional.id"] = transactional_id
        self._producer = Producer(config)
        if transactional_id is not None:
            self._producer.init_transactions(10)

    def begin(self) -> None:
        self._producer.begin_transaction()

    def send(self, topic: str, partition: int, values: Iterable[bytes]) -> list[Written]:
        """Writes ``values`` to ``partition`` and waits until the broker has them (flushed, so an abort that
        follows aborts records that really are in the log)."""
        written: list[Written] = []
        errors: list[ConfluentError] = []

        def delivered(error: ConfluentError | None, message: Message) -> None:
            if error is not None:
                errors.append(error)
            else:
                at, offset, value = message.partition(), message.offset(), message.value()
                assert at is not None and offset is not None and isinstance(value, bytes)
                written.append(Written(at, offset, value))

        for value in values:
            self._producer.produce(topic, value, partition=partition, on_delivery=delivered)
        left = self._producer.flush(10)
        assert left == 0 and not errors, f"{left} records not delivered, errors {errors}"
        return sorted(written, key=lambda w: w.offset)

    def commit(self) -> None:
        self._producer.commit_transaction(10)

    def abort(self) -> None:
        self._producer.abort_transaction(10)

    def close(self) -> None:
        self._producer.close()


def values(tag: str, n: int) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(n)]


# --- what Kafka would answer ------------------------------------------------------------------------------------


@attrs.frozen
class _Batch:
    base_offset: int
    next_offset: int
    producer_id: int
    is_transactional: bool
    control_type: int | None
    """0 ABORT, 1 COMMIT, None for a data batch."""


class KafkaTxnIndex:
    """Kafka's transaction index, rebuilt from the batches the broker returns through a FetchTap, and the
    AbortedTransactions list Kafka puts in a read_committed fetch response.

    Kafka lists the aborted transactions whose marker is at or after the fetch offset and whose first record is
    before the end of the records returned (``LocalLog.collectAbortedTransactions``; Kafka's end is the offset its
    offset index finds past the bytes returned, the log end offset in a small log, so it may list more). ``tap``
    either puts that list into the responses (``rewrite``, for Tansu) or records the lists the broker sent beside
    this model's (``observe``, for Kafka: ``disagreements`` compares them).
    """

    def __init__(self) -> None:
        self._batches: dict[tuple[str, int], dict[int, _Batch]] = defaultdict(dict)
        self.listed = 0
        """Aborted transactions in the responses the consumer got so far (put there by ``rewrite``, or the
        broker's own with ``observe``)."""
        self.answers: list[_Listing] = []
        """With ``observe``: each read_committed partition answer with records, the broker's list and the model's."""

    def tap(self, broker: TxnBroker) -> FetchTap:
        """A FetchTap on ``broker``'s proxy that observes the broker's own lists if it fills them, else rewrites."""
        return FetchTap(broker.proxy, self.observe if broker.lists_aborted_transactions else self.rewrite)

    def learn(self, topic: str, part: PartitionData) -> list[_Batch]:
        seen = []
        for view in iter_batches(memoryview(part.records or b"")):
            batch = _Batch(
                view.base_offset,
                view.next_offset,
                view.producer_id,
                view.is_transactional,
                view.control_type() if view.is_control else None,
            )
            self._batches[(topic, part.partition_index)][batch.base_offset] = batch
            seen.append(batch)
        return seen

    def aborted(self, topic: str, partition: int) -> list[tuple[int, int, int]]:
        """(producer id, first offset, marker offset) of every aborted transaction seen complete."""
        first: dict[int, int] = {}
        out = []
        for offset in sorted(self._batches[(topic, partition)]):
            batch = self._batches[(topic, partition)][offset]
            if not batch.is_transactional:
                continue
            if batch.control_type is None:
                first.setdefault(batch.producer_id, batch.base_offset)
                continue
            start = first.pop(batch.producer_id, None)
            if batch.control_type == _ABORT and start is not None:
                out.append((batch.producer_id, start, batch.base_offset))
        return out

    def markers(self, topic: str, partition: int) -> set[int]:
        return {o for o, b in self._batches[(topic, partition)].items() if b.control_type is not None}

    def _kafka_lists(
        self, exchange: FetchExchange
    ) -> dict[tuple[str, int], tuple[int, tuple[AbortedTransaction, ...]]]:
        """Learns the batches returned; for a read_committed response, (fetch offset, the list Kafka would send) of
        every partition that returned batches."""
        returned = {(t, p.partition_index): self.learn(t, p) for t, p in exchange.partitions()}
        if exchange.request.isolation_level != _READ_COMMITTED:
            return {}
        lists = {}
        for (topic, partition), batches in returned.items():
            asked = exchange.requested(topic, partition)
            if not batches or asked is None:
                continue
            start = asked.fetch_offset
            upper = batches[-1].next_offset
            lists[(topic, partition)] = (
                start,
                tuple(
                    AbortedTransaction(producer_id=producer_id, first_offset=first)
                    for producer_id, first, last in self.aborted(topic, partition)
                    if last >= start and first < upper
                ),
            )
        return lists

    def rewrite(self, exchange: FetchExchange) -> FetchResponse | None:
        """A FetchTap rewrite: Kafka's list put into every read_committed response."""
        lists = self._kafka_lists(exchange)
        if exchange.request.isolation_level != _READ_COMMITTED:
            return None

        def listed(topic: str, part: PartitionData) -> PartitionData:
            if (topic, part.partition_index) not in lists:
                return part
            _, txns = lists[(topic, part.partition_index)]
            self.listed += len(txns)
            return attrs.evolve(part, aborted_transactions=txns)

        return with_partitions(exchange.response, listed)

    def observe(self, exchange: FetchExchange) -> None:
        """A FetchTap rewrite that changes nothing: records the broker's lists beside the model's."""
        lists = self._kafka_lists(exchange)
        for topic, part in exchange.partitions():
            if (topic, part.partition_index) in lists:
                start, model = lists[(topic, part.partition_index)]
                sent = tuple(part.aborted_transactions or ())
                self.listed += len(sent)
                self.answers.append(_Listing(topic, part.partition_index, start, sent, model))

    def disagreements(self) -> list[_Listing]:
        """The broker's lists that miss a transaction the model lists, or list one that is not an aborted
        transaction ending at or after the fetch offset (by everything seen, so call it after the fetches)."""
        wrong = []
        for answer in self.answers:
            real = {
                AbortedTransaction(producer_id=producer_id, first_offset=first)
                for producer_id, first, last in self.aborted(answer.topic, answer.partition)
                if last >= answer.fetch_offset
            }
            if not set(answer.model) <= set(answer.sent) <= real:
                wrong.append(answer)
        return wrong


@attrs.frozen
class _Listing:
    topic: str
    partition: int
    fetch_offset: int
    sent: tuple[AbortedTransaction, ...]
    """What the broker listed."""
    model: tuple[AbortedTransaction, ...]
    """What ``KafkaTxnIndex`` would have put there."""


# --- helpers ----------------------------------------------------------------------------------------------------


def offsets_and_values(records: Iterable[ConsumerRecord]) -> dict[int, list[tuple[int, bytes]]]:
    out: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    for r in records:
        out[r.partition].append((r.offset, r.value))
    return dict(out)


def expected(written: Iterable[Written]) -> dict[int, list[tuple[int, bytes]]]:
    out: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    for w in sorted(written, key=lambda w: (w.partition, w.offset)):
        out[w.partition].append((w.offset, w.value))
    return dict(out)


# --- the tests --------------------------------------------------------------------------------------------------


async def test_read_committed_returns_committed_and_plain_records_only_and_never_a_marker(
    txn_broker: TxnBroker,
) -> None:
    partitions = 3
    name = txn_broker.create_topic(partitions)
    bootstrap = txn_broker.bootstrap_servers
    index = KafkaTxnIndex()
    tap = index.tap(txn_broker)
    a = TxnProducer(bootstrap, f"a-{uuid.uuid4().hex[:8]}")
    b = TxnProducer(bootstrap, f"b-{uuid.uuid4().hex[:8]}")
    plain = TxnProducer(bootstrap)
    committed: list[Written] = []
    aborted: list[Written] = []
    transactions_per_partition: dict[int, int] = defaultdict(int)
    try:
        # Two producers' transactions interleaved batch by batch on the same partitions, plain records between
        # them, and each round one of the two commits while the other aborts.
        for r in range(6):
            p, q = r % partitions, (r + 1) % partitions
            a.begin()
            a_sent = a.send(name, p, values(f"a{r}", 3))
            b.begin()
            b_sent = b.send(name, p, values(f"b{r}", 2))
            a_sent += a.send(name, q, values(f"a{r}q", 2))
            plain_sent = plain.send(name, p, values(f"plain{r}", 1))
            b_sent += b.send(name, q, values(f"b{r}q", 1))
            if r % 2 == 0:
                a.commit()
                b.abort()
                committed += a_sent
                aborted += b_sent
            else:
                b.commit()
                a.abort()
                committed += b_sent
                aborted += a_sent
            committed += plain_sent
            for tp_index in (p, q):
                transactions_per_partition[tp_index] += 2
    finally:
        for producer in (a, b, plain):
            producer.close()
    markers_expected = sum(transactions_per_partition.values())
    everything = committed + aborted
    tps = [TopicPartition(name, i) for i in range(partitions)]

    async with AsyncConsumer(
        bootstrap, auto_offset_reset="earliest", isolation_level="read_uncommitted"
    ) as uncommitted:
        await uncommitted.assign(tps)
        got_all = await consume_exactly(uncommitted, len(everything))
        uncommitted_positions = {tp.partition: await uncommitted.position(tp) for tp in tps}
        highwater = {tp.partition: uncommitted.highwater(tp) for tp in tps}

    async with AsyncConsumer(bootstrap, auto_offset_reset="earliest", isolation_level="read_committed") as consumer:
        await consumer.assign(tps)
        got = await consume_exactly(consumer, len(committed))
        positions = {tp.partition: await consumer.position(tp) for tp in tps}

    async with AsyncConsumer(bootstrap, auto_offset_reset="earliest", isolation_level="read_committed") as columnar:
        await columnar.assign(tps)
        got_arrow = await consume_exactly(columnar, len(committed), arrow=True)
        arrow_positions = {tp.partition: await columnar.position(tp) for tp in tps}

    markers = {p: index.markers(name, p) for p in range(partitions)}
    returned_offsets = {(r.partition, r.offset) for r in got + got_all}
    marker_offsets = {(p, o) for p, offsets in markers.items() for o in offsets}
    print(
        f"read_committed: {len(got)} of {len(committed)} committed records (and {len(aborted)} aborted ones "
        f"filtered, {index.listed} aborted transactions listed); read_uncommitted: {len(got_all)} of "
        f"{len(everything)}; {len(marker_offsets)} markers skipped"
    )
    assert len(marker_offsets) == markers_expected, f"{len(marker_offsets)} markers in the log, {markers_expected} ends"
    assert index.listed > 0, "no fetch response had an aborted transaction to list: the test filtered nothing"
    assert offsets_and_values(got) == expected(committed), (
        f"read_committed returned {len(got)} records for {len(committed)} committed; aborted ones returned: "
        f"{sorted(r.value for r in got if r.value in {w.value for w in aborted})}"
    )
    assert offsets_and_values(got_all) == expected(everything), (
        f"read_uncommitted returned {len(got_all)} records for {len(everything)} written (aborted included)"
    )
    assert not returned_offsets & marker_offsets, f"markers returned as records: {returned_offsets & marker_offsets}"
    # Every offset is a record or a marker, and the consumer's position steps over the trailing markers too.
    for p in range(partitions):
        written_offsets = {w.offset for w in everything if w.partition == p}
        assert written_offsets | markers[p] == set(range(highwater[p] or 0)), f"partition {p}: offsets have gaps"
    assert positions == highwater, f"read_committed positions {positions}, high watermarks {highwater}"
    # poll_arrow filters alike: the same rows, the same positions past the trailing markers.
    assert offsets_and_values(got_arrow) == offsets_and_values(got)
    assert arrow_positions == positions
    assert uncommitted_positions == highwater
    if txn_broker.lists_aborted_transactions:
        assert not index.disagreements(), f"the broker's lists against the model: {index.disagreements()}"
    else:
        assert tap.rewritten > 0


@pytest.mark.xfail_on_tansu(
    "it writes the ABORT marker but sends an empty AbortedTransactions list in every read_committed Fetch response, "
    "so a Kafka consumer (this one, Java's, librdkafka) cannot tell the aborted records apart",
    raises=AssertionError,
)
async def test_read_committed_filters_aborted_records_as_the_broker_answers(txn_broker: TxnBroker) -> None:
    name = txn_broker.create_topic(1)
    tap = FetchTap(txn_broker.proxy)  # observes only
    producer = TxnProducer(txn_broker.bootstrap_servers, f"t-{uuid.uuid4().hex[:8]}")
    try:
        producer.begin()
        first = producer.send(name, 0, values("committed", 2))
        producer.commit()
        producer.begin()
        dropped = producer.send(name, 0, values("aborted", 2))
        producer.abort()
        producer.begin()
        last = producer.send(name, 0, values("committed-too", 2))
        producer.commit()
    finally:
        producer.close()
    async with AsyncConsumer(
        txn_broker.bootstrap_servers, auto_offset_reset="earliest", isolation_level="read_committed"
    ) as consumer:
        await consumer.assign([TopicPartition(name, 0)])
        got = await consume_exactly(consumer, 4)
    lists = [p.aborted_transactions for x in tap.exchanges() for _, p in x.partitions() if p.records]
    assert offsets_and_values(got) == expected(first + last), (
        f"aborted records returned: {[r.value for r in got if r.value in {w.value for w in dropped}]}; the broker's "
        f"AbortedTransactions lists in responses with records: {lists}"
    )
    print(f"the broker's AbortedTransactions lists in responses with records: {lists}")
    listed_firsts = [t.first_offset for listed in lists for t in listed or ()]
    assert set(listed_firsts) == {dropped[0].offset}, (
        f"the aborted transaction starts at {dropped[0].offset}; the broker listed {lists}"
    )


async def test_an_open_transaction_holds_read_committed_at_the_last_stable_offset_until_it_commits(
    txn_broker: TxnBroker,
) -> None:
    name = txn_broker.create_topic(1)
    bootstrap = txn_broker.bootstrap_servers
    tap = FetchTap(txn_broker.proxy)
    tp = TopicPartition(name, 0)
    a = TxnProducer(bootstrap, f"a-{uuid.uuid4().hex[:8]}")
    b = TxnProducer(bootstrap, f"b-{uuid.uuid4().hex[:8]}")
    plain = TxnProducer(bootstrap)
    try:
        a.begin()
        before = a.send(name, 0, values("before", 3))
        a.commit()
        before += plain.send(name, 0, values("plain-before", 2))
        a.begin()
        open_records = a.send(name, 0, values("open", 2))
        lso = open_records[0].offset
        after = plain.send(name, 0, values("plain-after", 2))  # committed, but behind the open transaction
        b.begin()
        after += b.send(name, 0, values("b", 2))
        b.commit()

        def lso_answers() -> list[int]:
            return [
                p.last_stable_offset
                for x in tap.exchanges()
                if x.request.isolation_level == _READ_COMMITTED
                for _, p in x.partitions()
            ]

        async with (
            AsyncConsumer(bootstrap, auto_offset_reset="earliest", isolation_level="read_uncommitted") as dirty,
            AsyncConsumer(
                bootstrap,
                auto_offset_reset="earliest",
                isolation_level="read_committed",
                fetch_max_wait_ms=50,
            ) as consumer,
        ):
            await dirty.assign([tp])
            await consumer.assign([tp])
            # read_uncommitted sees the open transaction's records at once (the contrast).
            dirty_got = await consume_exactly(dirty, len(before) + len(open_records) + len(after))
            assert offsets_and_values(dirty_got) == expected(before + open_records + after)

            held = await consume_until(consumer, len(before), timeout_s=8)
            # Wait until the broker has answered several more fetches from the last stable offset: each returned
            # nothing, and the consumer stayed there. (Answers within a fetch session leave the partition out while
            # nothing about it changes, so count the fetches answered.)
            answers_at_stop = len(lso_answers())

            def committed_fetches() -> int:
                return sum(x.request.isolation_level == _READ_COMMITTED for x in tap.exchanges())

            fetches_at_stop = committed_fetches()
            await wait_for_async(
                lambda: committed_fetches() >= fetches_at_stop + 3, 8, message=lambda: f"LSO answers {lso_answers()}"
            )
            for _ in range(3):
                held.extend((await consumer.poll(timeout_ms=100)).records())
            position_while_open = await consumer.position(tp)
            highwater_while_open = consumer.highwater(tp)
            answered = lso_answers()
            print(
                f"open transaction at {lso}: read_committed held at {position_while_open} with {len(held)} records, "
                f"broker LSO {answered[-1]}, high watermark {highwater_while_open}"
            )
            assert offsets_and_values(held) == expected(before), f"while open: {[r.value for r in held]}"
            assert answered[-1] == lso, f"the broker's last stable offsets: {answered}"
            assert position_while_open == lso, f"position {position_while_open}, LSO {lso}"
            assert all(position_while_open <= x for x in answered[answers_at_stop:]), answered
            assert highwater_while_open is not None and highwater_while_open > lso

            a.commit()
            rest = await consume_exactly(consumer, len(open_records) + len(after))
            assert offsets_and_values(held + rest) == expected(before + open_records + after)
            assert await consumer.position(tp) == consumer.highwater(tp)
    finally:
        for producer in (a, b, plain):
            producer.close()


async def test_seeking_onto_an_abort_marker_keeps_the_same_producers_next_committed_transaction(
    txn_broker: TxnBroker,
) -> None:
    """A fetch that starts at an ABORT marker gets that transaction listed as aborted (its marker is in range):
    the marker ends it, so the producer's next, committed, transaction must still be returned. (A position lands on
    a marker after a seek, a committed offset, or a fetch that ended just before the marker.)"""
    name = txn_broker.create_topic(1)
    index = KafkaTxnIndex()
    index.tap(txn_broker)
    producer = TxnProducer(txn_broker.bootstrap_servers, f"t-{uuid.uuid4().hex[:8]}")
    try:
        producer.begin()
        dropped = producer.send(name, 0, values("aborted", 3))
        producer.abort()
        producer.begin()
        kept = producer.send(name, 0, values("committed", 3))
        producer.commit()
    finally:
        producer.close()
    tp = TopicPartition(name, 0)
    abort_marker = dropped[-1].offset + 1
    assert kept[0].offset == abort_marker + 1
    async with AsyncConsumer(
        txn_broker.bootstrap_servers, auto_offset_reset="earliest", isolation_level="read_committed"
    ) as consumer:
        await consumer.assign([tp])
        first = await consume_exactly(consumer, len(kept))
        assert offsets_and_values(first) == expected(kept)
        starts = {}
        for start in (abort_marker, dropped[1].offset, abort_marker):
            await consumer.seek(tp, start)
            again = await consume_exactly(consumer, len(kept))
            starts[start] = [r.offset for r in again]
            assert offsets_and_values(again) == expected(kept), f"from {start}: {[r.value for r in again]}"
    print(f"re-read {len(kept)} committed records from {sorted(starts)} ({index.listed} aborted txns listed)")
    assert index.listed >= 3
    assert not index.disagreements(), f"the broker's lists against the model: {index.disagreements()}"


@pytest.mark.xfail_on_tansu(
    "aiokafka 0.14 sends InitProducerId v0 (no producer id/epoch fields) and Tansu 0.6.0 answers "
    "UNKNOWN_SERVER_ERROR (-1), logging 'dynostore: producer=None epoch=None'; librdkafka's newer version works",
    raises=AioUnknownError,
)
async def test_aiokafkas_transactional_producer_commits_and_aborts(txn_broker: TxnBroker) -> None:
    name = txn_broker.create_topic(1)
    index = KafkaTxnIndex()
    index.tap(txn_broker)
    producer = AIOKafkaProducer(
        bootstrap_servers=txn_broker.bootstrap_servers, transactional_id=f"aio-{uuid.uuid4().hex[:8]}"
    )
    try:
        await producer.start()  # stopped below even when starting fails, or aiokafka warns of unclosed resources
        async with producer.transaction():
            await producer.send_and_wait(name, b"committed", partition=0)
        await producer.begin_transaction()
        await producer.send_and_wait(name, b"aborted", partition=0)
        await producer.abort_transaction()
    finally:
        await producer.stop()
    async with AsyncConsumer(
        txn_broker.bootstrap_servers, auto_offset_reset="earliest", isolation_level="read_committed"
    ) as consumer:
        await consumer.assign([TopicPartition(name, 0)])
        got = await consume_exactly(consumer, 1)
    assert [(r.offset, r.value) for r in got] == [(0, b"committed")]
    assert index.markers(name, 0) == {1, 3}, f"markers at {index.markers(name, 0)}"
    assert index.listed >= 1


@pytest.mark.xfail_on_tansu(
    "it answers ListOffsets LATEST at read_committed with 0 while a transaction is open, where Kafka answers the "
    "last stable offset (librdkafka's watermark query sees 0 too)",
    raises=AssertionError,
)
async def test_end_offsets_at_read_committed_is_the_last_stable_offset(txn_broker: TxnBroker) -> None:
    name = txn_broker.create_topic(1)
    producer = TxnProducer(txn_broker.bootstrap_servers, f"t-{uuid.uuid4().hex[:8]}")
    try:
        producer.begin()
        producer.send(name, 0, values("committed", 1))
        producer.commit()
        producer.begin()
        lso = producer.send(name, 0, values("open", 1))[0].offset
        tp = TopicPartition(name, 0)
        async with AsyncConsumer(txn_broker.bootstrap_servers, isolation_level="read_committed") as consumer:
            end = (await consumer.end_offsets([tp]))[tp]
        async with AsyncConsumer(txn_broker.bootstrap_servers, isolation_level="read_uncommitted") as consumer:
            end_uncommitted = (await consumer.end_offsets([tp]))[tp]
        producer.commit()
    finally:
        producer.close()
    assert end == lso, f"end_offsets at read_committed: {end}; last stable offset {lso}"
    assert end_uncommitted == lso + 1, f"end_offsets at read_uncommitted: {end_uncommitted}; high watermark {lso + 1}"
