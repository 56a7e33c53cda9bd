"""The admin client's methods (``_caller/admin_methods.py``) without a broker: bad input is refused, typed and
named, before anything is sent; the settings are the consumers' connection and security ones only; both faces."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from asyncconsumer import Admin, AsyncAdmin, TopicPartition
from asyncconsumer.admin import NewTopic
from asyncconsumer.config import AdminConfig
from asyncconsumer.errors import ClientClosedError, ConfigError, InvalidOffsetError, KafkaError
from tests.support.no_broker import REFUSED

TP = TopicPartition("t", 0)


def test_an_admin_takes_connection_and_security_settings_and_refuses_a_consumers_own() -> None:
    config = AdminConfig.from_settings({"bootstrap.servers": "h:1", "request.timeout.ms": 5_000})
    assert (config.client.client_id, config.client.request_timeout_ms) == ("asyncconsumer-admin", 5_000)
    assert not config.client.enable_metrics_push
    assert AdminConfig.from_settings("h:1", client_id="ops").client.client_id == "ops"
    with pytest.raises(ConfigError, match="group_id: does not apply to an admin client"):
        AdminConfig.from_settings("h:1", group_id="g")
    with pytest.raises(ConfigError, match=r"fetch\.min\.bytes"):
        AdminConfig.from_settings({"bootstrap.servers": "h:1", "fetch.min.bytes": 1})


def test_both_faces_have_the_same_methods_awaited_on_one_and_blocking_on_the_other() -> None:
    names = [n for n in ("list_groups", "describe_consumer_groups", "alter_consumer_group_offsets", "list_offsets")]
    for name in names:
        assert inspect.iscoroutinefunction(getattr(AsyncAdmin, name)), name
        assert not inspect.iscoroutinefunction(getattr(Admin, name)), name
        assert inspect.signature(getattr(AsyncAdmin, name)) == inspect.signature(getattr(Admin, name)), name


def test_bad_input_is_refused_before_anything_is_sent() -> None:
    async def main() -> None:
        async with AsyncAdmin(REFUSED) as admin:
            with pytest.raises(ValueError, match="types: 'queue' is not a group type"):
                await admin.list_groups(types=["queue"])
            with pytest.raises(ValueError, match=r"the offset spec for t-0 must be .*got 'first'"):
                await admin.list_offsets({TP: "first"})
            with pytest.raises(InvalidOffsetError, match="offset -1 for t-0 of group 'g' is below 0"):
                await admin.alter_consumer_group_offsets("g", {TP: -1})
            with pytest.raises(TypeError, match="takes NewTopic values"):
                await admin.create_topics(["t"])  # type: ignore[list-item]
            with pytest.raises(TypeError, match="not one string"):
                await admin.delete_topics("t")
            with pytest.raises(ValueError, match="names are non-empty strings"):
                await admin.describe_consumer_groups([""])

    asyncio.run(main())


def test_a_blocking_admin_with_no_broker_gives_up_by_the_timeout_and_a_closed_one_refuses() -> None:
    admin = Admin(REFUSED)
    with pytest.raises(KafkaError, match="Metadata to a broker"):
        admin.list_topics(timeout_ms=300)
    admin.close()
    with pytest.raises(ClientClosedError, match="admin client is closed"):
        admin.create_topics([NewTopic("t")])
