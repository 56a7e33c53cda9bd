"""``share_methods.py``: the one declaration of ``AsyncShareConsumer``'s and ``ShareConsumer``'s methods. Both faces
get every method from it, each documented, with the same parameters; the waiting calls are coroutines on the asyncio
face only; and the acknowledgement commit callback is called alike by both, an awaitable it returns awaited."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from asyncconsumer import AsyncShareConsumer, KafkaError, ShareConsumer, TopicPartition
from asyncconsumer._caller.faces import both_faces
from asyncconsumer._caller.share_methods import ShareConsumerMethods
from asyncconsumer.events.background import AcknowledgedEvent

NOWHERE = "127.0.0.1:1"
TP = TopicPartition("t", 0)

DECLARED = {
    name: inspect.getattr_static(ShareConsumerMethods, name) for name in dir(ShareConsumerMethods) if name[0] != "_"
}
SHARED = {name for name, member in DECLARED.items() if isinstance(member, both_faces)}


def test_both_faces_have_every_declared_method_with_the_same_parameters_and_a_docstring() -> None:
    assert {
        "start", "close", "subscribe", "unsubscribe", "poll", "commit_sync", "commit_async", "client_instance_id",
    } == SHARED  # fmt: skip
    for name in SHARED:
        method = DECLARED[name].method
        assert inspect.iscoroutinefunction(getattr(AsyncShareConsumer, name)), name
        assert not inspect.iscoroutinefunction(getattr(ShareConsumer, name)), name
        assert inspect.signature(getattr(ShareConsumer, name)) == inspect.signature(method), name
        assert inspect.signature(getattr(AsyncShareConsumer, name)) == inspect.signature(method), name
    undocumented = [name for name, member in DECLARED.items() if not (member.__doc__ or "").strip()]
    assert undocumented == []
    assert set(vars(ShareConsumer)) & (DECLARED.keys() - SHARED) == set()  # the plain ones are not written again


@pytest.mark.parametrize("face", [ShareConsumer, AsyncShareConsumer])
def test_an_acknowledgement_callback_that_returns_an_awaitable_is_awaited_by_either_face(face: type[Any]) -> None:
    """It runs inside the commit; ``ShareConsumer`` called it and dropped the coroutine it returned, unawaited."""
    consumer = face(NOWHERE, group_id="g")
    seen: list[tuple[dict[TopicPartition, set[int]], KafkaError | None]] = []

    async def callback(offsets: dict[TopicPartition, set[int]], error: KafkaError | None) -> None:
        await asyncio.sleep(0)
        seen.append((offsets, error))

    consumer.set_acknowledgement_commit_callback(callback)
    consumer._core.parts.background_events.put(AcknowledgedEvent(TP, frozenset({3, 4}), None))
    results = consumer.commit_sync() if face is ShareConsumer else asyncio.run(consumer.commit_sync())
    assert results == {}  # nothing was owed: answered at once, without starting
    assert seen == [({TP: {3, 4}}, None)]
    assert not consumer._core.started
