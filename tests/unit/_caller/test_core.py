"""What both faces promise with no broker answering: a lazy start, close, argument and state checks, wakeup, and
errors that name an unreachable broker plainly."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from asyncconsumer import (
    AsyncConsumer,
    ClientClosedError,
    ConfigError,
    Consumer,
    ConsumerConfig,
    ConsumerSettings,
    IllegalStateError,
    KafkaTimeoutError,
    TopicPartition,
    WakeupError,
)

REFUSED = "127.0.0.1:1"
"""Nothing listens on port 1: every connection is refused at once."""

TP = TopicPartition("t", 0)


def run_async(consumer: AsyncConsumer, call: Callable[[AsyncConsumer], Any]) -> Any:
    """Runs ``call(consumer)`` (a coroutine) on a fresh loop, then closes the consumer."""

    async def main() -> Any:
        try:
            return await call(consumer)
        finally:
            await consumer.close(timeout_ms=1_000)

    return asyncio.run(main())


# --- starting and closing ---------------------------------------------------------------------------------------


def test_a_consumer_starts_with_the_first_call_that_needs_it() -> None:
    consumer = Consumer(REFUSED)
    assert not consumer._core.started  # constructing it does not start a thread
    assert consumer.assignment() == set()  # nor does reading local state
    consumer.assign([TP])
    assert consumer._core.started and consumer._core.parts.thread.alive
    consumer.close(timeout_ms=1_000)
    assert not consumer._core.parts.thread.alive


def test_an_async_consumer_made_outside_a_loop_starts_on_its_first_awaited_call() -> None:
    consumer = AsyncConsumer(REFUSED)  # no running loop here

    async def use(c: AsyncConsumer) -> bool:
        await c.assign([TP])
        return c._core.started

    assert run_async(consumer, use) is True


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


def test_a_closed_async_consumer_raises_illegal_state() -> None:
    consumer = AsyncConsumer(REFUSED)

    async def use(c: AsyncConsumer) -> None:
        await c.close()
        with pytest.raises(IllegalStateError, match="closed"):
            await c.topics()

    run_async(consumer, use)


def test_start_and_the_context_managers_keep_working() -> None:
    with Consumer(REFUSED) as consumer:
        assert consumer._core.started
        consumer.start()  # a second start is a no-op
    assert consumer._core.closed

    async def main() -> bool:
        async with AsyncConsumer(REFUSED) as c:
            await c.start()
            return c._core.started

    assert asyncio.run(main()) is True


def test_concurrent_first_calls_start_one_background_thread() -> None:
    def network_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "asyncconsumer-network"}

    before = network_threads()  # other tests' consumers may still be finishing
    consumer = Consumer(REFUSED)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def first_call() -> None:
        barrier.wait()
        try:
            consumer.pause(*())  # needs the background, asks nothing of the broker
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    try:
        assert errors == []
        assert network_threads() - before == {consumer._core.parts.thread._thread}
    finally:
        consumer.close(timeout_ms=1_000)


# --- settings -----------------------------------------------------------------------------------------------------


def test_settings_as_a_mapping_with_java_names_plus_keyword_arguments() -> None:
    consumer = Consumer(
        {"bootstrap.servers": REFUSED, "group.id": "g", "auto.offset.reset": "earliest"}, fetch_max_wait_ms=7
    )
    config = consumer.config
    assert (config.bootstrap_servers, config.group_id, config.auto_offset_reset) == ((REFUSED,), "g", "earliest")
    assert config.fetch_max_wait_ms == 7
    assert (
        AsyncConsumer({"bootstrap_servers": REFUSED, "enable.auto.commit": "false"}).config.enable_auto_commit is False
    )


def test_a_setting_given_both_ways_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"given twice: as 'group.id' in the settings mapping") as raised:
        Consumer({"bootstrap.servers": REFUSED, "group.id": "a"}, group_id="b")
    assert raised.value.key == "group_id"


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"bootstrap.servers": REFUSED, "fetch.max.wiat.ms": 5}, "fetch.max.wiat.ms"),
        ({"bootstrap.servers": REFUSED, "enable.auto.commit": "ture"}, "enable_auto_commit"),
        ({"group.id": "g"}, "bootstrap_servers"),
    ],
)
def test_bad_settings_in_a_mapping_name_the_key(settings: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Consumer(settings)
    assert raised.value.key == key


def test_a_config_object_is_accepted_as_is() -> None:
    config = ConsumerConfig.from_kwargs(REFUSED, group_id="g")
    assert Consumer(config).config is config
    assert Consumer(config, client_id="other").config.client_id == "other"


def test_the_typed_keyword_arguments_are_exactly_the_config_fields() -> None:
    assert set(ConsumerSettings.__annotations__) == {f.name for f in attrs.fields(ConsumerConfig)}


@pytest.mark.parametrize("facade", [Consumer, AsyncConsumer])
def test_the_constructor_shows_no_private_parameter(facade: type) -> None:
    parameters = inspect.signature(facade).parameters
    assert list(parameters) == ["config", "settings"]
    assert parameters["config"].kind is inspect.Parameter.POSITIONAL_ONLY


# --- poll's checks ------------------------------------------------------------------------------------------------


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


def test_async_poll_with_nothing_assigned_raises_illegal_state() -> None:
    async def use(c: AsyncConsumer) -> None:
        with pytest.raises(IllegalStateError):
            await c.poll(100)

    run_async(AsyncConsumer(REFUSED), use)


@pytest.mark.parametrize(("timeout", "error"), [(-1, ValueError), (-0.5, ValueError), ("1000", TypeError)])
def test_a_bad_poll_timeout_is_rejected_at_once(timeout: Any, error: type[Exception]) -> None:
    consumer = Consumer(REFUSED)
    consumer.assign([TP])
    started = time.monotonic()
    with pytest.raises(error, match="timeout_ms"):
        consumer.poll(timeout)
    assert time.monotonic() - started < 1
    consumer.close(timeout_ms=1_000)


# --- wakeup -------------------------------------------------------------------------------------------------------


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


# --- group calls without a group ----------------------------------------------------------------------------------


def test_enforce_rebalance_needs_a_group_subscription() -> None:
    consumer = Consumer(REFUSED, group_id="g")
    with pytest.raises(IllegalStateError, match="subscribe"):
        consumer.enforce_rebalance()
    consumer.close()


def test_current_lag_is_unknown_before_a_fetch_and_illegal_for_an_unassigned_partition() -> None:
    consumer = Consumer(REFUSED)
    with pytest.raises(IllegalStateError, match="not assigned"):
        consumer.current_lag(TP)
    consumer.assign([TP])
    assert consumer.current_lag(("t", 0)) is None
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
    consumer.close(timeout_ms=1_000)


_FIRST_FAILURE = """
import logging, sys, time
from asyncconsumer import Consumer
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(created).3f %(levelname)s %(message)s")
consumer = Consumer("127.0.0.1:1")
print(f"{time.time():.3f} START now")
try:
    consumer.topics(timeout_ms=1500)
except Exception as exc:
    print(f"{time.time():.3f} RAISED {exc}")
consumer.close(timeout_ms=1000)
"""


def test_the_first_connection_failure_is_logged_at_once_as_a_warning_and_retries_continue() -> None:
    out = subprocess.run([sys.executable, "-c", _FIRST_FAILURE], capture_output=True, text=True, timeout=60, check=True)
    lines = [line.split(" ", 2) for line in out.stdout.splitlines()]
    start = next(float(t) for t, level, _ in lines if level == "START")
    failures = [(float(t), level, text) for t, level, text in lines if "connection.failed" in text]
    assert len(failures) >= 2, out.stdout  # it kept retrying within the call's timeout
    first_at, first_level, first_text = failures[0]
    assert first_level == "WARNING" and first_at - start < 1.0, out.stdout
    assert "connection refused" in first_text
    assert {level for _, level, _ in failures[1:]} == {"INFO"}
    assert any(level == "RAISED" for _, level, _ in lines)
