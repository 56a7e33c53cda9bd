"""One error hierarchy, rooted at ``KafkaError``; ``retriable`` on the class says whether a retry may succeed.

Broker error codes map to classes through ``for_code``; codes we have no class for still get a typed error that
carries the code and its Kafka name.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AuthenticationError",
    "BrokerResponseError",
    "ClientClosedError",
    "CommitFailedError",
    "ConfigError",
    "CorruptRecordError",
    "CorruptResponseError",
    "FencedLeaderEpochError",
    "IllegalStateError",
    "InvalidOffsetError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaTimeoutError",
    "LeaderNotAvailableError",
    "NoOffsetForPartitionError",
    "NotLeaderOrFollowerError",
    "OffsetOutOfRangeError",
    "PollIntervalExceededError",
    "RecordDeserializationError",
    "RequestTimedOutError",
    "UnknownTopicOrPartitionError",
    "UnsupportedVersionError",
    "for_code",
]


class KafkaError(Exception):
    """Root of every error this package raises."""

    retriable: ClassVar[bool] = False
    invalid_metadata: ClassVar[bool] = False
    """A retry needs fresh metadata first (leader moved, topic unknown)."""


# --- client-side errors ---------------------------------------------------------------------------------------


class ConfigError(KafkaError, ValueError):
    """A configuration key has a bad value; the message names the key and what is allowed."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


class IllegalStateError(KafkaError):
    """The call does not fit the consumer's state (e.g. a partition that is not assigned)."""


class InvalidOffsetError(KafkaError, ValueError):
    """An offset or timestamp given by the caller is not valid for the partition it names."""


class ClientClosedError(IllegalStateError):
    """The consumer is closed, or its background thread has stopped."""


class KafkaTimeoutError(KafkaError, TimeoutError):
    """An operation did not finish before its deadline."""

    retriable = True


class KafkaConnectionError(KafkaError):
    """A broker connection could not be made or was lost; pending requests on it fail with this."""

    retriable = True
    invalid_metadata = True


class CorruptResponseError(KafkaError):
    """A broker response could not be decoded; its connection is closed and the request retried."""

    retriable = True


class UnsupportedVersionError(KafkaError):
    """No version of an API is supported by both this client and the broker."""


class NoOffsetForPartitionError(KafkaError):
    """A partition has no position and ``auto_offset_reset`` is ``none``."""

    def __init__(self, partitions: object) -> None:
        super().__init__(f"no offset for partitions {partitions} and auto_offset_reset is 'none'")
        self.partitions = partitions


class PollIntervalExceededError(KafkaError):
    """``poll`` was not called within ``max_poll_interval_ms``: the member left its group (it rejoins on this poll)."""

    retriable = True


class CommitFailedError(KafkaError):
    """The group no longer accepts this member's commit (it rebalanced or fenced the member); not retriable."""


class PluginError(KafkaError):
    """A plugin could not be loaded, or its request manager raised; ``plugin`` names it, ``__cause__`` is why."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(f"plugin {plugin!r}: {message}")
        self.plugin = plugin


class AuthenticationError(KafkaError):
    """TLS or SASL authentication with a broker failed: fatal, so the consumer stops connecting and raises it once.

    The message names the broker and the mechanism, never a password.
    """


class CorruptRecordError(KafkaError):
    """A record batch failed its CRC check or could not be decoded; ``seek`` past ``offset`` to skip it."""

    def __init__(self, topic: str, partition: int, offset: int, reason: str) -> None:
        super().__init__(f"corrupt record batch in {topic}-{partition} at offset {offset}: {reason}")
        self.topic = topic
        self.partition = partition
        self.offset = offset


class RecordDeserializationError(KafkaError):
    """A key or value deserializer raised; ``seek`` past ``offset`` to skip the record."""

    def __init__(self, topic: str, partition: int, offset: int, part: str, cause: BaseException) -> None:
        super().__init__(f"could not deserialize the {part} of {topic}-{partition}@{offset}: {cause!r}")
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.part = part


# --- broker error codes ------------------------------------------------------------------------------------


class BrokerResponseError(KafkaError):
    """A broker answered with a non-zero error code."""

    code: ClassVar[int] = -1
    kafka_name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"

    def __init__(self, message: str = "") -> None:
        text = f"[{self.kafka_name} ({self.code})]"
        super().__init__(f"{text} {message}" if message else text)


class UnknownBrokerError(BrokerResponseError):
    """An error code this client has no class for; ``error_code`` and ``error_name`` say which."""

    def __init__(self, code: int, message: str = "") -> None:
        self.error_code = code
        self.error_name = _UNNAMED.get(code, f"UNKNOWN_CODE_{code}")
        KafkaError.__init__(self, f"[{self.error_name} ({code})] {message}".rstrip())


_BY_CODE: dict[int, type[BrokerResponseError]] = {}


def _code(
    code: int,
    name: str,
    *,
    retriable: bool = False,
    invalid_metadata: bool = False,
    doc: str = "",
    also: type[KafkaError] | None = None,
) -> type[BrokerResponseError]:
    cls = type(
        "".join(part.capitalize() for part in name.split("_")) + "Error",
        (BrokerResponseError,) if also is None else (BrokerResponseError, also),
        {
            "code": code,
            "kafka_name": name,
            "retriable": retriable,
            "invalid_metadata": invalid_metadata,
            "__doc__": doc or f"Broker error {name} ({code}).",
            "__module__": __name__,
        },
    )
    _BY_CODE[code] = cls
    return cls


OffsetOutOfRangeError = _code(1, "OFFSET_OUT_OF_RANGE", doc="The fetch offset is outside the partition's log.")
CorruptMessageError = _code(2, "CORRUPT_MESSAGE", retriable=True)
UnknownTopicOrPartitionError = _code(
    3,
    "UNKNOWN_TOPIC_OR_PARTITION",
    retriable=True,
    invalid_metadata=True,
    doc="The broker does not host this topic or partition (it may not exist).",
)
InvalidFetchSizeError = _code(4, "INVALID_FETCH_SIZE")
LeaderNotAvailableError = _code(5, "LEADER_NOT_AVAILABLE", retriable=True, invalid_metadata=True)
NotLeaderOrFollowerError = _code(6, "NOT_LEADER_OR_FOLLOWER", retriable=True, invalid_metadata=True)
RequestTimedOutError = _code(7, "REQUEST_TIMED_OUT", retriable=True)
BrokerNotAvailableError = _code(8, "BROKER_NOT_AVAILABLE")
ReplicaNotAvailableError = _code(9, "REPLICA_NOT_AVAILABLE", retriable=True, invalid_metadata=True)
MessageTooLargeError = _code(10, "MESSAGE_TOO_LARGE")
StaleControllerEpochError = _code(11, "STALE_CONTROLLER_EPOCH")
OffsetMetadataTooLargeError = _code(12, "OFFSET_METADATA_TOO_LARGE")
NetworkExceptionError = _code(13, "NETWORK_EXCEPTION", retriable=True, invalid_metadata=True)
CoordinatorLoadInProgressError = _code(14, "COORDINATOR_LOAD_IN_PROGRESS", retriable=True)
CoordinatorNotAvailableError = _code(15, "COORDINATOR_NOT_AVAILABLE", retriable=True)
NotCoordinatorError = _code(16, "NOT_COORDINATOR", retriable=True)
InvalidTopicError = _code(17, "INVALID_TOPIC_EXCEPTION")
RecordListTooLargeError = _code(18, "RECORD_LIST_TOO_LARGE")
NotEnoughReplicasError = _code(19, "NOT_ENOUGH_REPLICAS", retriable=True)
NotEnoughReplicasAfterAppendError = _code(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", retriable=True)
InvalidRequiredAcksError = _code(21, "INVALID_REQUIRED_ACKS")
IllegalGenerationError = _code(22, "ILLEGAL_GENERATION")
InconsistentGroupProtocolError = _code(23, "INCONSISTENT_GROUP_PROTOCOL")
InvalidGroupIdError = _code(24, "INVALID_GROUP_ID")
UnknownMemberIdError = _code(25, "UNKNOWN_MEMBER_ID")
InvalidSessionTimeoutError = _code(26, "INVALID_SESSION_TIMEOUT")
RebalanceInProgressError = _code(27, "REBALANCE_IN_PROGRESS")
InvalidCommitOffsetSizeError = _code(28, "INVALID_COMMIT_OFFSET_SIZE")
TopicAuthorizationFailedError = _code(29, "TOPIC_AUTHORIZATION_FAILED")
GroupAuthorizationFailedError = _code(30, "GROUP_AUTHORIZATION_FAILED")
ClusterAuthorizationFailedError = _code(31, "CLUSTER_AUTHORIZATION_FAILED")
InvalidTimestampError = _code(32, "INVALID_TIMESTAMP")
UnsupportedSaslMechanismError = _code(33, "UNSUPPORTED_SASL_MECHANISM", also=AuthenticationError)
IllegalSaslStateError = _code(34, "ILLEGAL_SASL_STATE", also=AuthenticationError)
UnsupportedVersionResponseError = _code(35, "UNSUPPORTED_VERSION")
InvalidRequestError = _code(42, "INVALID_REQUEST")
KafkaStorageError = _code(56, "KAFKA_STORAGE_ERROR", retriable=True, invalid_metadata=True)
SaslAuthenticationFailedError = _code(58, "SASL_AUTHENTICATION_FAILED", also=AuthenticationError)
FetchSessionIdNotFoundError = _code(70, "FETCH_SESSION_ID_NOT_FOUND", retriable=True)
InvalidFetchSessionEpochError = _code(71, "INVALID_FETCH_SESSION_EPOCH", retriable=True)
FencedLeaderEpochError = _code(74, "FENCED_LEADER_EPOCH", retriable=True, invalid_metadata=True)
UnknownLeaderEpochError = _code(75, "UNKNOWN_LEADER_EPOCH", retriable=True, invalid_metadata=True)
OffsetNotAvailableError = _code(78, "OFFSET_NOT_AVAILABLE", retriable=True)
MemberIdRequiredError = _code(79, "MEMBER_ID_REQUIRED")
PreferredLeaderNotAvailableError = _code(80, "PREFERRED_LEADER_NOT_AVAILABLE", retriable=True, invalid_metadata=True)
GroupMaxSizeReachedError = _code(81, "GROUP_MAX_SIZE_REACHED")
FencedInstanceIdError = _code(82, "FENCED_INSTANCE_ID")
UnstableOffsetCommitError = _code(88, "UNSTABLE_OFFSET_COMMIT", retriable=True)
UnknownTopicIdError = _code(100, "UNKNOWN_TOPIC_ID", retriable=True, invalid_metadata=True)
InconsistentTopicIdError = _code(103, "INCONSISTENT_TOPIC_ID", retriable=True, invalid_metadata=True)
FencedMemberEpochError = _code(110, "FENCED_MEMBER_EPOCH")
UnreleasedInstanceIdError = _code(111, "UNRELEASED_INSTANCE_ID")
UnsupportedAssignorError = _code(112, "UNSUPPORTED_ASSIGNOR")
StaleMemberEpochError = _code(113, "STALE_MEMBER_EPOCH")
UnknownServerError = _code(-1, "UNKNOWN_SERVER_ERROR")


_UNNAMED: dict[int, str] = {
    36: "TOPIC_ALREADY_EXISTS",
    37: "INVALID_PARTITIONS",
    38: "INVALID_REPLICATION_FACTOR",
    39: "INVALID_REPLICA_ASSIGNMENT",
    40: "INVALID_CONFIG",
    41: "NOT_CONTROLLER",
    43: "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    44: "POLICY_VIOLATION",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH",
    48: "INVALID_TXN_STATE",
    49: "INVALID_PRODUCER_ID_MAPPING",
    50: "INVALID_TRANSACTION_TIMEOUT",
    51: "CONCURRENT_TRANSACTIONS",
    52: "TRANSACTION_COORDINATOR_FENCED",
    53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    54: "SECURITY_DISABLED",
    55: "OPERATION_NOT_ATTEMPTED",
    57: "LOG_DIR_NOT_FOUND",
    59: "UNKNOWN_PRODUCER_ID",
    60: "REASSIGNMENT_IN_PROGRESS",
    61: "DELEGATION_TOKEN_AUTH_DISABLED",
    62: "DELEGATION_TOKEN_NOT_FOUND",
    63: "DELEGATION_TOKEN_OWNER_MISMATCH",
    64: "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
    65: "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
    66: "DELEGATION_TOKEN_EXPIRED",
    67: "INVALID_PRINCIPAL_TYPE",
    68: "NON_EMPTY_GROUP",
    69: "GROUP_ID_NOT_FOUND",
    72: "LISTENER_NOT_FOUND",
    73: "TOPIC_DELETION_DISABLED",
    76: "UNSUPPORTED_COMPRESSION_TYPE",
    77: "STALE_BROKER_EPOCH",
    83: "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    84: "ELECTION_NOT_NEEDED",
    85: "NO_REASSIGNMENT_IN_PROGRESS",
    86: "GROUP_SUBSCRIBED_TO_TOPIC",
    87: "INVALID_RECORD",
}


def for_code(code: int, message: str = "") -> BrokerResponseError:
    """The typed error for a broker error code (``code`` must be non-zero)."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return UnknownBrokerError(code, message)
    return cls(message)


def error_class(code: int) -> type[BrokerResponseError] | None:
    """The class for a broker error code, or ``None`` when this client has no class for it."""
    return _BY_CODE.get(code)
