"""The generated ``ApiKey``: every API key Kafka's jar defines, by Kafka's name, one name per key."""

from __future__ import annotations

import importlib
import pkgutil
import re

import asyncconsumer.protocol.messages
from asyncconsumer.protocol import base
from asyncconsumer.protocol.messages.api_keys import ApiKey


def test_known_keys_have_kafkas_numbers() -> None:
    assert (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA) == (0, 1, 2, 3)
    assert (ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR) == (8, 9, 10)
    assert (ApiKey.SASL_HANDSHAKE, ApiKey.API_VERSIONS, ApiKey.OFFSET_FOR_LEADER_EPOCH) == (17, 18, 23)
    assert (ApiKey.SASL_AUTHENTICATE, ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE) == (36, 68, 69)
    assert (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY) == (71, 72)
    assert (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE) == (76, 78, 79)


def test_names_are_upper_snake_and_keys_unique() -> None:
    assert len({int(key) for key in ApiKey}) == len(ApiKey)
    assert all(re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*", key.name) for key in ApiKey)
    assert len(ApiKey) >= 70


def test_base_re_exports_it_and_every_request_names_its_key() -> None:
    assert base.ApiKey is ApiKey
    for info in pkgutil.iter_modules(asyncconsumer.protocol.messages.__path__):
        module = importlib.import_module(f"asyncconsumer.protocol.messages.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and hasattr(value, "API_KEY"):
                assert value.__name__ == "".join(p.title() for p in value.API_KEY.name.split("_")) + "Request"
