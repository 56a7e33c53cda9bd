"""What the asyncio face (``consumer.py``'s ``AsyncConsumer``) promises with no broker answering: made outside a
loop and started by its first awaited call; the calls that wait on the background are coroutines and everything is
typed; argument checks before anything starts; closed-state errors; and callbacks (sync or async) awaited inside
``poll``."""

from __future__ import annotations

import asyncio
import importlib.resources
import inspect
import threading
import time
import typing
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from asyncconsumer import (
    AsyncConsumer,
    ClientClosedError,
    ConfigError,
    ConsumerRecords,
    IllegalStateError,
    InvalidOffsetError,
    TopicPartition,
)
from asyncconsumer.events.background import CallbackEvent
from tests.support.no_broker import REFUSED, run_async

TP = TopicPartition("t", 0)

AWAITED = {
    "start", "close", "assign", "seek", "seek_to_beginning", "seek_to_end", "position", "pause", "resume",
    "beginning_offsets", "end_offsets", "offsets_for_times", "topics", "partitions_for", "poll", "poll_arrow",
    "subscribe", "unsubscribe", "commit", "committed", "client_instance_id", "__aenter__", "__aexit__", "__anext__",
    "process", "process_transactionally",
}  # fmt: skip
"""Every call that waits on the background thread (or may run a callback) is awaited; the rest read local state."""

LOCAL = {
    "assignment", "paused", "metrics", "highwater", "subscription", "commit_async", "group_metadata",
    "enforce_rebalance", "current_lag", "__aiter__", "stop_processing", "processing_metrics",
}  # fmt: skip


def public_methods(cls: type) -> dict[str, Any]:
    """The methods a user sees on ``cls``, wherever they are declared (most are shared with ``Consumer``)."""
    return {
        name: member
        for name in dir(cls)
        if callable(member := getattr(cls, name))
        and (not name.startswith("_") or (name.startswith("__a") and name.endswith("__")))
    }


async def poll_until(condition: Callable[[], bool], consumer: AsyncConsumer, timeout_s: float = 10.0) -> None:
    """Polls (100 ms at a time, so callbacks run) until ``condition`` holds; fails at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not true within {timeout_s} s"
        await consumer.poll(timeout_ms=100)


# --- the face itself ----------------------------------------------------------------------------------------------


def test_the_calls_that_wait_on_the_background_are_coroutines_and_local_reads_are_not() -> None:
    methods = public_methods(AsyncConsumer)
    assert set(methods) == AWAITED | LOCAL
    assert {name for name, member in methods.items() if inspect.iscoroutinefunction(member)} == AWAITED


def test_the_package_ships_py_typed_and_every_public_method_is_annotated() -> None:
    assert importlib.resources.files("asyncconsumer").joinpath("py.typed").is_file()
    missing = [
        f"{name}({parameter.name})"
        for name, member in public_methods(AsyncConsumer).items()
        for parameter in inspect.signature(member).parameters.values()
        if parameter.name != "self" and parameter.annotation is inspect.Parameter.empty
    ]
    assert missing == []
    hints = typing.get_type_hints(AsyncConsumer.poll)  # resolvable at run time, not just by a type checker
    assert hints["return"] is ConsumerRecords


def test_an_async_consumer_made_outside_a_loop_starts_on_its_first_awaited_call() -> None:
    consumer = AsyncConsumer(REFUSED)  # no running loop here

    async def use(c: AsyncConsumer) -> bool:
        await c.assign([TP])
        return c._core.started

    assert run_async(consumer, use) is True


def test_a_closed_async_consumer_raises_illegal_state() -> None:
    consumer = AsyncConsumer(REFUSED)

    async def use(c: AsyncConsumer) -> None:
        await c.close()
        with pytest.raises(IllegalStateError, match="closed"):
            await c.topics()

    run_async(consumer, use)


def test_close_with_an_unknown_group_membership_operation_is_refused_and_closes_nothing() -> None:
    consumer = AsyncConsumer(REFUSED)

    async def use(c: AsyncConsumer) -> None:
        with pytest.raises(ValueError, match="group_membership must be"):
            await c.close(group_membership="stay")
        assert c.assignment() == set()  # still open: a local read works
        await c.close(group_membership="remain_in_group")
        with pytest.raises(IllegalStateError, match="closed"):
            await c.topics()

    run_async(consumer, use)


def test_start_and_the_context_manager_keep_working() -> None:
    async def main() -> bool:
        async with AsyncConsumer(REFUSED) as c:
            await c.start()
            return c._core.started

    assert asyncio.run(main()) is True


def test_the_constructor_shows_no_private_parameter() -> None:
    parameters = inspect.signature(AsyncConsumer).parameters
    assert list(parameters) == ["config", "settings"]
    assert parameters["config"].kind is inspect.Parameter.POSITIONAL_ONLY


def test_async_poll_with_nothing_assigned_raises_illegal_state() -> None:
    async def use(c: AsyncConsumer) -> None:
        with pytest.raises(IllegalStateError):
            await c.poll(100)

    run_async(AsyncConsumer(REFUSED), use)


# --- argument checks, before anything starts --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda c: c.assign([("t", -1)]), IllegalStateError, "invalid partition"),
        (lambda c: c.seek(TP, -1), InvalidOffsetError, "integer >= 0"),
        (lambda c: c.seek(TP, 5), IllegalStateError, "not assigned"),
        (lambda c: c.subscribe("t"), TypeError, "collection of topic names"),
        (lambda c: c.subscribe(["t"]), IllegalStateError, "set group_id"),
        (lambda c: c.subscribe(pattern="("), ConfigError, "not a regular expression"),
        (lambda c: c.commit({TP: -1}), InvalidOffsetError, "integer >= 0"),
        (lambda c: c.offsets_for_times({TP: -5}), InvalidOffsetError, "integer >= 0"),
        (lambda c: c.partitions_for(""), TypeError, "non-empty string"),
    ],
)
def test_a_bad_argument_is_refused_before_the_background_starts(
    call: Callable[[AsyncConsumer], Awaitable[Any]], error: type[Exception], words: str
) -> None:
    consumer = AsyncConsumer(REFUSED)

    async def use(c: AsyncConsumer) -> bool:
        with pytest.raises(error, match=words):
            await call(c)
        return c._core.started

    assert run_async(consumer, use) is False


# --- closed ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.start(),
        lambda c: c.assign([TP]),
        lambda c: c.partitions_for("t"),
        lambda c: c.end_offsets([TP]),
        lambda c: c.committed([TP]),
        lambda c: c.commit({TP: 1}),
        lambda c: c.poll(0),
    ],
    ids=["start", "assign", "partitions_for", "end_offsets", "committed", "commit", "poll"],
)
def test_every_call_that_needs_the_background_raises_once_closed(
    call: Callable[[AsyncConsumer], Awaitable[Any]],
) -> None:
    async def main() -> bool:
        consumer = AsyncConsumer(REFUSED, group_id="g")
        await consumer.close()
        with pytest.raises(ClientClosedError, match="the consumer is closed"):
            await call(consumer)
        return consumer._core.started

    assert asyncio.run(main()) is False


def test_async_iteration_of_a_closed_consumer_stops() -> None:
    async def main() -> list[object]:
        consumer = AsyncConsumer(REFUSED)
        await consumer.close()
        return [record async for record in consumer]

    assert asyncio.run(main()) == []


# --- callbacks run inside poll ------------------------------------------------------------------------------------


def test_a_commit_async_callback_runs_inside_a_later_poll_on_the_callers_thread() -> None:
    heard: list[tuple[object, BaseException | None, threading.Thread]] = []

    async def use(c: AsyncConsumer) -> None:
        await c.assign([TP])
        c.commit_async({TP: 3}, lambda offsets, error: heard.append((offsets, error, threading.current_thread())))
        await poll_until(lambda: bool(heard), c)

    run_async(AsyncConsumer(REFUSED), use)  # no group: the commit fails, and the callback says so
    ((offsets, error, thread),) = heard
    assert offsets == {TP: 3}
    assert isinstance(error, IllegalStateError) and "needs a consumer group" in str(error)
    assert thread is threading.current_thread()


def test_sync_and_async_callbacks_are_both_awaited_by_poll_in_order() -> None:
    ran: list[str] = []

    async def later() -> None:
        await asyncio.sleep(0)
        ran.append("async")

    async def use(c: AsyncConsumer) -> int:
        await c.assign([TP])
        c._core.parts.background_events.put(CallbackEvent(later))
        c._core.parts.background_events.put(CallbackEvent(lambda: ran.append("sync")))
        return (await c.poll(0)).count()

    assert run_async(AsyncConsumer(REFUSED), use) == 0
    assert ran == ["async", "sync"]
