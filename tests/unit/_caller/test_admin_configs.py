"""The admin client's configs without a broker: resources and changes checked where they are made (a type by name,
a broker by its id, a value for every change but a delete, no config changed twice), resources grouped by the
broker they are asked of, requests built in order, and answers read: entries with their sources and types, a
resource's error typed with the broker's message, a resource left out of the answer a ``CorruptResponseError``."""

from __future__ import annotations

import pytest

from asyncconsumer._caller.admin_configs import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigType,
    alter_errors,
    alter_request,
    by_broker,
    check_changes,
    describe_request,
    described_configs,
)
from asyncconsumer.errors import CorruptResponseError, ErrorCode, InvalidConfigError, UnknownTopicOrPartitionError
from asyncconsumer.protocol.messages.describe_configs import (
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from asyncconsumer.protocol.messages.incremental_alter_configs import (
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)

TOPIC = ConfigResource("topic", "orders")
GROUP = ConfigResource(ConfigResourceType.GROUP, "g")


def test_a_resource_is_typed_by_name_and_a_broker_named_by_its_id() -> None:
    assert ConfigResource("Client_Metrics", "sub").type is ConfigResourceType.CLIENT_METRICS
    assert str(TOPIC) == "topic 'orders'"
    assert ConfigResource("broker", "").name == ""  # every broker's default
    with pytest.raises(ValueError, match="one of topic, broker, broker_logger, client_metrics, group"):
        ConfigResource("table", "x")
    with pytest.raises(ValueError, match="broker id, got 'b1'"):
        ConfigResource("broker", "b1")
    with pytest.raises(ValueError, match="group resource needs a name"):
        ConfigResource("group", "")
    assert sorted([GROUP, TOPIC, ConfigResource("broker", "2")]) == [TOPIC, ConfigResource("broker", "2"), GROUP]


def test_a_change_needs_a_value_unless_it_deletes() -> None:
    assert AlterConfigOp("retention.ms", op="DELETE").op is AlterConfigOpType.DELETE
    assert AlterConfigOp("cleanup.policy", "compact", "append").value == "compact"
    with pytest.raises(ValueError, match=r"set of config 'retention\.ms' needs a string value, got 5"):
        AlterConfigOp("retention.ms", 5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one of set, delete, append, subtract, got 'put'"):
        AlterConfigOp("retention.ms", "5", "put")
    with pytest.raises(ValueError, match="names a config"):
        AlterConfigOp("", "5")


def test_changes_are_checked_and_a_config_changed_twice_is_named() -> None:
    one = AlterConfigOp("retention.ms", "1")
    assert check_changes({TOPIC: one}) == {TOPIC: [one]}
    with pytest.raises(ValueError, match=r"config 'retention\.ms' of topic 'orders' is changed twice"):
        check_changes({TOPIC: [one, AlterConfigOp("retention.ms", op="delete")]})
    with pytest.raises(TypeError, match="ConfigResource keys"):
        check_changes({"orders": [one]})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="AlterConfigOp values"):
        check_changes({TOPIC: [("retention.ms", "1")]})  # type: ignore[list-item]


def test_a_brokers_configs_go_to_that_broker_and_the_rest_to_any() -> None:
    grouped = by_broker([GROUP, ConfigResource("broker", "2"), TOPIC, ConfigResource("broker_logger", "2"), TOPIC])
    assert grouped == {None: [TOPIC, GROUP], 2: [ConfigResource("broker", "2"), ConfigResource("broker_logger", "2")]}
    assert list(by_broker([ConfigResource("broker", "3"), TOPIC, ConfigResource("broker", "1")])) == [None, 1, 3]
    assert by_broker([ConfigResource("broker", "")]) == {None: [ConfigResource("broker", "")]}
    with pytest.raises(TypeError, match="not one"):
        by_broker(TOPIC)  # type: ignore[arg-type]


def test_requests_carry_every_resource_and_each_change_in_order() -> None:
    described = describe_request([TOPIC, GROUP], synonyms=True, documentation=False)
    assert [(r.resource_type, r.resource_name, r.configuration_keys) for r in described.resources] == [
        (2, "orders", None),
        (32, "g", None),
    ]
    assert described.include_synonyms and not described.include_documentation
    changes = {TOPIC: [AlterConfigOp("retention.ms", "1"), AlterConfigOp("segment.ms", "x", "delete")]}
    altered = alter_request(changes, [TOPIC], validate_only=True)
    assert altered.validate_only
    assert [(c.name, c.config_operation, c.value) for c in altered.resources[0].configs] == [
        ("retention.ms", 0, "1"),
        ("segment.ms", 1, None),  # a delete sends no value
    ]


def _entry(name: str, value: str | None, source: int, **more: object) -> DescribeConfigsResourceResult:
    return DescribeConfigsResourceResult(name=name, value=value, config_source=source, **more)  # type: ignore[arg-type]


def test_an_answer_is_read_into_entries_and_errors() -> None:
    response = DescribeConfigsResponse(
        results=(
            DescribeConfigsResult(
                resource_type=2,
                resource_name="orders",
                configs=(
                    _entry(
                        "retention.ms",
                        "60000",
                        1,
                        config_type=5,
                        synonyms=(DescribeConfigsSynonym("retention.ms", "60000", 1),),
                    ),
                    _entry("cleanup.policy", "delete", 5, config_type=7),
                    _entry("ssl.key.password", None, 99, is_sensitive=True, read_only=True, config_type=42),
                ),
            ),
            DescribeConfigsResult(
                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, resource_type=2, resource_name="gone", error_message=""
            ),
        )
    )
    gone = ConfigResource("topic", "gone")
    found, errors = described_configs([TOPIC, gone], response)
    entries = found[TOPIC]
    assert list(entries) == ["cleanup.policy", "retention.ms", "ssl.key.password"]
    assert (
        entries["retention.ms"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG and not entries["retention.ms"].is_default
    )
    assert entries["retention.ms"].type is ConfigType.LONG and entries["retention.ms"].synonyms[0].value == "60000"
    assert entries["cleanup.policy"].is_default and entries["cleanup.policy"].type is ConfigType.LIST
    secret = entries["ssl.key.password"]
    assert (secret.value, secret.source, secret.type, secret.is_sensitive, secret.is_read_only) == (
        None,
        ConfigSource.UNKNOWN,  # a source or type this client does not know reads as UNKNOWN, not an error
        ConfigType.UNKNOWN,
        True,
        True,
    )
    assert isinstance(errors[gone], UnknownTopicOrPartitionError) and "topic 'gone'" in str(errors[gone])
    with pytest.raises(CorruptResponseError, match="without group 'g'"):
        described_configs([GROUP], response)


def test_an_alter_answer_names_each_resource_refused() -> None:
    response = IncrementalAlterConfigsResponse(
        responses=(
            AlterConfigsResourceResponse(error_code=0, resource_type=2, resource_name="orders"),
            AlterConfigsResourceResponse(
                error_code=ErrorCode.INVALID_CONFIG,
                error_message="consumer.session.timeout.ms must be in the range 6000 to 60000 inclusive.",
                resource_type=32,
                resource_name="g",
            ),
        )
    )
    errors = alter_errors([TOPIC, GROUP], response)
    assert list(errors) == [GROUP] and isinstance(errors[GROUP], InvalidConfigError)
    assert "altering the configs of group 'g': consumer.session.timeout.ms must be in the range" in str(errors[GROUP])
    with pytest.raises(CorruptResponseError, match="without broker '1'"):
        alter_errors([ConfigResource("broker", "1")], response)
