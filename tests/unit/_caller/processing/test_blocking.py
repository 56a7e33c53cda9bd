"""``Consumer.process`` over the blocking consumer's own core, no broker answering: ``stop_processing()`` and
``processing_metrics()`` from another thread, ``wakeup()`` ending it with ``WakeupError``, a stop that comes before
the loop runs, and one run at a time. Records through a real broker: ``docs/processing.md``'s blocking example,
run by ``tests/integration/test_docs.py``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from asyncconsumer import Consumer, IllegalStateError, ProcessingMetrics, TopicPartition, WakeupError
from asyncconsumer._caller.processing.blocking import BlockingProcessing
from asyncconsumer._caller.processing.core import ProcessingOptions
from tests.support.no_broker import REFUSED
from tests.support.waiting import wait_for

TP = TopicPartition("t", 0)


def handle(record: Any) -> None:
    pass


def in_thread(call: Callable[[], None]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


@pytest.fixture
def consumer() -> Any:
    c = Consumer(REFUSED, group_id="g")
    c.assign([TP])
    yield c
    c.close(timeout_ms=1_000)


def test_stop_and_metrics_from_another_thread(consumer: Consumer) -> None:
    thread, errors = in_thread(lambda: consumer.process(handle, concurrency=2))
    wait_for(lambda: consumer.processing_metrics() is not None, 10, message="process() never started")
    with pytest.raises(IllegalStateError, match="already running"):
        consumer.process(handle)
    assert isinstance(consumer.processing_metrics(), ProcessingMetrics)
    consumer.stop_processing()
    thread.join(10)
    assert not thread.is_alive() and errors == []
    assert consumer.processing_metrics() is None
    assert consumer._core.rebalance_hook is None and consumer._core.auto_commit  # undone after the run


def test_wakeup_ends_it_with_wakeup_error(consumer: Consumer) -> None:
    pool = ThreadPoolExecutor(1)
    thread, errors = in_thread(lambda: consumer.process(handle, executor=pool))
    wait_for(lambda: consumer.processing_metrics() is not None, 10, message="process() never started")
    consumer.wakeup()
    thread.join(10)
    assert not thread.is_alive() and [type(e) for e in errors] == [WakeupError]
    pool.submit(handle, None).result(1)  # the caller's executor is the caller's: still open


def test_a_stop_before_the_loop_runs_ends_the_run_at_its_start(consumer: Consumer) -> None:
    processing = BlockingProcessing(consumer._core, handle, ProcessingOptions(concurrency=1))
    processing.stop()
    thread, errors = in_thread(processing.run)
    thread.join(10)
    assert not thread.is_alive() and errors == []
    assert processing.metrics().completed == 0
