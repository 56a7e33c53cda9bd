"""The "consumer" embedded protocol's framing: what JoinGroup metadata and SyncGroup assignments carry as bytes.

Both are an int16 version followed by a ``ConsumerProtocolSubscription`` or ``ConsumerProtocolAssignment`` of that
version (generated: ``messages/consumer_protocol.py``), never flexible.

Decoding follows Kafka's ``ConsumerProtocol``: a version newer than ours is read as our newest (newer versions
only append fields), and bytes after the known fields are ignored. A negative version is corrupt. An empty
assignment (what a broker hands a member the leader left out) reads as an assignment of nothing.
"""

from __future__ import annotations

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
)
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = [
    "ASSIGNMENT_VERSION",
    "SUBSCRIPTION_VERSION",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "TopicPartition",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

SUBSCRIPTION_VERSION = 3  # the newest we know
ASSIGNMENT_VERSION = 3


def _versioned(message: ConsumerProtocolSubscription | ConsumerProtocolAssignment, version: int, newest: int) -> bytes:
    if not 0 <= version <= newest:
        raise ValueError(f"{type(message).__name__} version {version} is outside 0..{newest}")
    w = Writer()
    w.int16(version)
    message.encode(w, version)
    return w.getvalue()


def encode_subscription(subscription: ConsumerProtocolSubscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    """The version prefix and this version's fields; fields newer than ``version`` are dropped."""
    return _versioned(subscription, version, SUBSCRIPTION_VERSION)


def encode_assignment(assignment: ConsumerProtocolAssignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    return _versioned(assignment, version, ASSIGNMENT_VERSION)


def _version(r: Reader, newest: int, what: str) -> int:
    version = r.int16()
    if version < 0:
        raise CorruptResponseError(f"{what} with negative version {version}")
    return min(version, newest)


def decode_subscription(data: bytes | memoryview) -> ConsumerProtocolSubscription:
    """Raises ``CorruptResponseError`` for bytes that are not a subscription."""
    r = Reader(data)
    try:
        return ConsumerProtocolSubscription.decode(r, _version(r, SUBSCRIPTION_VERSION, "subscription"))
    except UnicodeDecodeError as exc:
        raise CorruptResponseError(f"undecodable subscription: {exc}") from exc


def decode_assignment(data: bytes | memoryview) -> ConsumerProtocolAssignment:
    """Raises ``CorruptResponseError`` for bytes that are not an assignment; empty bytes assign nothing."""
    if len(data) == 0:
        return ConsumerProtocolAssignment()
    r = Reader(data)
    try:
        return ConsumerProtocolAssignment.decode(r, _version(r, ASSIGNMENT_VERSION, "assignment"))
    except UnicodeDecodeError as exc:
        raise CorruptResponseError(f"undecodable assignment: {exc}") from exc
