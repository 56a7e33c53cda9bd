"""commit_async: returns at once, and its callback runs on the caller's side inside a later poll."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from asyncconsumer import InvalidOffsetError, OffsetAndMetadata, TopicPartition
from tests.conftest import Broker, TopicFactory
from tests.support.groups import all_partitions, consume_until, group_consumer, new_group_id
from tests.support.produce import ProduceHelper

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


async def test_commit_async_calls_back_in_poll_and_the_offsets_are_committed(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    produce.values(name, 100, 2)
    calls: list[tuple[Mapping[Any, Any] | None, BaseException | None, int]] = []
    async with group_consumer(broker.bootstrap_servers, new_group_id(), enable_auto_commit=False) as consumer:
        await consumer.subscribe([name])
        await consume_until(consumer, 100)
        explicit = {TopicPartition(name, 0): OffsetAndMetadata(40, "half")}
        consumer.commit_async(explicit, lambda offsets, error: calls.append((offsets, error, threading.get_ident())))
        consumer.commit_async()  # current positions, no callback
        deadline = time.monotonic() + 10
        while not calls:
            assert time.monotonic() < deadline, "the commit callback never ran"
            await consumer.poll(timeout_ms=100)
        offsets, error, thread = calls[0]
        assert error is None and offsets == explicit
        assert thread == threading.get_ident()  # the caller's thread, not the background's
        committed = await consumer.committed(all_partitions(name, 2))
        assert {tp.partition: (c.offset if c else None) for tp, c in committed.items()} == {0: 50, 1: 50}
        with pytest.raises(InvalidOffsetError, match=f"{name}-0"):
            consumer.commit_async({TopicPartition(name, 0): -3})
