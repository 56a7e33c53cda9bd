"""``consumer_methods.py``: the one declaration of ``AsyncConsumer``'s and ``Consumer``'s methods. Each face gets
every method from it (none written again in a face), each documented; the calls that wait are awaited on the one
face and plain on the other, and the shared waits behave per face (a blocking ``close`` joins on the caller's
thread, an async one off the loop)."""

from __future__ import annotations

import asyncio
import inspect
import threading

from asyncconsumer import AsyncConsumer, Consumer
from asyncconsumer._caller.consumer_methods import ConsumerMethods
from asyncconsumer._caller.faces import both_faces
from tests.support.no_broker import REFUSED

DECLARED = {name: inspect.getattr_static(ConsumerMethods, name) for name in dir(ConsumerMethods) if name[0] != "_"}
SHARED = {name for name, member in DECLARED.items() if isinstance(member, both_faces)}


def test_every_declared_method_is_on_both_faces_from_the_one_declaration() -> None:
    for name in SHARED:
        method = DECLARED[name].method
        assert getattr(AsyncConsumer, name).__code__ is method.__code__, name
        assert inspect.unwrap(getattr(Consumer, name)) is method, name
    for name in DECLARED.keys() - SHARED:  # plain on both: inherited as declared
        assert getattr(AsyncConsumer, name) is getattr(Consumer, name) is getattr(ConsumerMethods, name), name


def test_no_face_writes_a_declared_method_again() -> None:
    for face in (AsyncConsumer, Consumer):
        here = inspect.getsourcefile(face)
        written_here = {
            name
            for name, member in vars(face).items()
            if inspect.isfunction(member) and inspect.getsourcefile(inspect.unwrap(member)) == here
        }
        assert written_here, face  # what only this face has (process, ...) is written there
        assert written_here & DECLARED.keys() == set(), face


def test_the_waiting_calls_are_the_shared_ones_and_every_one_is_documented() -> None:
    assert {
        "start", "close", "assign", "seek", "seek_to_beginning", "seek_to_end", "position", "pause", "resume",
        "beginning_offsets", "end_offsets", "offsets_for_times", "topics", "partitions_for", "poll", "poll_arrow",
        "subscribe", "unsubscribe", "commit", "committed", "client_instance_id",
    } == SHARED  # fmt: skip
    undocumented = [name for name, member in DECLARED.items() if not (member.__doc__ or "").strip()]
    assert undocumented == []
    assert (ConsumerMethods.__init__.__doc__ or "").startswith('``AsyncConsumer("host:9092", group_id="g")``')


def joined_on(consumer: AsyncConsumer | Consumer) -> list[str]:
    """The threads the consumer's ``close`` joins its background thread on (the real join, watched)."""
    names: list[str] = []
    core = consumer._core
    join = core.finish_close

    def watched(timeout_s: float) -> None:
        names.append(threading.current_thread().name)
        join(timeout_s)

    core.finish_close = watched  # type: ignore[method-assign]
    return names


def test_a_blocking_close_joins_the_background_thread_on_the_callers_thread() -> None:
    consumer = Consumer(REFUSED)
    consumer.start()
    names = joined_on(consumer)
    consumer.close(timeout_ms=1_000)
    assert names == [threading.current_thread().name]
    assert not consumer._core.parts.thread.alive


def test_an_async_close_joins_it_off_the_event_loop() -> None:
    """The one body of ``close`` joins through each face's ``_join``: the asyncio face's runs in a worker thread,
    so the loop goes on meanwhile."""

    async def main() -> tuple[list[str], AsyncConsumer]:
        consumer = AsyncConsumer(REFUSED)
        await consumer.start()
        names = joined_on(consumer)
        await consumer.close(timeout_ms=1_000)
        return names, consumer

    names, consumer = asyncio.run(main())
    assert len(names) == 1 and names[0] != threading.current_thread().name
    assert not consumer._core.parts.thread.alive
