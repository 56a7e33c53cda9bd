"""What the blocking face (``sync.py``'s ``Consumer``) promises with no broker answering: the same methods as
``AsyncConsumer``, typed; usable at once and started by the first call that needs it; argument checks before
anything starts; closed-state errors; ``wakeup`` from another thread; callbacks (sync or async) run inside ``poll``;
and an unreachable broker named plainly."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from asyncconsumer import (
    AsyncConsumer,
    ClientClosedError,
    ConfigError,
    Consumer,
    IllegalStateError,
    InvalidOffsetError,
    KafkaTimeoutError,
    TopicPartition,
    WakeupError,
)
from asyncconsumer.events.background import CallbackEvent
from tests.support.no_broker import REFUSED

TP = TopicPartition("t", 0)

BLOCKING_ONLY = {"wakeup", "__iter__", "__enter__", "__exit__"}
"""Methods the blocking face has and the asyncio face has not (or has as ``__aiter__``, ``__aenter__``...)."""


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    """The methods a user sees on ``cls``, wherever they are declared (most are shared with ``AsyncConsumer``)."""
    return {
        name: inspect.signature(member)
        for name in dir(cls)
        if callable(member := getattr(cls, name))
        and (not name.startswith("_") or name in {"__iter__", "__enter__", "__exit__"})
    }


def wait_until(condition: Callable[[], bool], consumer: Consumer, timeout_s: float = 10.0) -> None:
    """Polls (100 ms at a time, so callbacks run) until ``condition`` holds; fails at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not true within {timeout_s} s"
        consumer.poll(timeout_ms=100)


# --- the face itself ----------------------------------------------------------------------------------------------


def test_every_method_of_the_async_face_is_here_with_the_same_parameters() -> None:
    blocking = public_methods(Consumer)
    asynchronous = {
        name: signature
        for name, signature in public_methods(AsyncConsumer).items()
        if name not in {"__aiter__", "__anext__", "__aenter__", "__aexit__"}
    }
    assert set(blocking) - BLOCKING_ONLY == set(asynchronous)
    for name, signature in asynchronous.items():
        if name in ("process", "process_transactionally"):  # a plain function in a thread pool: its own handler
            # type, an executor, fewer threads
            assert set(signature.parameters) <= set(blocking[name].parameters), name
            assert set(blocking[name].parameters) - set(signature.parameters) == {"executor"}
            continue
        assert list(blocking[name].parameters.values()) == list(signature.parameters.values()), name
        assert blocking[name].return_annotation == signature.return_annotation, name


def test_no_method_is_a_coroutine_function() -> None:
    coroutines = [name for name in public_methods(Consumer) if inspect.iscoroutinefunction(getattr(Consumer, name))]
    assert coroutines == []


def test_every_public_method_is_annotated_for_type_checkers() -> None:
    missing = [
        f"{name}({parameter.name})"
        for name, signature in public_methods(Consumer).items()
        for parameter in signature.parameters.values()
        if parameter.name != "self" and parameter.annotation is inspect.Parameter.empty
    ]
    missing += [f"{name} -> ?" for name, s in public_methods(Consumer).items() if s.return_annotation is s.empty]
    assert missing == []


def test_a_consumer_starts_with_the_first_call_that_needs_it() -> None:
    consumer = Consumer(REFUSED)
    assert not consumer._core.started  # constructing it does not start a thread
    assert consumer.assignment() == set()  # nor does reading local state
    consumer.assign([TP])
    assert consumer._core.started and consumer._core.parts.thread.alive
    consumer.close(timeout_ms=1_000)
    assert not consumer._core.parts.thread.alive


def test_close_of_a_never_used_consumer_does_nothing_and_later_calls_raise() -> None:
    consumer = Consumer(REFUSED)
    consumer.close()
    assert not consumer._core.started
    consumer.close()  # twice is fine
    with pytest.raises(ClientClosedError, match="closed"):
        consumer.assign([TP])
    with pytest.raises(IllegalStateError, match="closed"):
        consumer.poll(0)
    with pytest.raises(IllegalStateError):
        consumer.start()


def test_start_and_the_context_manager_keep_working() -> None:
    with Consumer(REFUSED) as consumer:
        assert consumer._core.started
        consumer.start()  # a second start is a no-op
    assert consumer._core.closed


def test_the_constructor_shows_no_private_parameter() -> None:
    parameters = inspect.signature(Consumer).parameters
    assert list(parameters) == ["config", "settings"]
    assert parameters["config"].kind is inspect.Parameter.POSITIONAL_ONLY


def test_poll_with_nothing_subscribed_or_assigned_raises_illegal_state() -> None:
    consumer = Consumer(REFUSED)
    with pytest.raises(IllegalStateError, match=r"subscribe\(\) or assign\(\)"):
        consumer.poll(100)
    assert not consumer._core.started  # checked before anything starts
    consumer.assign([TP])
    assert consumer.poll(0).count() == 0
    consumer.assign([])
    with pytest.raises(IllegalStateError):
        consumer.poll(0)
    consumer.close(timeout_ms=1_000)


# --- wakeup ----------------------------------------------------------------------------------------------------------


def test_wakeup_from_another_thread_interrupts_a_poll_in_progress() -> None:
    consumer = Consumer(REFUSED)
    consumer.assign([TP])
    timer = threading.Timer(0.3, consumer.wakeup)
    timer.start()
    started = time.monotonic()
    with pytest.raises(WakeupError):
        consumer.poll(timeout_ms=20_000)
    assert time.monotonic() - started < 5
    assert consumer.poll(0).count() == 0  # raised once: the next poll is a normal one
    consumer.close(timeout_ms=1_000)


def test_wakeup_before_a_call_makes_that_call_raise() -> None:
    consumer = Consumer(REFUSED)
    consumer.assign([TP])
    consumer.wakeup()
    with pytest.raises(WakeupError):
        consumer.poll(0)
    consumer.close(timeout_ms=1_000)


def test_wakeup_interrupts_a_blocking_lookup() -> None:
    consumer = Consumer(REFUSED)
    timer = threading.Timer(0.3, consumer.wakeup)
    timer.start()
    started = time.monotonic()
    with pytest.raises(WakeupError):
        consumer.topics(timeout_ms=20_000)
    assert time.monotonic() - started < 5
    consumer.close(timeout_ms=1_000)


# --- an unreachable broker ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "why"),
    [(REFUSED, "connection refused"), ("no-such-host.invalid:9092", "name not resolved")],
)
def test_an_unreachable_broker_is_named_plainly(address: str, why: str) -> None:
    consumer = Consumer(address)
    with pytest.raises(KafkaTimeoutError) as raised:
        consumer.topics(timeout_ms=1_500)
    message = str(raised.value)
    assert message.startswith("listing the cluster's topics timed out; last error: cannot connect to bootstrap server")
    assert address in message and why in message
    assert "Event" not in message and "OSError" not in message
    assert consumer.metrics().last_connection_error is not None and why in consumer.metrics().last_connection_error
    (node, outage), *others = consumer.metrics().unreachable_nodes.items()
    assert node == -1 and not others  # the bootstrap server, as Java names it (node--1)
    assert f"{outage.host}:{outage.port}" == address and why in outage.last_error and outage.failures >= 1
    assert 0 <= time.time() * 1000 - outage.unreachable_since_ms < 10_000 and outage.unreachable_for_ms >= 0
    consumer.close(timeout_ms=1_000)


# --- argument checks, before anything starts --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda c: c.assign([("t", -1)]), IllegalStateError, "invalid partition"),
        (lambda c: c.assign(["t"]), TypeError, "TopicPartition or \\(topic, partition\\)"),
        (lambda c: c.seek(TP, -1), InvalidOffsetError, "integer >= 0"),
        (lambda c: c.seek(TP, 5), IllegalStateError, "not assigned"),
        (lambda c: c.pause(TP), IllegalStateError, "not assigned"),
        (lambda c: c.seek_to_end(TP), IllegalStateError, "not assigned"),
        (lambda c: c.subscribe("t"), TypeError, "collection of topic names"),
        (lambda c: c.subscribe(), TypeError, "exactly one"),
        (lambda c: c.subscribe(["t"], pattern="t.*"), TypeError, "exactly one"),
        (lambda c: c.subscribe(["t"]), IllegalStateError, "set group_id"),
        (lambda c: c.subscribe(pattern="("), ConfigError, "not a regular expression"),
        (lambda c: c.commit({TP: -1}), InvalidOffsetError, "integer >= 0"),
        (lambda c: c.offsets_for_times({TP: -5}), InvalidOffsetError, "integer >= 0"),
        (lambda c: c.partitions_for(""), TypeError, "non-empty string"),
        (lambda c: c.group_metadata(), IllegalStateError, "set group_id"),
        (lambda c: c.highwater("t-0"), TypeError, "TopicPartition"),
    ],
)
def test_a_bad_argument_is_refused_before_the_background_starts(
    call: Callable[[Consumer], Any], error: type[Exception], words: str
) -> None:
    consumer = Consumer(REFUSED)
    with pytest.raises(error, match=words):
        call(consumer)
    assert not consumer._core.started
    consumer.close()


def test_a_bad_max_records_is_refused() -> None:
    consumer = Consumer(REFUSED)
    consumer.assign([TP])
    with pytest.raises(TypeError, match="max_records"):
        consumer.poll(0, max_records="10")  # type: ignore[arg-type]
    consumer.close(timeout_ms=1_000)


# --- closed ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.start(),
        lambda c: c.assign([TP]),
        lambda c: c.topics(),
        lambda c: c.partitions_for("t"),
        lambda c: c.beginning_offsets([TP]),
        lambda c: c.end_offsets([TP]),
        lambda c: c.offsets_for_times({TP: 0}),
        lambda c: c.committed([TP]),
        lambda c: c.commit({TP: 1}),
        lambda c: c.poll(0),
    ],
    ids=[
        "start",
        "assign",
        "topics",
        "partitions_for",
        "beginning_offsets",
        "end_offsets",
        "offsets_for_times",
        "committed",
        "commit",
        "poll",
    ],
)
def test_every_call_that_needs_the_background_raises_once_closed(call: Callable[[Consumer], Any]) -> None:
    consumer = Consumer(REFUSED, group_id="g")
    consumer.close()
    with pytest.raises(ClientClosedError, match="the consumer is closed"):
        call(consumer)
    assert not consumer._core.started  # and nothing started


def test_iterating_a_closed_consumer_yields_nothing() -> None:
    consumer = Consumer(REFUSED)
    consumer.close()
    assert list(consumer) == []


def test_close_after_use_stops_the_background_thread_within_its_timeout() -> None:
    consumer = Consumer(REFUSED)
    consumer.assign([TP])
    started = time.monotonic()
    consumer.close(timeout_ms=2_000)
    assert time.monotonic() - started < 5
    assert not consumer._core.parts.thread.alive
    with pytest.raises(ClientClosedError):
        consumer.assign([TP])


# --- callbacks run inside poll ------------------------------------------------------------------------------------


def test_a_commit_async_callback_runs_inside_a_later_poll_with_the_error() -> None:
    consumer = Consumer(REFUSED)  # no group: the commit fails, and the callback says so
    consumer.assign([TP])
    heard: list[tuple[object, BaseException | None, threading.Thread]] = []
    consumer.commit_async({TP: 3}, lambda offsets, error: heard.append((offsets, error, threading.current_thread())))
    try:
        wait_until(lambda: bool(heard), consumer)
        ((offsets, error, thread),) = heard
        assert offsets == {TP: 3}
        assert isinstance(error, IllegalStateError) and "needs a consumer group" in str(error)
        assert thread is threading.current_thread()  # the caller's thread, never the background's
    finally:
        consumer.close(timeout_ms=1_000)


def test_an_async_callback_is_run_to_completion_by_the_blocking_poll() -> None:
    consumer = Consumer(REFUSED)
    consumer.assign([TP])
    ran: list[str] = []

    async def callback() -> None:
        await asyncio.sleep(0)
        ran.append("done")

    consumer._core.parts.background_events.put(CallbackEvent(callback))
    try:
        assert consumer.poll(0).count() == 0
        assert ran == ["done"]
    finally:
        consumer.close(timeout_ms=1_000)
