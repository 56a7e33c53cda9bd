"""Fetch sessions (KIP-227) against real brokers: incremental fetches over many partitions deliver every record
exactly once, and a session the broker drops or finds out of step falls back to a full fetch with nothing lost.

The session errors are Kafka's own answers to our consumer's fetches: a second client closes the consumer's session
(a full fetch naming a session closes it, whoever sends it: FETCH_SESSION_ID_NOT_FOUND follows), or moves its epoch
on with an incremental fetch of its own (INVALID_FETCH_SESSION_EPOCH follows, as for a duplicated request). Kafka
evicts sessions by itself only after two minutes unused, so these are the ways to make it answer so on demand.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs
import pytest

from asyncconsumer import AsyncConsumer, TopicPartition
from asyncconsumer.managers.fetch_session import FINAL_EPOCH
from asyncconsumer.protocol.messages.fetch import FetchRequest, FetchResponse
from tests.conftest import Broker, TopicFactory
from tests.support.background import on_background_async
from tests.support.consume import by_partition, consume_exactly, consume_until
from tests.support.produce import ProduceHelper
from tests.support.raw_client import RawClient
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

NO_SESSIONS = "Tansu 0.6 gives no fetch sessions (it answers every fetch with session id 0)"
FETCH_VERSION = 12


@attrs.define(frozen=True, slots=True)
class SessionIds:
    """A fetch session's id and epoch, as the consumer's background thread had them."""

    session_id: int
    epoch: int


async def sessions_of(consumer: AsyncConsumer) -> list[SessionIds]:
    """The consumer's fetch sessions with the one-node broker, read on its background thread."""
    return await on_background_async(
        consumer, lambda parts: [SessionIds(s.session_id, s.epoch) for s in parts.fetch.sessions.of_node(1)]
    )


async def test_incremental_fetches_over_many_partitions_deliver_every_record_exactly_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    partitions = 64
    name = topic(partitions)
    expected = {
        p: [r.offset for r in records] for p, records in (await produce.values_async(name, 640, partitions)).items()
    }
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest", fetch_max_wait_ms=200) as consumer:
        await consumer.assign([TopicPartition(name, p) for p in range(partitions)])
        got = await consume_until(consumer, 640)
        # then records come to a few partitions at a time while the others sit idle in the session
        waves = 0
        for wave in range(6):
            produced = await produce.values_async(name, 5 + wave, partitions, start=wave * 11)
            waves += 5 + wave
            for p, records in produced.items():
                expected[p] += [r.offset for r in records]
            got += await consume_until(consumer, 5 + wave)
        got += await consume_exactly(consumer, 0)  # and nothing more
        metrics = consumer.metrics()
    assert len(got) == 640 + waves
    assert by_partition(got) == expected
    if broker.kind == "kafka":
        assert metrics.fetch_requests_incremental > metrics.fetch_requests_full > 0
    else:  # sessionless: every fetch names every partition it fetches (NO_SESSIONS)
        assert metrics.fetch_requests_incremental == 0 and metrics.fetch_requests_full > 0
    assert metrics.fetch_session_errors == 0


def close_session(bootstrap: str, session: SessionIds) -> bool:
    """Closes ``session`` on the broker from a second client: a full fetch naming it (epoch -1, no partitions)."""
    client = RawClient(bootstrap, "session-closer")
    try:
        request = FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1024,
            topics=(),
            session_id=session.session_id,
            session_epoch=FINAL_EPOCH,
        )
        answer = client.call(request, FETCH_VERSION)
    finally:
        client.close()
    assert isinstance(answer, FetchResponse)
    return answer.error_code == 0


def step_epoch(bootstrap: str, session: SessionIds) -> bool:
    """Moves ``session``'s epoch on at the broker with an incremental fetch of nothing from a second client: the
    epoch the broker expects is the session's next (no fetch in flight) or the one after (one in flight)."""
    client = RawClient(bootstrap, "epoch-stepper")
    try:
        for epoch in (session.epoch + 1, session.epoch):
            request = FetchRequest(
                max_wait_ms=0, min_bytes=1, max_bytes=1, topics=(), session_id=session.session_id, session_epoch=epoch
            )
            answer = client.call(request, FETCH_VERSION)
            assert isinstance(answer, FetchResponse)
            if answer.error_code == 0:
                return True
    finally:
        client.close()
    return False


@pytest.mark.kafka_only(NO_SESSIONS)
@pytest.mark.parametrize("disturb", [close_session, step_epoch], ids=["session_closed", "epoch_moved"])
async def test_a_session_the_broker_lost_or_finds_out_of_step_falls_back_to_a_full_fetch_losing_nothing(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, disturb: Callable[[str, SessionIds], bool]
) -> None:
    name = topic(4)
    expected = {p: [r.offset for r in records] for p, records in (await produce.values_async(name, 200, 4)).items()}
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest", fetch_max_wait_ms=300) as consumer:
        await consumer.assign([TopicPartition(name, p) for p in range(4)])
        got = await consume_until(consumer, 200)
        await wait_for_async(
            lambda: consumer.metrics().fetch_requests_incremental > 0, message="no incremental fetch within 10 s"
        )
        before = consumer.metrics()
        deadline = time.monotonic() + 20
        # disturbed again while the consumer's own fetches win the race to the epoch (step_epoch)
        while consumer.metrics().fetch_session_errors == 0:
            assert time.monotonic() < deadline, f"no session error: {consumer.metrics()}"
            for session in await sessions_of(consumer):
                if session.session_id:
                    disturb(broker.bootstrap_servers, session)
            got += (await consumer.poll(timeout_ms=300)).records()
        errors = consumer.metrics()
        # the next fetch, a full one, opened a new session, and fetches in it went on
        await wait_for_async(
            lambda: consumer.metrics().fetch_requests_incremental > errors.fetch_requests_incremental + 2,
            message=lambda: f"no incremental fetch after the fallback: {consumer.metrics()}",
        )
        assert consumer.metrics().fetch_requests_full > before.fetch_requests_full
        for p, records in (await produce.values_async(name, 200, 4, start=200)).items():
            expected[p] += [r.offset for r in records]
        got += await consume_exactly(consumer, 400 - len(got))
    assert by_partition(got) == expected
