"""One error hierarchy, rooted at ``KafkaError``; ``retriable`` on the class says whether a retry may succeed.

Broker error codes map to classes through ``for_code``; codes we have no class for still get a typed error that
carries the code and its Kafka name.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from asyncconsumer.records import TopicPartition

__all__ = [
    "AuthenticationError",
    "BrokerResponseError",
    "ClientClosedError",
    "CommitFailedError",
    "ConfigError",
    "CorruptRecordError",
    "CorruptResponseError",
    "ErrorCode",
    "FencedLeaderEpochError",
    "IllegalStateError",
    "InvalidOffsetError",
    "InvalidRegularExpressionError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaTimeoutError",
    "LeaderNotAvailableError",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "NotLeaderOrFollowerError",
    "OffsetOutOfRangeError",
    "OffsetStoreError",
    "OffsetStoreFencedError",
    "OffsetStoreUnavailableError",
    "PollIntervalExceededError",
    "RecordBatchTooLargeError",
    "RecordDeserializationError",
    "RequestTimedOutError",
    "ResponseTooLargeError",
    "UnknownTopicOrPartitionError",
    "UnsupportedVersionError",
    "WakeupError",
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


class WakeupError(KafkaError):
    """``wakeup()`` interrupted a blocking call (Java's ``WakeupException``); nothing consumed was lost."""


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


class ResponseTooLargeError(KafkaConnectionError):
    """A broker announced a response frame larger than ``receive_message_max_bytes`` (or of a negative size).

    Raised before anything is allocated for the frame: the connection is closed, every request in flight on it fails
    with this error and is retried on a new connection, as after any connection loss. ``poll`` raises it once per
    such connection, so a limit set too low for what the broker sends does not stall consumption silently.
    """

    def __init__(self, peer: str, size: int, limit: int) -> None:
        what = "a negative size" if size < 0 else f"more than receive_message_max_bytes ({limit})"
        super().__init__(f"{peer} announced a response of {size} bytes, {what}; the connection was closed")
        self.size = size
        self.limit = limit


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


class OffsetStoreError(KafkaError):
    """An offset store (``asyncconsumer.stores``) failed; ``store`` names it (a file, or a DSN without its
    password), ``__cause__`` is the driver's error."""

    def __init__(self, store: str, message: str) -> None:
        super().__init__(f"offset store {store}: {message}")
        self.store = store


class OffsetStoreUnavailableError(OffsetStoreError):
    """The offset store's database could not be reached (a wrong DSN, a server down), after a bounded retry."""


class OffsetStoreFencedError(OffsetStoreError):
    """A transaction's offset write matched no row: another member claimed the partition since this one did (its
    lease epoch moved on), so everything the transaction wrote was rolled back."""

    def __init__(self, store: str, partition: TopicPartition, held_epoch: int, current_epoch: int | None) -> None:
        super().__init__(
            store,
            f"{partition.topic}-{partition.partition} is fenced: this member holds lease epoch {held_epoch}, the"
            f" store has {current_epoch if current_epoch is not None else 'no lease'}; the transaction was rolled"
            " back",
        )
        self.partition = partition
        self.held_epoch = held_epoch
        self.current_epoch = current_epoch


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


class RecordBatchTooLargeError(CorruptRecordError):
    """A compressed record batch would decompress to more than ``receive_message_max_bytes`` (a compression bomb, or
    a batch larger than the consumer is configured to hold); it was not decompressed past the limit.

    As with any corrupt batch the position stays on it and every ``poll`` raises this again: ``seek`` to
    ``next_offset`` to skip the batch, or raise ``receive_message_max_bytes``.
    """

    def __init__(self, topic: str, partition: int, offset: int, next_offset: int, limit: int, detail: str) -> None:
        KafkaError.__init__(
            self,
            f"the record batch of {topic}-{partition} at offset {offset} would decompress to more than "
            f"receive_message_max_bytes ({limit}) allows ({detail}); seek to offset {next_offset} to skip the batch, "
            f"or raise the limit",
        )
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.next_offset = next_offset
        self.limit = limit


class RecordDeserializationError(KafkaError):
    """A key or value deserializer raised; ``seek`` past ``offset`` to skip the record."""

    def __init__(self, topic: str, partition: int, offset: int, part: str, cause: BaseException) -> None:
        super().__init__(f"could not deserialize the {part} of {topic}-{partition}@{offset}: {cause!r}")
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.part = part


# --- broker error codes ------------------------------------------------------------------------------------


class ErrorCode(enum.IntEnum):
    """Kafka's broker error codes by name, as Java's ``Errors`` spells them; compare wire codes with these."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129


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
        self.error_name = ErrorCode(code).name if code in _KNOWN_CODES else f"UNKNOWN_CODE_{code}"
        KafkaError.__init__(self, f"[{self.error_name} ({code})] {message}".rstrip())


_BY_CODE: dict[int, type[BrokerResponseError]] = {}


def _code(
    code: ErrorCode,
    *,
    retriable: bool = False,
    invalid_metadata: bool = False,
    doc: str = "",
    also: type[KafkaError] | None = None,
) -> type[BrokerResponseError]:
    cls = type(
        "".join(part.capitalize() for part in code.name.split("_")) + "Error",
        (BrokerResponseError,) if also is None else (BrokerResponseError, also),
        {
            "code": int(code),
            "kafka_name": code.name,
            "retriable": retriable,
            "invalid_metadata": invalid_metadata,
            "__doc__": doc or f"Broker error {code.name} ({int(code)}).",
            "__module__": __name__,
        },
    )
    _BY_CODE[code] = cls
    return cls


class OffsetOutOfRangeError(BrokerResponseError):
    """The fetch offset is outside the partition's log."""

    code = int(ErrorCode.OFFSET_OUT_OF_RANGE)
    kafka_name = ErrorCode.OFFSET_OUT_OF_RANGE.name


_BY_CODE[OffsetOutOfRangeError.code] = OffsetOutOfRangeError


class LogTruncationError(OffsetOutOfRangeError):
    """The partition's new leader no longer holds records this consumer already fetched (an unclean leader
    election truncated the log, KIP-320) and ``auto_offset_reset`` is ``none``. ``offset`` is the consumer's
    position; ``divergent_offset`` the first offset where the logs differ (None when the leader could not say).
    ``seek`` to resume; the partition is not fetched until then."""

    def __init__(self, topic: str, partition: int, offset: int, divergent_offset: int | None) -> None:
        where = "an unknown offset" if divergent_offset is None else f"offset {divergent_offset}"
        super().__init__(
            f"log truncation detected for {topic}-{partition}: the consumer is at offset {offset}, but the new "
            f"leader's log diverges from what was fetched at {where}; auto_offset_reset is 'none', so seek to resume"
        )
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.divergent_offset = divergent_offset


CorruptMessageError = _code(ErrorCode.CORRUPT_MESSAGE, retriable=True)
UnknownTopicOrPartitionError = _code(
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    retriable=True,
    invalid_metadata=True,
    doc="The broker does not host this topic or partition (it may not exist).",
)
InvalidFetchSizeError = _code(ErrorCode.INVALID_FETCH_SIZE)
LeaderNotAvailableError = _code(ErrorCode.LEADER_NOT_AVAILABLE, retriable=True, invalid_metadata=True)
NotLeaderOrFollowerError = _code(ErrorCode.NOT_LEADER_OR_FOLLOWER, retriable=True, invalid_metadata=True)
RequestTimedOutError = _code(ErrorCode.REQUEST_TIMED_OUT, retriable=True)
BrokerNotAvailableError = _code(ErrorCode.BROKER_NOT_AVAILABLE)
ReplicaNotAvailableError = _code(ErrorCode.REPLICA_NOT_AVAILABLE, retriable=True, invalid_metadata=True)
MessageTooLargeError = _code(ErrorCode.MESSAGE_TOO_LARGE)
StaleControllerEpochError = _code(ErrorCode.STALE_CONTROLLER_EPOCH)
OffsetMetadataTooLargeError = _code(ErrorCode.OFFSET_METADATA_TOO_LARGE)
NetworkExceptionError = _code(ErrorCode.NETWORK_EXCEPTION, retriable=True, invalid_metadata=True)
CoordinatorLoadInProgressError = _code(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, retriable=True)
CoordinatorNotAvailableError = _code(ErrorCode.COORDINATOR_NOT_AVAILABLE, retriable=True)
NotCoordinatorError = _code(ErrorCode.NOT_COORDINATOR, retriable=True)
InvalidTopicError = _code(ErrorCode.INVALID_TOPIC_EXCEPTION)
RecordListTooLargeError = _code(ErrorCode.RECORD_LIST_TOO_LARGE)
NotEnoughReplicasError = _code(ErrorCode.NOT_ENOUGH_REPLICAS, retriable=True)
NotEnoughReplicasAfterAppendError = _code(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, retriable=True)
InvalidRequiredAcksError = _code(ErrorCode.INVALID_REQUIRED_ACKS)
IllegalGenerationError = _code(ErrorCode.ILLEGAL_GENERATION)
InconsistentGroupProtocolError = _code(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
InvalidGroupIdError = _code(ErrorCode.INVALID_GROUP_ID)
UnknownMemberIdError = _code(ErrorCode.UNKNOWN_MEMBER_ID)
InvalidSessionTimeoutError = _code(ErrorCode.INVALID_SESSION_TIMEOUT)
RebalanceInProgressError = _code(ErrorCode.REBALANCE_IN_PROGRESS)
InvalidCommitOffsetSizeError = _code(ErrorCode.INVALID_COMMIT_OFFSET_SIZE)
TopicAuthorizationFailedError = _code(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
GroupAuthorizationFailedError = _code(ErrorCode.GROUP_AUTHORIZATION_FAILED)
ClusterAuthorizationFailedError = _code(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
InvalidTimestampError = _code(ErrorCode.INVALID_TIMESTAMP)
UnsupportedSaslMechanismError = _code(ErrorCode.UNSUPPORTED_SASL_MECHANISM, also=AuthenticationError)
IllegalSaslStateError = _code(ErrorCode.ILLEGAL_SASL_STATE, also=AuthenticationError)
UnsupportedVersionResponseError = _code(ErrorCode.UNSUPPORTED_VERSION)
InvalidRequestError = _code(ErrorCode.INVALID_REQUEST)
InvalidConfigError = _code(
    ErrorCode.INVALID_CONFIG,
    doc="The broker refused a config's name or value; its message names the key and the bound it broke.",
)
KafkaStorageError = _code(ErrorCode.KAFKA_STORAGE_ERROR, retriable=True, invalid_metadata=True)
SaslAuthenticationFailedError = _code(ErrorCode.SASL_AUTHENTICATION_FAILED, also=AuthenticationError)
FetchSessionIdNotFoundError = _code(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, retriable=True)
InvalidFetchSessionEpochError = _code(ErrorCode.INVALID_FETCH_SESSION_EPOCH, retriable=True)
FencedLeaderEpochError = _code(ErrorCode.FENCED_LEADER_EPOCH, retriable=True, invalid_metadata=True)
UnknownLeaderEpochError = _code(ErrorCode.UNKNOWN_LEADER_EPOCH, retriable=True, invalid_metadata=True)
OffsetNotAvailableError = _code(ErrorCode.OFFSET_NOT_AVAILABLE, retriable=True)
MemberIdRequiredError = _code(ErrorCode.MEMBER_ID_REQUIRED)
PreferredLeaderNotAvailableError = _code(
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, retriable=True, invalid_metadata=True
)
GroupMaxSizeReachedError = _code(ErrorCode.GROUP_MAX_SIZE_REACHED)
FencedInstanceIdError = _code(ErrorCode.FENCED_INSTANCE_ID)
UnstableOffsetCommitError = _code(ErrorCode.UNSTABLE_OFFSET_COMMIT, retriable=True)
UnknownTopicIdError = _code(ErrorCode.UNKNOWN_TOPIC_ID, retriable=True, invalid_metadata=True)
InconsistentTopicIdError = _code(ErrorCode.INCONSISTENT_TOPIC_ID, retriable=True, invalid_metadata=True)
FencedMemberEpochError = _code(ErrorCode.FENCED_MEMBER_EPOCH)
UnreleasedInstanceIdError = _code(ErrorCode.UNRELEASED_INSTANCE_ID)
UnsupportedAssignorError = _code(ErrorCode.UNSUPPORTED_ASSIGNOR)
StaleMemberEpochError = _code(ErrorCode.STALE_MEMBER_EPOCH)
TopicAlreadyExistsError = _code(ErrorCode.TOPIC_ALREADY_EXISTS)
NotControllerError = _code(ErrorCode.NOT_CONTROLLER, retriable=True, invalid_metadata=True)
PolicyViolationError = _code(ErrorCode.POLICY_VIOLATION, doc="The broker's create-topic or alter policy refused it.")
InvalidPartitionsError = _code(
    ErrorCode.INVALID_PARTITIONS, doc="A partition count that is not more than the topic has."
)
InvalidReplicationFactorError = _code(
    ErrorCode.INVALID_REPLICATION_FACTOR, doc="A replication factor larger than the brokers there are, or below 1."
)
NonEmptyGroupError = _code(
    ErrorCode.NON_EMPTY_GROUP,
    doc="The group has members: it cannot be deleted, nor its offsets altered or reset, until they leave.",
)
GroupIdNotFoundError = _code(ErrorCode.GROUP_ID_NOT_FOUND, doc="The coordinator knows no group of that id.")
GroupSubscribedToTopicError = _code(
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, doc="A group's offsets of a topic it is subscribed to cannot be deleted."
)
InvalidRecordStateError = _code(
    ErrorCode.INVALID_RECORD_STATE,
    doc="A share consumer acknowledged records it no longer holds (their acquisition lock expired, say).",
)
ShareSessionNotFoundError = _code(ErrorCode.SHARE_SESSION_NOT_FOUND, retriable=True)
InvalidShareSessionEpochError = _code(ErrorCode.INVALID_SHARE_SESSION_EPOCH, retriable=True)
UnknownServerError = _code(ErrorCode.UNKNOWN_SERVER_ERROR)


class InvalidRegularExpressionError(BrokerResponseError, ConfigError):
    """The group coordinator refused ``subscribe(pattern=...)``'s regular expression (consumer group protocol: it
    matches topics with RE2/J, whose syntax lacks some of Python's). A ``ConfigError`` for the key ``pattern``."""

    code = int(ErrorCode.INVALID_REGULAR_EXPRESSION)
    kafka_name = ErrorCode.INVALID_REGULAR_EXPRESSION.name

    def __init__(self, message: str = "") -> None:
        text = f"[{self.kafka_name} ({self.code})]"
        Exception.__init__(self, f"pattern: {text} {message}" if message else f"pattern: {text}")
        self.key = "pattern"


_BY_CODE[InvalidRegularExpressionError.code] = InvalidRegularExpressionError


_KNOWN_CODES = frozenset(int(c) for c in ErrorCode)


def for_code(code: int, message: str = "") -> BrokerResponseError:
    """The typed error for a broker error code (``code`` must be non-zero)."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return UnknownBrokerError(code, message)
    return cls(message)


def error_class(code: int) -> type[BrokerResponseError] | None:
    """The class for a broker error code, or ``None`` when this client has no class for it."""
    return _BY_CODE.get(code)
