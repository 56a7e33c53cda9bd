"""The error hierarchy (``errors.py``): broker codes to typed errors by name, what is retriable or needs fresh
metadata, the standard exceptions they also are, and messages that name what went wrong."""

from __future__ import annotations

import pytest

import asyncconsumer.errors as errors_module
from asyncconsumer.errors import (
    AuthenticationError,
    BrokerResponseError,
    ClientClosedError,
    ConfigError,
    CorruptRecordError,
    ErrorCode,
    IllegalStateError,
    InvalidOffsetError,
    InvalidRegularExpressionError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    PluginError,
    RecordBatchTooLargeError,
    RecordDeserializationError,
    ResponseTooLargeError,
    UnknownBrokerError,
    error_class,
    for_code,
)
from asyncconsumer.records import TopicPartition


def test_every_code_with_a_class_gives_that_class_named_after_kafka() -> None:
    typed = [code for code in ErrorCode if error_class(code) is not None]
    assert {int(code) for code in typed} == set(errors_module._BY_CODE)  # no class under a code ErrorCode lacks
    for code in typed:
        error = for_code(int(code), "detail")
        assert type(error) is error_class(code)
        assert (error.code, error.kafka_name) == (int(code), code.name)
        prefix = "pattern: " if isinstance(error, ConfigError) else ""  # a refused pattern names its key first
        assert str(error) == f"{prefix}[{code.name} ({int(code)})] detail"
        assert type(error).__module__ == "asyncconsumer.errors"


def test_a_code_without_a_class_still_gets_a_typed_error_naming_it() -> None:
    assert error_class(ErrorCode.INVALID_REPLICA_ASSIGNMENT) is None
    known = for_code(int(ErrorCode.INVALID_REPLICA_ASSIGNMENT), "t")
    assert isinstance(known, UnknownBrokerError) and isinstance(known, BrokerResponseError)
    assert (known.error_code, known.error_name) == (39, "INVALID_REPLICA_ASSIGNMENT")
    assert str(known) == "[INVALID_REPLICA_ASSIGNMENT (39)] t"
    unknown = for_code(9_999)
    assert (unknown.error_name, str(unknown)) == ("UNKNOWN_CODE_9999", "[UNKNOWN_CODE_9999 (9999)]")
    assert not unknown.retriable


@pytest.mark.parametrize(
    ("code", "retriable", "invalid_metadata"),
    [
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, True, True),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True, True),
        (ErrorCode.FENCED_LEADER_EPOCH, True, True),
        (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, True, False),
        (ErrorCode.NOT_COORDINATOR, True, False),
        (ErrorCode.REQUEST_TIMED_OUT, True, False),
        (ErrorCode.UNKNOWN_MEMBER_ID, False, False),
        (ErrorCode.TOPIC_AUTHORIZATION_FAILED, False, False),
        (ErrorCode.OFFSET_OUT_OF_RANGE, False, False),
    ],
)
def test_whether_a_retry_may_succeed_and_whether_it_needs_fresh_metadata(
    code: ErrorCode, retriable: bool, invalid_metadata: bool
) -> None:
    error = for_code(int(code))
    assert (error.retriable, error.invalid_metadata) == (retriable, invalid_metadata)


def test_client_errors_are_also_the_standard_exceptions_callers_catch() -> None:
    assert issubclass(ConfigError, ValueError) and issubclass(InvalidOffsetError, ValueError)
    assert issubclass(KafkaTimeoutError, TimeoutError) and KafkaTimeoutError.retriable
    assert issubclass(ClientClosedError, IllegalStateError)
    assert KafkaConnectionError.retriable and KafkaConnectionError.invalid_metadata
    assert issubclass(ResponseTooLargeError, KafkaConnectionError)
    for name in ("SASL_AUTHENTICATION_FAILED", "UNSUPPORTED_SASL_MECHANISM", "ILLEGAL_SASL_STATE"):
        assert isinstance(for_code(int(ErrorCode[name])), AuthenticationError), name
    exported = [getattr(errors_module, name) for name in errors_module.__all__]
    classes = [obj for obj in exported if isinstance(obj, type) and obj is not ErrorCode]
    assert classes and all(issubclass(cls, KafkaError) for cls in classes)


def test_a_config_error_names_its_key() -> None:
    error = ConfigError("fetch_max_bytes", "must be positive")
    assert (error.key, str(error)) == ("fetch_max_bytes", "fetch_max_bytes: must be positive")


def test_a_refused_pattern_is_a_config_error_for_the_key_pattern() -> None:
    error = for_code(int(ErrorCode.INVALID_REGULAR_EXPRESSION), "bad (?P<x>")
    assert isinstance(error, InvalidRegularExpressionError) and isinstance(error, ConfigError)
    assert error.key == "pattern"
    assert str(error) == "pattern: [INVALID_REGULAR_EXPRESSION (128)] bad (?P<x>"
    assert str(InvalidRegularExpressionError()) == "pattern: [INVALID_REGULAR_EXPRESSION (128)]"


def test_a_log_truncation_is_an_offset_out_of_range_naming_where_the_logs_diverge() -> None:
    assert type(for_code(1)) is OffsetOutOfRangeError
    error = LogTruncationError("t", 0, 120, 100)
    assert isinstance(error, OffsetOutOfRangeError)
    assert (error.topic, error.partition, error.offset, error.divergent_offset) == ("t", 0, 120, 100)
    assert "t-0" in str(error) and "at offset 120" in str(error) and "at offset 100" in str(error)
    assert "an unknown offset" in str(LogTruncationError("t", 0, 120, None))


def test_a_response_too_large_says_which_limit_or_that_the_size_is_impossible() -> None:
    error = ResponseTooLargeError("broker 1 at h:9092", 10_000, 1_000)
    assert (error.size, error.limit) == (10_000, 1_000)
    assert str(error) == (
        "broker 1 at h:9092 announced a response of 10000 bytes, more than receive_message_max_bytes (1000); "
        "the connection was closed"
    )
    assert "a negative size" in str(ResponseTooLargeError("broker 1", -7, 1_000))


def test_record_errors_say_where_to_seek_to_skip() -> None:
    corrupt = CorruptRecordError("t", 2, 40, "crc mismatch")
    assert str(corrupt) == "corrupt record batch in t-2 at offset 40: crc mismatch"
    bomb = RecordBatchTooLargeError("t", 2, 40, 45, 1_000, "lz4")
    assert isinstance(bomb, CorruptRecordError)
    assert (bomb.offset, bomb.next_offset, bomb.limit) == (40, 45, 1_000)
    assert "seek to offset 45 to skip the batch" in str(bomb)
    cause = ValueError("not json")
    bad = RecordDeserializationError("t", 2, 41, "value", cause)
    assert (bad.part, bad.offset) == ("value", 41)
    assert str(bad) == "could not deserialize the value of t-2@41: ValueError('not json')"


def test_other_errors_carry_what_they_name() -> None:
    plugin = PluginError("audit", "poll raised KeyError")
    assert (plugin.plugin, str(plugin)) == ("audit", "plugin 'audit': poll raised KeyError")
    missing = NoOffsetForPartitionError([TopicPartition("t", 0)])
    assert missing.partitions == [TopicPartition("t", 0)]
    assert "auto_offset_reset is 'none'" in str(missing)


def test_every_exported_name_exists() -> None:
    assert sorted(errors_module.__all__) == errors_module.__all__
    for name in errors_module.__all__:
        assert hasattr(errors_module, name), name
