"""Fuzzing every decoder of broker data: whatever a broker sends, decoding returns a value or raises a typed error.

For every response type in ``asyncconsumer.protocol`` and every version its request class implements,
``decode_response`` gets random bytes and mutations of valid encoded responses (bytes flipped, set, cut, inserted,
deleted, duplicated; length and count fields set to extreme values), and the payloads the client decodes out of a
response (consumer-protocol subscriptions and assignments, fetched record batches) go through their decoders too.
Only a ``KafkaError`` may come out (``BatchError`` from the record-set functions, which the fetch collector turns
into ``CorruptRecordError``); any other exception, a decode that allocates far more than its input, or one that
does not finish is a decoder bug.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import pkgutil
import signal
import struct
import subprocess
import sys
import textwrap
import tracemalloc
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from aiokafka.record.util import calc_crc32c
from hypothesis import event, given, settings
from hypothesis import strategies as st

import asyncconsumer.protocol.messages
from asyncconsumer._caller.fetch_collector import FetchCollector
from asyncconsumer._state.fetch_buffer import CompletedFetch, FetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import CorruptRecordError, CorruptResponseError, KafkaError
from asyncconsumer.protocol import base
from asyncconsumer.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from asyncconsumer.protocol.messages import (
    consumer_group_describe,
    create_partitions,
    create_topics,
    delete_groups,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_share_group_offsets,
    get_telemetry_subscriptions,
    incremental_alter_configs,
    list_groups,
    offset_delete,
    push_telemetry,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
)
from asyncconsumer.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from asyncconsumer.protocol.messages.consumer_group_heartbeat import Assignment as HeartbeatAssignment
from asyncconsumer.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    TopicPartition as WireTopicPartition,
)
from asyncconsumer.protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from asyncconsumer.protocol.messages.fetch import (
    AbortedTransaction,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    LeaderIdAndEpoch,
    PartitionData,
)
from asyncconsumer.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from asyncconsumer.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from asyncconsumer.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember
from asyncconsumer.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse, MemberResponse
from asyncconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from asyncconsumer.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from asyncconsumer.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from asyncconsumer.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from asyncconsumer.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from asyncconsumer.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from asyncconsumer.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from asyncconsumer.protocol.records import BatchError, RecordBatchView, complete_prefix, iter_batches
from asyncconsumer.protocol.v2decode import DecodeError, fill_records
from asyncconsumer.protocol.wire import ZERO_UUID, Reader
from asyncconsumer.records import ConsumerRecord, TopicPartition
from tests.support.batches import aiokafka_reading, legacy_wrapper_with_inner_length

FUZZ = settings(deadline=None, derandomize=True, database=None)
"""Derandomized and without an example database: every run (and CI) tries the same inputs."""

DECODE_SECONDS = 10.0
"""Far above any decode of these small inputs (under a millisecond), even on a loaded CI machine: a hang."""

PEAK_BYTES = 1 << 20
"""Decoding a frame of at most a few KiB may allocate this much at peak; a trusted 2**31-1 length is 2 GiB."""

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
NO_AUTH_OPS = -(2**31)


# --- which decoders exist -----------------------------------------------------------------------------------


def discover_request_types() -> list[type[base.Request]]:
    """Every request class in ``asyncconsumer.protocol.messages``: a new one is fuzzed (and must get seeds) by
    itself."""
    found: dict[str, type[base.Request]] = {}
    for info in pkgutil.iter_modules(asyncconsumer.protocol.messages.__path__):
        module = importlib.import_module(f"asyncconsumer.protocol.messages.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == module.__name__
                and isinstance(getattr(value, "API_KEY", None), base.ApiKey)
                and hasattr(value, "RESPONSE")
            ):
                found[value.__qualname__] = value
    return sorted(found.values(), key=lambda t: int(t.API_KEY))


REQUEST_TYPES = discover_request_types()
ALL_VERSIONS = [
    pytest.param(t, v, id=f"{t.RESPONSE.__name__}-v{v}")
    for t in REQUEST_TYPES
    for v in range(t.MIN_VERSION, t.MAX_VERSION + 1)
]


# --- valid inputs to mutate: record sets ------------------------------------------------------------------------


def v2_batch(
    base_offset: int, codec: int, *, transactional: bool = False, log_append_time: bool = False, count: int = 3
) -> bytes:
    producer_id = 7 if transactional else -1
    builder = DefaultRecordBatchBuilder(
        2, codec, int(transactional), producer_id, 0 if transactional else -1, 0 if transactional else -1, 1 << 20
    )
    for i in range(count):
        builder.append(i, 1_700_000_000_000 + i, b"k%d" % i if i % 2 else None, b"v%d" % i * 4, [("h\u00e9", b"x")])
    data = bytearray(builder.build())
    data[0:8] = base_offset.to_bytes(8, "big", signed=True)
    if log_append_time:
        data[21:23] = (int.from_bytes(data[21:23], "big") | 0x08).to_bytes(2, "big")
    return fix_batch(bytes(data))


def control_batch(offset: int, commit: bool) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, 1, 7, 0, -1, 1 << 20)
    builder.append(0, 1_700_000_000_000, b"\x00\x00\x00" + bytes([commit]), b"\x00\x00\x00\x00\x00\x00", [])
    data = bytearray(builder.build())
    data[0:8] = offset.to_bytes(8, "big", signed=True)
    data[21:23] = (int.from_bytes(data[21:23], "big") | 0x20).to_bytes(2, "big")
    return fix_batch(bytes(data))


def legacy_message(base_offset: int, magic: int, codec: int, *, log_append_time: bool = False) -> bytes:
    """A magic 0/1 message set: one message, or a compressed wrapper of three (offsets as brokers write them)."""
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i in range(3 if codec else 1):
        builder.append(i, 1_700_000_000_000 + i if magic else None, b"k" if i else None, b"v%d" % i)
    data = bytearray(builder.build())
    last = 2 if codec else 0
    data[0:8] = (base_offset + last).to_bytes(8, "big", signed=True)
    if log_append_time:
        data[17] |= 0x08
    return fix_batch(bytes(data))


def fix_batch(data: bytes) -> bytes:
    """``data`` with the first batch's length covering all of it and its CRC recomputed, where they fit."""
    out = bytearray(data)
    if len(out) >= 12:
        out[8:12] = struct.pack(">i", len(out) - 12)
    if len(out) >= 61 and out[16] >= 2:
        out[17:21] = struct.pack(">I", calc_crc32c(bytes(out[21:])))
    elif len(out) >= 17 and out[16] < 2:
        out[12:16] = struct.pack(">I", zlib.crc32(bytes(out[16:])))
    return bytes(out)


GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
RECORD_SEEDS: list[bytes] = [
    v2_batch(0, 0),
    v2_batch(0, GZIP),
    v2_batch(0, SNAPPY),
    v2_batch(0, LZ4),
    v2_batch(0, ZSTD),
    v2_batch(5, 0, transactional=True, log_append_time=True) + control_batch(8, commit=False),
    control_batch(0, commit=True) + v2_batch(1, SNAPPY, transactional=True),
    legacy_message(0, 0, 0) + legacy_message(1, 0, GZIP),
    legacy_message(0, 0, SNAPPY),
    legacy_message(0, 1, 0) + legacy_message(1, 1, LZ4),
    legacy_message(0, 1, GZIP, log_append_time=True),
    legacy_message(0, 1, SNAPPY) + v2_batch(3, GZIP),
]
FETCH_RECORDS = v2_batch(0, GZIP, count=2) + legacy_message(2, 1, SNAPPY)


# --- valid inputs to mutate: one or more responses per type and version, every field of the version set --------

SUBSCRIPTION = encode_subscription(
    ConsumerProtocolSubscription(
        topics=("t", "t\u00f6"),
        user_data=b"ud",
        owned_partitions=(WireTopicPartition(topic="t", partitions=(0, 1)),),
        generation_id=5,
        rack_id="rack",
    )
)
ASSIGNMENT = encode_assignment(
    ConsumerProtocolAssignment(
        assigned_partitions=(
            WireTopicPartition(topic="t", partitions=(0, 2)),
            WireTopicPartition(topic="u", partitions=()),
        ),
        user_data=b"ud",
    )
)


def since(version: int, first: int, value: Any, default: Any) -> Any:
    return value if version >= first else default


def api_versions_seeds(v: int) -> list[base.Response]:
    keys = (ApiVersion(api_key=1, min_version=4, max_version=12), ApiVersion(api_key=3, min_version=1, max_version=12))
    return [
        ApiVersionsResponse(error_code=35, api_keys=keys, throttle_time_ms=since(v, 1, 7, 0)),
        ApiVersionsResponse(error_code=0, api_keys=()),
    ]


def metadata_seeds(v: int) -> list[base.Response]:
    partitions = (
        MetadataResponsePartition(
            error_code=0,
            partition_index=0,
            leader_id=1,
            leader_epoch=since(v, 7, 5, -1),
            replica_nodes=(1, 2),
            isr_nodes=(1,),
            offline_replicas=since(v, 5, (2,), ()),
        ),
        MetadataResponsePartition(error_code=9, partition_index=1, leader_id=-1),
    )
    topics = (
        MetadataResponseTopic(
            error_code=0,
            name="t\u00f6pic",
            partitions=partitions,
            topic_id=since(v, 10, TOPIC_ID, ZERO_UUID),
            is_internal=v >= 1,
            topic_authorized_operations=since(v, 8, 5, NO_AUTH_OPS),
        ),
        MetadataResponseTopic(error_code=3, name=since(v, 12, None, "x"), partitions=()),
    )
    brokers = (
        MetadataResponseBroker(node_id=1, host="h\u00f6st", port=9092, rack=since(v, 1, "r1", None)),
        MetadataResponseBroker(node_id=2, host="h2", port=9093),
    )
    full = MetadataResponse(
        brokers=brokers,
        topics=topics,
        cluster_id=since(v, 2, "cluster", None),
        controller_id=since(v, 1, 1, -1),
        throttle_time_ms=since(v, 3, 5, 0),
        cluster_authorized_operations=7 if 8 <= v <= 10 else NO_AUTH_OPS,
    )
    return [full, MetadataResponse(brokers=(), topics=())]


def fetch_seeds(v: int) -> list[base.Response]:
    partition = PartitionData(
        partition_index=0,
        error_code=0,
        high_watermark=10,
        last_stable_offset=9,
        log_start_offset=since(v, 5, 0, -1),
        aborted_transactions=(
            AbortedTransaction(producer_id=7, first_offset=0),
            AbortedTransaction(producer_id=8, first_offset=1),
        ),
        preferred_read_replica=since(v, 11, 2, -1),
        records=FETCH_RECORDS,
        current_leader=since(v, 12, LeaderIdAndEpoch(leader_id=1, leader_epoch=3), None),
    )
    topics = (
        FetchableTopicResponse(
            topic="t", partitions=(partition, PartitionData(partition_index=1, error_code=1, high_watermark=-1))
        ),
    )
    return [
        FetchResponse(
            responses=topics, throttle_time_ms=3, error_code=since(v, 7, 1, 0), session_id=since(v, 7, 77, 0)
        ),
        FetchResponse(responses=()),
    ]


def list_offsets_seeds(v: int) -> list[base.Response]:
    partitions = (
        ListOffsetsPartitionResponse(
            partition_index=0, error_code=0, timestamp=123, offset=456, leader_epoch=since(v, 4, 5, -1)
        ),
        ListOffsetsPartitionResponse(partition_index=1, error_code=6),
    )
    return [
        ListOffsetsResponse(
            topics=(ListOffsetsTopicResponse(name="t", partitions=partitions),), throttle_time_ms=since(v, 2, 2, 0)
        )
    ]


def find_coordinator_seeds(v: int) -> list[base.Response]:
    if v >= 4:
        coordinators = (
            Coordinator(key="g", node_id=1, host="h", port=9092, error_message=None),
            Coordinator(key="g2", node_id=-1, host="", port=-1, error_code=15, error_message="not y\u00e9t"),
        )
        return [FindCoordinatorResponse(coordinators=coordinators, throttle_time_ms=1), FindCoordinatorResponse()]
    return [
        FindCoordinatorResponse(
            error_code=0,
            node_id=1,
            host="h\u00f6st",
            port=9092,
            error_message="ok",
            coordinators=(),
            throttle_time_ms=1,
        ),
        FindCoordinatorResponse(error_code=15, node_id=-1, port=-1, error_message=None),
    ]


def offset_commit_seeds(v: int) -> list[base.Response]:
    partitions = (
        OffsetCommitResponsePartition(partition_index=0, error_code=0),
        OffsetCommitResponsePartition(partition_index=1, error_code=22),
    )
    return [
        OffsetCommitResponse(
            topics=(OffsetCommitResponseTopic(name="t", partitions=partitions),), throttle_time_ms=since(v, 3, 4, 0)
        )
    ]


def offset_fetch_seeds(v: int) -> list[base.Response]:
    if v >= 8:
        partitions_v8 = (
            OffsetFetchResponsePartitions(
                partition_index=0, committed_offset=42, committed_leader_epoch=5, metadata="m\u00e9ta", error_code=0
            ),
            OffsetFetchResponsePartitions(partition_index=1, committed_offset=-1, metadata=None),
        )
        groups = (
            OffsetFetchResponseGroup(
                group_id="g", topics=(OffsetFetchResponseTopics(name="t", partitions=partitions_v8),)
            ),
            OffsetFetchResponseGroup(group_id="g2", topics=(), error_code=16),
        )
        return [OffsetFetchResponse(throttle_time_ms=3, groups=groups)]
    partitions = (
        OffsetFetchResponsePartition(
            partition_index=0,
            committed_offset=42,
            committed_leader_epoch=since(v, 5, 5, -1),
            metadata="m\u00e9ta",
            error_code=0,
        ),
        OffsetFetchResponsePartition(partition_index=1, committed_offset=-1, metadata=None),
    )
    topic = OffsetFetchResponseTopic(name="t", partitions=partitions)
    return [OffsetFetchResponse(topics=(topic,), error_code=since(v, 2, 16, 0), throttle_time_ms=since(v, 3, 3, 0))]


def join_group_seeds(v: int) -> list[base.Response]:
    members = (
        JoinGroupResponseMember(member_id="m1", group_instance_id=since(v, 5, "i1", None), metadata=SUBSCRIPTION),
        JoinGroupResponseMember(
            member_id="m2",
            group_instance_id=None,
            metadata=encode_subscription(ConsumerProtocolSubscription(topics=("t",)), 0),
        ),
    )
    full = JoinGroupResponse(
        error_code=0,
        generation_id=5,
        protocol_type=since(v, 7, "consumer", None),
        protocol_name="range",
        leader="m1",
        member_id="m1",
        members=members,
        throttle_time_ms=1,
        skip_assignment=v >= 9,
    )
    return [
        full,
        JoinGroupResponse(
            error_code=79,
            generation_id=-1,
            protocol_type=None,
            protocol_name=since(v, 7, None, ""),
            leader="",
            member_id="",
            members=(),
        ),
    ]


def sync_group_seeds(v: int) -> list[base.Response]:
    full = SyncGroupResponse(
        error_code=0,
        assignment=ASSIGNMENT,
        throttle_time_ms=2,
        protocol_type=since(v, 5, "consumer", None),
        protocol_name=since(v, 5, "range", None),
    )
    return [full, SyncGroupResponse(error_code=27, assignment=b"")]


def heartbeat_seeds(v: int) -> list[base.Response]:
    return [HeartbeatResponse(error_code=27, throttle_time_ms=3)]


def leave_group_seeds(v: int) -> list[base.Response]:
    members = (
        MemberResponse(member_id="m", group_instance_id="i", error_code=0),
        MemberResponse(member_id="m2", group_instance_id=None, error_code=25),
    )
    return [LeaveGroupResponse(error_code=0, members=since(v, 3, members, ()), throttle_time_ms=1)]


def describe_groups_seeds(v: int) -> list[base.Response]:
    member = DescribedGroupMember(
        member_id="m",
        client_id="cid",
        client_host="/10.0.0.1",
        member_metadata=SUBSCRIPTION,
        member_assignment=ASSIGNMENT,
        group_instance_id=since(v, 4, "i", None),
    )
    groups = (
        DescribedGroup(
            error_code=0,
            group_id="g",
            group_state="Stable",
            protocol_type="consumer",
            protocol_data="range",
            members=(member,),
            authorized_operations=since(v, 3, 8, NO_AUTH_OPS),
        ),
        DescribedGroup(
            error_code=16, group_id="g2", group_state="Dead", protocol_type="", protocol_data="", members=()
        ),
    )
    return [DescribeGroupsResponse(groups=groups, throttle_time_ms=since(v, 1, 2, 0))]


def consumer_group_heartbeat_seeds(v: int) -> list[base.Response]:
    assignment = HeartbeatAssignment(topic_partitions=(TopicPartitions(topic_id=TOPIC_ID, partitions=(0, 1)),))
    return [
        ConsumerGroupHeartbeatResponse(
            error_code=0,
            member_id="m",
            member_epoch=3,
            heartbeat_interval_ms=5000,
            error_message=None,
            assignment=assignment,
            throttle_time_ms=1,
        ),
        ConsumerGroupHeartbeatResponse(
            error_code=25, member_id=None, member_epoch=-1, heartbeat_interval_ms=0, error_message="f\u00e9nced"
        ),
    ]


def offset_for_leader_epoch_seeds(v: int) -> list[base.Response]:
    partitions = (
        EpochEndOffset(error_code=0, partition=0, leader_epoch=4, end_offset=1234),
        EpochEndOffset(error_code=74, partition=1),
        EpochEndOffset(error_code=0, partition=2, leader_epoch=-1, end_offset=-1),
    )
    return [
        OffsetForLeaderEpochResponse(
            topics=(OffsetForLeaderTopicResult(topic="t\u00e9", partitions=partitions),), throttle_time_ms=7
        )
    ]


def sasl_handshake_seeds(v: int) -> list[base.Response]:
    return [
        SaslHandshakeResponse(error_code=0, mechanisms=("PLAIN", "SCRAM-SHA-256")),
        SaslHandshakeResponse(error_code=33, mechanisms=()),
    ]


def sasl_authenticate_seeds(v: int) -> list[base.Response]:
    return [
        SaslAuthenticateResponse(
            error_code=0,
            error_message=None,
            auth_bytes=b"r=nonce,s=salt,i=4096",
            session_lifetime_ms=since(v, 1, 3_600_000, 0),
        ),
        SaslAuthenticateResponse(error_code=58, error_message="bad p\u00e4ssword", auth_bytes=b""),
    ]


# The APIs generated for the issues to come (share groups, client telemetry, KIP-848 group descriptions).


def consumer_group_describe_seeds(v: int) -> list[base.Response]:
    assignment = consumer_group_describe.Assignment(
        topic_partitions=(
            consumer_group_describe.TopicPartitions(topic_id=TOPIC_ID, topic_name="t", partitions=(0, 1)),
        )
    )
    member = consumer_group_describe.Member(
        member_id="m",
        instance_id="i",
        rack_id="r",
        member_epoch=3,
        client_id="c",
        client_host="/h",
        subscribed_topic_names=("t",),
        subscribed_topic_regex="t.*",
        assignment=assignment,
        target_assignment=assignment,
        member_type=since(v, 1, 1, -1),
    )
    group = consumer_group_describe.DescribedGroup(
        error_code=0,
        error_message="fine",
        group_id="g",
        group_state="Stable",
        group_epoch=4,
        assignment_epoch=4,
        assignor_name="uniform",
        members=(member,),
        authorized_operations=8,
    )
    response = consumer_group_describe.ConsumerGroupDescribeResponse
    return [response(throttle_time_ms=1, groups=(group,)), response()]


def get_telemetry_subscriptions_seeds(v: int) -> list[base.Response]:
    return [
        get_telemetry_subscriptions.GetTelemetrySubscriptionsResponse(
            throttle_time_ms=1,
            error_code=0,
            client_instance_id=TOPIC_ID,
            subscription_id=7,
            accepted_compression_types=(0, 1, 4),
            push_interval_ms=30_000,
            telemetry_max_bytes=1 << 20,
            delta_temporality=True,
            requested_metrics=("org.apache.kafka.consumer.", "m\u00e9tric"),
        )
    ]


def push_telemetry_seeds(v: int) -> list[base.Response]:
    return [push_telemetry.PushTelemetryResponse(throttle_time_ms=1, error_code=35)]


def share_group_heartbeat_seeds(v: int) -> list[base.Response]:
    assignment = share_group_heartbeat.Assignment(
        topic_partitions=(share_group_heartbeat.TopicPartitions(topic_id=TOPIC_ID, partitions=(0, 1)),)
    )
    response = share_group_heartbeat.ShareGroupHeartbeatResponse
    return [
        response(
            throttle_time_ms=1,
            error_code=0,
            member_id="m",
            member_epoch=2,
            heartbeat_interval_ms=5000,
            assignment=assignment,
        ),
        response(error_code=25, error_message="f\u00e9nced"),
    ]


def share_group_describe_seeds(v: int) -> list[base.Response]:
    assignment = share_group_describe.Assignment(
        topic_partitions=(share_group_describe.TopicPartitions(topic_id=TOPIC_ID, topic_name="t", partitions=(0,)),)
    )
    member = share_group_describe.Member(
        member_id="m",
        rack_id="r",
        member_epoch=3,
        client_id="c",
        client_host="/h",
        subscribed_topic_names=("t",),
        assignment=assignment,
    )
    group = share_group_describe.DescribedGroup(
        error_code=0,
        error_message="fine",
        group_id="g",
        group_state="Stable",
        group_epoch=4,
        assignment_epoch=4,
        assignor_name="simple",
        members=(member,),
        authorized_operations=8,
    )
    return [share_group_describe.ShareGroupDescribeResponse(throttle_time_ms=1, groups=(group,))]


def share_fetch_seeds(v: int) -> list[base.Response]:
    partition = share_fetch.PartitionData(
        partition_index=0,
        error_code=0,
        error_message="m",
        acknowledge_error_code=0,
        acknowledge_error_message="n",
        current_leader=share_fetch.LeaderIdAndEpoch(leader_id=1, leader_epoch=2),
        records=memoryview(FETCH_RECORDS),
        acquired_records=(share_fetch.AcquiredRecords(first_offset=0, last_offset=2, delivery_count=1),),
    )
    topic = share_fetch.ShareFetchableTopicResponse(topic_id=TOPIC_ID, partitions=(partition,))
    endpoint = share_fetch.NodeEndpoint(node_id=1, host="h", port=9092, rack="r")
    response = share_fetch.ShareFetchResponse
    return [
        response(
            throttle_time_ms=1,
            error_code=0,
            error_message="ok",
            acquisition_lock_timeout_ms=30_000,
            responses=(topic,),
            node_endpoints=(endpoint,),
        ),
        response(error_code=6),
    ]


def share_acknowledge_seeds(v: int) -> list[base.Response]:
    partition = share_acknowledge.PartitionData(
        partition_index=0,
        error_code=0,
        error_message="m",
        current_leader=share_acknowledge.LeaderIdAndEpoch(leader_id=1, leader_epoch=2),
    )
    topic = share_acknowledge.ShareAcknowledgeTopicResponse(topic_id=TOPIC_ID, partitions=(partition,))
    endpoint = share_acknowledge.NodeEndpoint(node_id=1, host="h", port=9092, rack=None)
    return [
        share_acknowledge.ShareAcknowledgeResponse(
            throttle_time_ms=1,
            error_code=0,
            error_message="ok",
            acquisition_lock_timeout_ms=since(v, 2, 30_000, 0),
            responses=(topic,),
            node_endpoints=(endpoint,),
        )
    ]


def describe_share_group_offsets_seeds(v: int) -> list[base.Response]:
    m = describe_share_group_offsets
    partition = m.DescribeShareGroupOffsetsResponsePartition(
        partition_index=0, start_offset=7, leader_epoch=1, lag=since(v, 1, 3, -1), error_code=0, error_message="ok"
    )
    topic = m.DescribeShareGroupOffsetsResponseTopic(topic_name="t", topic_id=TOPIC_ID, partitions=(partition,))
    group = m.DescribeShareGroupOffsetsResponseGroup(group_id="g", topics=(topic,), error_code=0, error_message="m")
    return [
        m.DescribeShareGroupOffsetsResponse(throttle_time_ms=1, groups=(group,)),
        m.DescribeShareGroupOffsetsResponse(groups=(m.DescribeShareGroupOffsetsResponseGroup(error_code=69),)),
    ]


def incremental_alter_configs_seeds(v: int) -> list[base.Response]:
    m = incremental_alter_configs
    ok = m.AlterConfigsResourceResponse(error_code=0, error_message=None, resource_type=32, resource_name="g")
    bad = m.AlterConfigsResourceResponse(error_code=40, error_message="too small", resource_type=32, resource_name="h")
    return [
        m.IncrementalAlterConfigsResponse(throttle_time_ms=1, responses=(ok, bad)),
        m.IncrementalAlterConfigsResponse(),
    ]


def list_groups_seeds(v: int) -> list[base.Response]:
    m = list_groups
    group = m.ListedGroup(
        group_id="g",
        protocol_type="consumer",
        group_state=since(v, 4, "Stable", ""),
        group_type=since(v, 5, "classic", ""),
    )
    groups = (group, m.ListedGroup(group_id="h"))
    return [m.ListGroupsResponse(throttle_time_ms=since(v, 1, 1, 0), error_code=0, groups=groups)]


def delete_groups_seeds(v: int) -> list[base.Response]:
    m = delete_groups
    results = (m.DeletableGroupResult(group_id="g"), m.DeletableGroupResult(group_id="h", error_code=68))
    return [m.DeleteGroupsResponse(throttle_time_ms=1, results=results)]


def offset_delete_seeds(v: int) -> list[base.Response]:
    m = offset_delete
    partitions = (m.OffsetDeleteResponsePartition(partition_index=0), m.OffsetDeleteResponsePartition(1, 86))
    topic = m.OffsetDeleteResponseTopic(name="t", partitions=partitions)
    return [m.OffsetDeleteResponse(error_code=0, throttle_time_ms=1, topics=(topic,)), m.OffsetDeleteResponse(69)]


def create_topics_seeds(v: int) -> list[base.Response]:
    m = create_topics
    config = m.CreatableTopicConfigs(name="retention.ms", value="1", read_only=False, config_source=5)
    ok = m.CreatableTopicResult(
        name="t",
        topic_id=since(v, 7, TOPIC_ID, uuid.UUID(int=0)),
        num_partitions=since(v, 5, 3, -1),
        replication_factor=since(v, 5, 1, -1),
        configs=since(v, 5, (config,), None),
    )
    bad = m.CreatableTopicResult(name="u", error_code=36, error_message="exists")
    return [m.CreateTopicsResponse(throttle_time_ms=1, topics=(ok, bad))]


def delete_topics_seeds(v: int) -> list[base.Response]:
    m = delete_topics
    failed = m.DeletableTopicResult(name="u", error_code=3, error_message=since(v, 5, "no", None))
    return [m.DeleteTopicsResponse(throttle_time_ms=1, responses=(m.DeletableTopicResult(name="t"), failed))]


def create_partitions_seeds(v: int) -> list[base.Response]:
    m = create_partitions
    results = (m.CreatePartitionsTopicResult(name="t"), m.CreatePartitionsTopicResult("u", 37, "too few"))
    return [m.CreatePartitionsResponse(throttle_time_ms=1, results=results)]


def describe_cluster_seeds(v: int) -> list[base.Response]:
    m = describe_cluster
    broker = m.DescribeClusterBroker(broker_id=1, host="h", port=9092, rack="r")
    return [m.DescribeClusterResponse(throttle_time_ms=1, cluster_id="c", controller_id=1, brokers=(broker,))]


def describe_configs_seeds(v: int) -> list[base.Response]:
    m = describe_configs
    entry = m.DescribeConfigsResourceResult(
        name="retention.ms", value="1", synonyms=(m.DescribeConfigsSynonym(name="log.retention.ms", value="2"),)
    )
    result = m.DescribeConfigsResult(resource_type=2, resource_name="t", configs=(entry,))
    return [m.DescribeConfigsResponse(throttle_time_ms=1, results=(result,))]


SEEDS: dict[type[base.Request], Callable[[int], list[base.Response]]] = {
    ApiVersionsRequest: api_versions_seeds,
    MetadataRequest: metadata_seeds,
    FetchRequest: fetch_seeds,
    ListOffsetsRequest: list_offsets_seeds,
    OffsetForLeaderEpochRequest: offset_for_leader_epoch_seeds,
    FindCoordinatorRequest: find_coordinator_seeds,
    OffsetCommitRequest: offset_commit_seeds,
    OffsetFetchRequest: offset_fetch_seeds,
    JoinGroupRequest: join_group_seeds,
    SyncGroupRequest: sync_group_seeds,
    HeartbeatRequest: heartbeat_seeds,
    LeaveGroupRequest: leave_group_seeds,
    DescribeGroupsRequest: describe_groups_seeds,
    ConsumerGroupHeartbeatRequest: consumer_group_heartbeat_seeds,
    SaslHandshakeRequest: sasl_handshake_seeds,
    SaslAuthenticateRequest: sasl_authenticate_seeds,
    consumer_group_describe.ConsumerGroupDescribeRequest: consumer_group_describe_seeds,
    get_telemetry_subscriptions.GetTelemetrySubscriptionsRequest: get_telemetry_subscriptions_seeds,
    push_telemetry.PushTelemetryRequest: push_telemetry_seeds,
    share_group_heartbeat.ShareGroupHeartbeatRequest: share_group_heartbeat_seeds,
    share_group_describe.ShareGroupDescribeRequest: share_group_describe_seeds,
    share_fetch.ShareFetchRequest: share_fetch_seeds,
    share_acknowledge.ShareAcknowledgeRequest: share_acknowledge_seeds,
    describe_share_group_offsets.DescribeShareGroupOffsetsRequest: describe_share_group_offsets_seeds,
    incremental_alter_configs.IncrementalAlterConfigsRequest: incremental_alter_configs_seeds,
    list_groups.ListGroupsRequest: list_groups_seeds,
    delete_groups.DeleteGroupsRequest: delete_groups_seeds,
    offset_delete.OffsetDeleteRequest: offset_delete_seeds,
    create_topics.CreateTopicsRequest: create_topics_seeds,
    delete_topics.DeleteTopicsRequest: delete_topics_seeds,
    create_partitions.CreatePartitionsRequest: create_partitions_seeds,
    describe_cluster.DescribeClusterRequest: describe_cluster_seeds,
    describe_configs.DescribeConfigsRequest: describe_configs_seeds,
}


@functools.cache
def seed_frames(request_type: type[base.Request], version: int) -> tuple[bytes, ...]:
    """The seeds encoded as response frames without their size prefix, as ``decode_response`` receives them."""
    return tuple(
        base.encode_response(response, request_type, version, 42)[4:] for response in SEEDS[request_type](version)
    )


# --- where the length and count fields of a frame are -------------------------------------------------------


class FieldTracer(Reader):
    """A ``Reader`` that notes where each int8/int16/int32/varint field it reads starts, how wide it is, and
    whether it is the length of a string, bytes or array."""

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        super().__init__(buf, pos)
        self.widths: dict[int, tuple[int, bool]] = {}  # position: (width, is a varint)
        self.lengths: set[int] = set()

    def int8(self) -> int:
        self.widths[self.pos] = (1, False)
        return super().int8()

    def int16(self) -> int:
        self.widths[self.pos] = (2, False)
        return super().int16()

    def int32(self) -> int:
        self.widths[self.pos] = (4, False)
        return super().int32()

    def uvarint(self) -> int:
        start = self.pos
        value = super().uvarint()
        self.widths[start] = (self.pos - start, True)
        return value

    def _length(self, flexible: bool, short: bool) -> int:
        self.lengths.add(self.pos)
        return super()._length(flexible, short)

    def array_len(self, flexible: bool) -> int:
        self.lengths.add(self.pos)
        return super().array_len(flexible)

    def unpack(self, fixed: struct.Struct) -> tuple[Any, ...]:
        """Fixed-width fields read in one go (the generated decoders merge them) are fields all the same."""
        at = self.pos
        for code in fixed.format.lstrip(">"):
            width = struct.calcsize(f">{code}")
            if width in (1, 2, 4):
                self.widths[at] = (width, False)
            at += width
        return super().unpack(fixed)


class Field(NamedTuple):
    """An integer field of a frame: where it starts, its width in bytes, and what the tracer learnt of it."""

    at: int
    width: int
    varint: bool
    length: bool


@functools.cache
def frame_fields(request_type: type[base.Request], version: int, seed: int) -> tuple[Field, ...]:
    """The integer and varint fields of a seed frame, found by decoding it with a ``FieldTracer``."""
    frame = seed_frames(request_type, version)[seed]
    r = FieldTracer(frame, 4)
    if base.response_header_is_flexible(request_type, version):
        r.skip_tags()
    request_type.RESPONSE.decode(r, version)
    return tuple(Field(at, width, varint, at in r.lengths) for at, (width, varint) in sorted(r.widths.items()))


FIXED_EXTREMES: dict[int, tuple[bytes, ...]] = {
    1: tuple(struct.pack(">b", v) for v in (-128, -1, 0, 1, 127)),
    2: tuple(struct.pack(">h", v) for v in (-(2**15), -2, -1, 0, 2**15 - 1)),
    4: tuple(struct.pack(">i", v) for v in (-(2**31), -2, -1, 0, 2**16, 2**31 - 1)),
}
VARINT_EXTREMES = (
    b"\x00",  # null / zero
    b"\x01",  # empty
    b"\xff\xff\xff\xff\x07",  # 2**31 - 1
    b"\xff\xff\xff\xff\x0f",  # 2**32 - 1
    b"\xff\xff\xff\xff\x7f",  # 2**35 - 1: the largest five-byte varint
    b"\xff\xff\xff\xff\xff\x01",  # six bytes: longer than any valid unsigned varint32
    b"\x80",  # a continuation bit swallowing the next byte
)
HUGE = {2: struct.pack(">h", 2**15 - 1), 4: struct.pack(">i", 2**31 - 1)}
HUGE_VARINT = b"\xff\xff\xff\xff\x07"  # 2**31 - 1


def extremes(field: Field) -> tuple[bytes, ...]:
    return VARINT_EXTREMES if field.varint else FIXED_EXTREMES[field.width]


def with_field(frame: bytes, field: Field, value: bytes) -> bytes:
    return frame[: field.at] + value + frame[field.at + field.width :]


# --- guards ---------------------------------------------------------------------------------------------------


class DecodeHung(BaseException):
    """Raised into a decode that ran for ``DECODE_SECONDS``; a BaseException so no decoder can swallow it."""


@contextlib.contextmanager
def time_limit(seconds: float = DECODE_SECONDS) -> Iterator[None]:
    """Fails a decode stuck in a Python loop (one stuck in C cannot be interrupted: see the subprocess test)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise DecodeHung(f"decode still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def typed(call: Callable[[], object], allowed: tuple[type[Exception], ...] = (KafkaError,)) -> str:
    """``"ok"``, or ``"error"`` when ``call`` raised an ``allowed`` exception with a message; any other exception
    fails the test (the original shows in the traceback)."""
    try:
        call()
    except allowed as exc:
        assert str(exc), f"{type(exc).__name__} without a message"
        return "error"
    except Exception as exc:
        names = ", ".join(t.__name__ for t in allowed)
        pytest.fail(f"{type(exc).__name__} escaped a decoder (only {names} may): {exc!r}")
    return "ok"


def typed_in_time(call: Callable[[], object], allowed: tuple[type[Exception], ...] = (KafkaError,)) -> str:
    """``typed`` under ``time_limit``."""
    with time_limit():
        return typed(call, allowed)


# --- the decoders, each with the payloads the client decodes from its result ----------------------------------


def our_reading(batch: RecordBatchView, check_crc: bool) -> list[tuple[object, ...]]:
    """(offset, timestamp, timestamp type, key, value, headers) of each record as the fetch collector reads it:
    ``legacy_records`` for magic 0/1, ``plain`` and the v2 decoder for v2; raises only ``BatchError``."""
    if batch.magic < 2:
        legacy = batch.legacy_records(check_crc)
        return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers) for r in legacy]
    plain = batch.plain(check_crc)
    records: list[ConsumerRecord] = []
    try:
        fill_records(plain, -1, 0, -(1 << 63), 1 << 30, records, ConsumerRecord, "t", 0, batch.leader_epoch)
    except DecodeError as exc:
        raise BatchError(batch.base_offset, exc.reason) from exc
    return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers) for r in records]


def decode_records(records: memoryview | bytes) -> int:
    """The record path of a fetched partition; raises only ``BatchError``, as ``FetchCollector`` expects, and
    returns how many batches our reading found corrupt. A v2 batch we read is read again by aiokafka
    (``aiokafka_reading``), which must find the same records.

    ``complete_prefix`` runs on the background thread, which expects it never to raise; what it returns must
    describe a prefix of the data.
    """
    corrupt = 0
    view = memoryview(records)
    length, next_offset = complete_prefix(view)
    assert 0 <= length <= len(view)
    assert (next_offset is None) == (length == 0)
    for batch in iter_batches(view[:length]):
        if batch.is_control:
            control = batch.control_type()
            assert control is None or isinstance(control, int)
        for check_crc in (True, False):
            try:
                decoded = our_reading(batch, check_crc)
            except BatchError as exc:
                assert exc.reason
                corrupt += 1
                continue
            for offset, timestamp, _, key, value, headers in decoded:
                assert isinstance(offset, int)
                assert key is None or isinstance(key, bytes)
                assert value is None or isinstance(value, bytes)
                assert timestamp is None or isinstance(timestamp, int)
                assert all(isinstance(name, str) for name, _ in headers)  # type: ignore[attr-defined]
            if batch.magic >= 2 and check_crc:
                try:
                    theirs = aiokafka_reading(batch.plain(False))
                except Exception as exc:  # aiokafka's reader raises many types
                    pytest.fail(f"our decoder reads a batch aiokafka's refuses ({exc!r}): {bytes(batch.buffer)!r}")
                assert decoded == theirs, "our decoder and aiokafka's read the batch differently"
    return corrupt


def decode_records_typed(records: memoryview | bytes) -> None:
    """``decode_records`` reporting damage as the collector does, with ``CorruptRecordError``."""
    try:
        corrupt = decode_records(records)
    except BatchError as exc:
        raise CorruptRecordError("t", 0, exc.offset, exc.reason) from exc
    if corrupt:
        raise CorruptRecordError("t", 0, 0, f"{corrupt} batch decodes failed")


def decode_everything(frame: bytes, request_type: type[base.Request], version: int) -> list[str]:
    """``decode_response``, then the payloads the client goes on to decode from what it returns; the outcomes
    (``typed``) of those."""
    response: Any = base.decode_response(frame, request_type, version)
    nested: list[Callable[[], object]] = []
    if isinstance(response, FetchResponse | share_fetch.ShareFetchResponse):
        for topic in response.responses:
            for partition in topic.partitions:
                if partition.records is not None:
                    nested.append(functools.partial(decode_records_typed, partition.records))
    elif isinstance(response, JoinGroupResponse):
        nested += [functools.partial(decode_subscription, m.metadata) for m in response.members]
    elif isinstance(response, SyncGroupResponse):
        nested.append(functools.partial(decode_assignment, response.assignment))
    elif isinstance(response, DescribeGroupsResponse):
        for group in response.groups:
            for m in group.members:
                nested += [
                    functools.partial(decode_subscription, m.member_metadata),
                    functools.partial(decode_assignment, m.member_assignment),
                ]
    return [typed(call) for call in nested]


# --- mutations ---------------------------------------------------------------------------------------------

OPS = ("flip", "set", "cut", "insert", "delete", "duplicate")


def mutate(data: st.DataObject, buf: bytes, label: str) -> bytes:
    """``buf`` after one byte-level mutation: a bit flip, an edge byte, a cut, an insertion of random bytes, a
    deletion, or a copied slice inserted elsewhere."""
    out = bytearray(buf)
    op = data.draw(st.sampled_from(OPS), label=f"{label}: op") if out else "insert"
    if op == "insert":
        at = data.draw(st.integers(0, len(out)), label=f"{label}: at")
        out[at:at] = data.draw(st.binary(min_size=1, max_size=16), label=f"{label}: bytes")
        return bytes(out)
    at = data.draw(st.integers(0, len(out) - 1), label=f"{label}: at")
    if op == "flip":
        out[at] ^= data.draw(st.integers(1, 255), label=f"{label}: mask")
    elif op == "set":
        out[at] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]), label=f"{label}: byte")
    elif op == "cut":
        del out[at:]
    elif op == "delete":
        del out[at : at + data.draw(st.integers(1, 16), label=f"{label}: count")]
    else:
        end = data.draw(st.integers(at, min(len(out), at + 32)), label=f"{label}: end")
        to = data.draw(st.integers(0, len(out)), label=f"{label}: to")
        out[to:to] = out[at:end]
    return bytes(out)


# --- 1. the inputs are what they claim to be ----------------------------------------------------------------------


def test_every_request_type_has_seeds() -> None:
    """A decoder without valid responses to mutate would get random bytes only: a new one needs SEEDS."""
    assert len(REQUEST_TYPES) >= 15
    assert [t.__name__ for t in REQUEST_TYPES if t not in SEEDS] == []


@pytest.mark.parametrize(("request_type", "version"), ALL_VERSIONS)
def test_seeds_are_valid_responses(request_type: type[base.Request], version: int) -> None:
    """Mutations start from valid bytes: every seed decodes back to itself, nested payloads included, and the
    tracer finds the fields to set to extremes."""
    for response, frame in zip(SEEDS[request_type](version), seed_frames(request_type, version), strict=True):
        assert base.decode_response(frame, request_type, version) == response
        assert "error" not in decode_everything(frame, request_type, version)
    assert frame_fields(request_type, version, 0)


def test_record_seeds_are_valid_and_decode_like_aiokafka() -> None:
    """The record seeds pass their CRC checks and decode exactly as aiokafka's own readers read them."""
    legacy = v2 = 0
    for data in [*RECORD_SEEDS, FETCH_RECORDS]:
        view = memoryview(data)
        assert complete_prefix(view)[0] == len(data)
        for batch in iter_batches(view):
            ours = our_reading(batch, check_crc=True)
            assert ours
            if batch.magic < 2:
                legacy += 1
                theirs = LegacyRecordBatch(bytes(batch.buffer), batch.magic)
                assert theirs.validate_crc()
                expected = [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, tuple(r.headers)) for r in theirs]
                assert ours == expected
            else:
                v2 += 1
                assert ours == aiokafka_reading(batch.plain(check_crc=True))
                if batch.is_control:
                    assert batch.control_type() in (0, 1)
    assert (legacy, v2) == (8, 11)


# --- 2. random bytes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("request_type", "version"), ALL_VERSIONS)
@settings(FUZZ, max_examples=25)
@given(garbage=st.binary(max_size=96))
def test_random_bytes(request_type: type[base.Request], version: int, garbage: bytes) -> None:
    """Random frames, and a valid header followed by random bytes (so that decoding gets past the header)."""
    flexible = base.response_header_is_flexible(request_type, version)
    header = seed_frames(request_type, version)[0][: 5 if flexible else 4]
    for frame in (garbage, header + garbage):
        typed_in_time(functools.partial(decode_everything, frame, request_type, version))
        typed(functools.partial(base.peek_correlation_id, frame))


@settings(FUZZ, max_examples=300)
@given(garbage=st.binary(max_size=96))
def test_random_bytes_as_consumer_protocol_and_records(garbage: bytes) -> None:
    typed_in_time(functools.partial(decode_subscription, garbage))
    typed_in_time(functools.partial(decode_assignment, garbage))
    typed_in_time(functools.partial(decode_records_typed, garbage))


# --- 3. mutated valid responses --------------------------------------------------------------------------------


@pytest.mark.parametrize(("request_type", "version"), ALL_VERSIONS)
@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_mutated_responses(request_type: type[base.Request], version: int, data: st.DataObject) -> None:
    """A valid frame with, maybe, a field set to an extreme value, then up to three byte-level mutations."""
    frames = seed_frames(request_type, version)
    seed = data.draw(st.integers(0, len(frames) - 1), label="seed")
    frame = frames[seed]
    if data.draw(st.booleans(), label="set a field"):
        field = data.draw(st.sampled_from(frame_fields(request_type, version, seed)), label="field")
        frame = with_field(frame, field, data.draw(st.sampled_from(extremes(field)), label="value"))
    for i in range(data.draw(st.integers(0 if frame != frames[seed] else 1, 3), label="mutations")):
        frame = mutate(data, frame, f"mutation {i}")
    typed_in_time(functools.partial(decode_everything, frame, request_type, version))


@pytest.mark.parametrize(("request_type", "version"), ALL_VERSIONS)
def test_every_field_at_every_extreme(request_type: type[base.Request], version: int) -> None:
    """Each integer and varint field of each seed set to each extreme value, one at a time: the decode ends in a
    value or a ``KafkaError``, never allocates more than ``PEAK_BYTES`` at its peak, and a string, bytes or
    array length larger than the frame is always ``CorruptResponseError`` (none is trusted)."""
    # ApiVersions v1+ retries a response it cannot read as a v0 body (what brokers send for UNSUPPORTED_VERSION),
    # which may well read: a huge length there can end in a value.
    huge_is_corrupt = request_type is not ApiVersionsRequest or version == 0
    tracemalloc.start()
    try:
        for seed, frame in enumerate(seed_frames(request_type, version)):
            for field in frame_fields(request_type, version, seed):
                for value in extremes(field):
                    mutated = with_field(frame, field, value)
                    tracemalloc.reset_peak()
                    typed_in_time(functools.partial(decode_everything, mutated, request_type, version))
                    peak = tracemalloc.get_traced_memory()[1]
                    assert peak < PEAK_BYTES, f"{peak} bytes at peak with {field} = {value.hex()}"
                if field.length and huge_is_corrupt:
                    huge = with_field(frame, field, HUGE_VARINT if field.varint else HUGE[field.width])
                    with pytest.raises(CorruptResponseError):
                        base.decode_response(huge, request_type, version)
    finally:
        tracemalloc.stop()


SUBSCRIPTIONS = [
    encode_subscription(
        ConsumerProtocolSubscription(
            topics=("t", "t\u00f6"),
            user_data=b"ud",
            owned_partitions=(WireTopicPartition(topic="t", partitions=(0, 1)),),
            generation_id=5,
            rack_id="rack",
        ),
        v,
    )
    for v in range(4)
]
ASSIGNMENTS = [
    encode_assignment(
        ConsumerProtocolAssignment(
            assigned_partitions=(WireTopicPartition(topic="t", partitions=(0, 2)),), user_data=b"ud"
        ),
        v,
    )
    for v in range(4)
]


@settings(FUZZ, max_examples=300)
@given(data=st.data())
def test_mutated_consumer_protocol(data: st.DataObject) -> None:
    """Subscriptions and assignments of every version, mutated (JoinGroup and SyncGroup carry them as bytes)."""
    version = data.draw(st.integers(0, 3), label="version")
    subscription, assignment = SUBSCRIPTIONS[version], ASSIGNMENTS[version]
    for i in range(data.draw(st.integers(1, 3), label="mutations")):
        subscription = mutate(data, subscription, f"subscription mutation {i}")
        assignment = mutate(data, assignment, f"assignment mutation {i}")
    typed_in_time(functools.partial(decode_subscription, subscription))
    typed_in_time(functools.partial(decode_assignment, assignment))


# --- 4. mutated record sets ------------------------------------------------------------------------------------


def mutated_record_set(data: st.DataObject) -> bytes:
    """A seed record set after one to three mutations; then, half the time, its first batch's length and CRC
    fixed up, so that the damage reaches the record decoders rather than stopping at the CRC check."""
    buf = data.draw(st.sampled_from(RECORD_SEEDS), label="seed")
    for i in range(data.draw(st.integers(1, 3), label="mutations")):
        buf = mutate(data, buf, f"mutation {i}")
    if data.draw(st.booleans(), label="fix length and crc"):
        buf = fix_batch(buf)
    return buf


@settings(FUZZ, max_examples=1200)
@given(data=st.data())
def test_mutated_record_sets(data: st.DataObject) -> None:
    buf = mutated_record_set(data)
    corrupt: list[int] = []
    outcome = typed_in_time(lambda: corrupt.append(decode_records(buf)), allowed=(BatchError,))
    # For --hypothesis-show-statistics: how often the damage reached, and was caught by, the decoders (decode runs
    # twice per batch: CRC checked and not).
    caught = "iter_batches raised" if outcome == "error" else ("none", "one", "two+")[min(corrupt[0], 2)]
    event(f"corrupt decodes: {caught}")


def test_a_huge_length_anywhere_in_a_record_set_is_bounded() -> None:
    """2**31-1 written at every offset of every record seed, as an int32 and as a (zigzag) varint, with the
    batch's length and CRC fixed up so the decoders trust the batch: decoding raises at most ``BatchError``,
    quickly, and never allocates more than ``PEAK_BYTES`` at its peak."""
    huge = (struct.pack(">i", 2**31 - 1), b"\xfe\xff\xff\xff\x0f")  # the varint: zigzag(2**31-1)
    corrupt: list[int] = []
    tracemalloc.start()
    try:
        for seed in RECORD_SEEDS:
            for at in range(len(seed)):
                for value in huge:
                    data = fix_batch(seed[:at] + value + seed[at + len(value) :])
                    tracemalloc.reset_peak()
                    typed_in_time(lambda d=data: corrupt.append(decode_records(d)), allowed=(BatchError,))
                    peak = tracemalloc.get_traced_memory()[1]
                    assert peak < PEAK_BYTES, f"{peak} bytes at peak with {value.hex()} at {at} of {seed.hex()}"
    finally:
        tracemalloc.stop()
    assert sum(corrupt) > len(corrupt) // 2  # most of these reach, and fail, the decoders' checks


@settings(FUZZ, max_examples=300)
@given(data=st.data())
def test_mutated_record_sets_through_the_fetch_collector(data: st.DataObject) -> None:
    """End to end on the caller's side: ``poll``'s collector returns records or raises ``CorruptRecordError``,
    with CRC checks on and off, and read_committed (control batches, aborted transactions) or not."""
    buf = mutated_record_set(data)
    view = memoryview(buf)
    length, next_offset = complete_prefix(view)
    if next_offset is None:
        event("no complete batch")
        return  # the fetcher reports "record too large" and never buffers such data
    read_committed = data.draw(st.booleans(), label="read_committed")
    config = ConsumerConfig.from_kwargs(
        "h:1",
        check_crcs=data.draw(st.booleans(), label="check_crcs"),
        isolation_level="read_committed" if read_committed else "read_uncommitted",
    )
    tp = TopicPartition("t", 0)
    subs = SubscriptionState("earliest")
    subs.assign([tp])
    subs.seek(tp, 0)
    epoch = subs.epoch(tp)
    assert epoch is not None
    buffer = FetchBuffer(1 << 20, CallerSignal())
    aborted = (AbortedTransaction(producer_id=7, first_offset=0),) if read_committed else None
    buffer.add_all([CompletedFetch(tp, epoch, 0, next_offset, view[:length], 100, aborted)])
    buffer.deliver()
    collector = FetchCollector(config, subs, buffer)

    def poll_until_drained() -> None:
        for _ in range(64):
            if not collector.collect(1000):
                return

    outcome = typed_in_time(poll_until_drained, allowed=(CorruptRecordError,))
    event(f"collector: {outcome}")
    if outcome == "ok":
        assert buffer.buffered_bytes == 0


# --- 5. what the fuzzer found -------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [2**31 - 1, 3])
def test_legacy_wrapper_with_a_bad_inner_length_is_corrupt(length: int) -> None:
    """A CRC-valid compressed legacy message whose inner message lies about its length is corrupt (the negative
    lengths that hung or crashed aiokafka's reader are in the subprocess test below)."""
    data = legacy_wrapper_with_inner_length(length)
    assert struct.unpack_from(">I", data, 12)[0] == zlib.crc32(data[16:])
    (batch,) = iter_batches(memoryview(data))
    with time_limit(), pytest.raises(BatchError, match="message length"):
        batch.legacy_records(check_crc=True)


def test_legacy_wrapper_with_a_negative_inner_length_neither_hangs_nor_crashes_the_interpreter() -> None:
    """aiokafka's C reader, which decoded magic 0/1 messages before, looped forever on an inner length of -12 and
    crashed the interpreter (reading before its buffer) on other negative lengths, CRC valid. Run in a child
    interpreter, so that a regression fails this test instead of hanging or killing the whole run."""
    script = textwrap.dedent(
        """
        from asyncconsumer.protocol.records import BatchError, iter_batches
        from tests.support.batches import legacy_wrapper_with_inner_length

        for length in (-12, -100_000, -1):
            (batch,) = iter_batches(memoryview(legacy_wrapper_with_inner_length(length)))
            try:
                batch.legacy_records(check_crc=True)
            except BatchError as exc:
                print(exc.reason.split(":")[0])
        """
    )
    root = Path(__file__).resolve().parents[3]
    child = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60, check=False
    )
    assert (child.returncode, child.stdout.split()) == (0, ["ValueError"] * 3), child.stderr


@pytest.mark.parametrize(
    ("codec", "garbage"),
    [
        pytest.param(GZIP, b"\x1f\x8b\x08\x00garbage", id="gzip"),
        pytest.param(GZIP, b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff", id="gzip-truncated"),
        pytest.param(SNAPPY, b"\x05\xff\xff", id="snappy"),
        pytest.param(LZ4, b"\x04\x22\x4d\x18garbage", id="lz4"),
        pytest.param(ZSTD, b"\x28\xb5\x2f\xfdgarbage", id="zstd"),
        pytest.param(5, b"", id="unknown-codec"),
    ],
)
def test_undecompressable_v2_batch_is_corrupt(codec: int, garbage: bytes) -> None:
    """Codec errors (gzip.BadGzipFile, EOFError, zlib.error, cramjam.DecompressionError, UnsupportedCodecError)
    escaped the batch's decoding and ``control_type``; now ``plain`` raises ``BatchError`` and the second reads
    "unreadable"."""
    header = bytearray(v2_batch(0, 0, count=1)[:61])
    header[21:23] = (codec | 0x20).to_bytes(2, "big")  # compressed, and a control batch
    data = fix_batch(bytes(header) + garbage)
    (batch,) = iter_batches(memoryview(data))
    assert batch.is_control
    assert batch.control_type() is None
    with pytest.raises(BatchError):
        batch.plain(check_crc=True)


@pytest.mark.parametrize("magic", [3, 99, 255])
def test_an_unknown_magic_is_a_batch_error_naming_it(magic: int) -> None:
    from tests.support.batches import build_batch

    data = bytearray(build_batch(5, [b"a", b"b"]))
    data[16] = magic  # offset (8) + length (4) + partition leader epoch (4), then the magic byte
    with pytest.raises(BatchError, match=f"unknown record batch magic {magic}"):
        list(iter_batches(memoryview(bytes(data))))
