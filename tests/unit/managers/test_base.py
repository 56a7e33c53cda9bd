"""The request-manager contract (``managers/base.py``): what a poll returns by default, what an unsent request is
compared by, and every built-in manager keeping the contract's two methods."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import attrs
import pytest

import asyncconsumer.managers
from asyncconsumer.errors import KafkaConnectionError
from asyncconsumer.managers.base import EMPTY, MAX_POLL_WAIT_MS, PollResult, RequestManager, UnsentRequest, is_error
from asyncconsumer.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic


def test_a_poll_result_asks_for_nothing_and_for_the_longest_sleep_by_default() -> None:
    assert PollResult() == EMPTY
    assert (EMPTY.time_until_next_poll_ms, EMPTY.unsent_requests) == (MAX_POLL_WAIT_MS, ())
    assert MAX_POLL_WAIT_MS == 5_000  # Kafka's cap on the network thread's wait
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        EMPTY.time_until_next_poll_ms = 0  # type: ignore[misc]


def test_an_unsent_request_is_its_request_and_node_not_its_callback() -> None:
    request = MetadataRequest(topics=(MetadataRequestTopic(name="t"),), allow_auto_topic_creation=False)
    first = UnsentRequest(request, 1, lambda result, now: None)
    assert first == UnsentRequest(request, 1, lambda result, now: None)
    assert first != UnsentRequest(request, None, lambda result, now: None)  # None: the least-loaded node
    assert first.timeout_ms is None
    assert "lambda" not in repr(first) and "on_response" not in repr(first)


def test_an_answer_is_an_error_only_when_it_is_a_kafka_error() -> None:
    assert is_error(KafkaConnectionError("gone"))
    assert (
        not is_error(MetadataRequest(topics=None, allow_auto_topic_creation=False))
        and not is_error(None)
        and not is_error(ValueError("x"))
    )


def _managers() -> list[type]:
    found = []
    for info in pkgutil.iter_modules(asyncconsumer.managers.__path__):
        module = importlib.import_module(f"asyncconsumer.managers.{info.name}")
        found += [
            cls
            for cls in vars(module).values()
            if inspect.isclass(cls) and cls.__module__ == module.__name__ and callable(getattr(cls, "poll", None))
        ]
    return found


def test_every_built_in_manager_has_both_contract_methods_taking_now_ms() -> None:
    managers = [cls for cls in _managers() if cls is not RequestManager and not getattr(cls, "_is_protocol", False)]
    assert len(managers) >= 10
    for cls in managers:
        for method in ("poll", "poll_on_close"):
            parameters = list(inspect.signature(getattr(cls, method)).parameters)
            assert parameters == ["self", "now_ms"], f"{cls.__name__}.{method}{parameters}"
