"""A small asyncio admin client for the CLI: topic offsets, share-group descriptions, and a group's configs (what
``AsyncAdmin`` does not do yet; consumer groups are described on it).

It is not a consumer: no background thread, no managers. It runs a ``NetworkClientDelegate`` on the caller's
own event loop (every socket stays in ``network/``) and sends one request at a time: Metadata, ListOffsets, Fetch,
FindCoordinator, ShareGroupDescribe, DescribeShareGroupOffsets and IncrementalAlterConfigs. What the answers mean is
worked out by plain functions (``partition_offsets``, ``high_watermarks``, ``share_group_description``,
``group_configs_altered``) that take
decoded responses and do no I/O, so they are unit-tested with hand-built responses.

A group's configs (KIP-848's and KIP-932's ``share.auto.offset.reset``, ``share.record.lock.duration.ms``...) are
resource type GROUP of IncrementalAlterConfigs. As Kafka's own Admin does for every resource but one broker's
configs, the request goes to any broker (the least loaded): a broker forwards it to the active controller, which
checks each value against the cluster's bounds (``group.share.min.record.lock.duration.ms``...) and answers
INVALID_CONFIG naming the key and the bound.

A share group (KIP-932) has no committed offsets: each of its partitions has a start offset, below which every
record is acknowledged (or never to be delivered), and from v1 of DescribeShareGroupOffsets (KIP-1226) a lag the
broker works out: records at or past the start offset not yet acknowledged.

A partition's end is the high watermark of a Fetch, not ListOffsets LATEST: Tansu 0.6 answers LATEST with the base
offset of the partition's last record batch + 1 (after a batch of 10 and a batch of 5: 11, where Kafka says 15),
while its Fetch's high watermark is right. The Fetch (``end_offsets_fetch``) goes to each leader at the offset
LATEST named, sessionless, with no minimum and asking for one byte, so on Kafka (where LATEST at read_uncommitted is
the high watermark) it returns at once with no records, and on Tansu with at most the last batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Self, TypeVar

import anyio
import anyio.abc
import attrs

from asyncconsumer._clock import Clock, SystemClock
from asyncconsumer._logs import get_logger
from asyncconsumer.errors import (
    CorruptResponseError,
    ErrorCode,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    for_code,
)
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.network.delegate import NetworkClientDelegate
from asyncconsumer.network.security import ConnectionSecurity
from asyncconsumer.protocol.base import Request
from asyncconsumer.protocol.constants import CONSUMER_REPLICA_ID, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from asyncconsumer.protocol.layouts import coordinator_for
from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroup,
)
from asyncconsumer.protocol.messages.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from asyncconsumer.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from asyncconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from asyncconsumer.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from asyncconsumer.protocol.messages.share_group_describe import DescribedGroup as DescribedShareGroup
from asyncconsumer.protocol.messages.share_group_describe import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from asyncconsumer.records import TopicPartition

__all__ = [
    "AdminClient",
    "GroupNotFoundError",
    "PartitionOffsets",
    "ShareGroupDescription",
    "ShareGroupMember",
    "ShareStartOffset",
    "TopicNotFoundError",
    "end_offsets_fetch",
    "group_configs_altered",
    "group_configs_request",
    "high_watermarks",
    "partition_offsets",
    "share_group_description",
]

log = get_logger("asyncconsumer.admin")

_RETRY_BACKOFF_MS = 100
GROUP_RESOURCE = 32
"""IncrementalAlterConfigs' resource type of a group's configs (Kafka's ``ConfigResource.Type.GROUP``)."""
CONFIG_SET = 0
CONFIG_DELETE = 1
"""IncrementalAlterConfigs' operations: set a value; delete it (back to the broker's default)."""
_END_FETCH_MAX_WAIT_MS = 1

ResponseT = TypeVar("ResponseT")


class TopicNotFoundError(KafkaError):
    """The topic does not exist."""


class GroupNotFoundError(KafkaError):
    """The coordinator knows nothing of the group: no members and no committed offsets."""


# --- results --------------------------------------------------------------------------------------------------


@attrs.frozen
class PartitionOffsets:
    """The first offset still in the log and the offset the next record will get (the high watermark)."""

    partition: TopicPartition
    beginning: int
    end: int

    @property
    def records(self) -> int:
        """How many records the partition holds now."""
        return self.end - self.beginning


@attrs.frozen
class ShareGroupMember:
    """One member of a share group and the partitions the share coordinator assigned it."""

    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    member_epoch: int
    subscribed_topics: tuple[str, ...]
    partitions: tuple[TopicPartition, ...]


@attrs.frozen
class ShareStartOffset:
    """A share partition's start offset: every record below it is acknowledged (or will never be delivered)."""

    partition: TopicPartition
    start_offset: int | None
    """None: the broker has none for it (an error, or no share state yet)."""
    lag: int | None
    """Records at or past the start offset not yet acknowledged, as the broker counts them; None when it does not
    say (DescribeShareGroupOffsets v0, or -1)."""
    error: str | None
    """The partition's error, by name, if the broker answered one."""


@attrs.frozen
class ShareGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    coordinator: int
    members: tuple[ShareGroupMember, ...]
    start_offsets: tuple[ShareStartOffset, ...]

    @property
    def total_lag(self) -> int | None:
        """The partitions' lags added up; None when the broker gave none."""
        lags = [p.lag for p in self.start_offsets if p.lag is not None]
        return sum(lags) if lags else None


# --- what the answers mean (no I/O) ---------------------------------------------------------------------------


def _check(code: int, what: str) -> None:
    if code != ErrorCode.NONE:
        raise for_code(code, what)


def partition_offsets(
    topic: str, partitions: Iterable[int], beginnings: Mapping[int, int], ends: Mapping[int, int]
) -> tuple[PartitionOffsets, ...]:
    """One row per partition, in partition order."""
    return tuple(PartitionOffsets(TopicPartition(topic, p), beginnings[p], ends[p]) for p in sorted(partitions))


def end_offsets_fetch(topic: str, offsets: Mapping[int, int]) -> FetchRequest:
    """A Fetch that answers at once with the high watermark of each partition of ``offsets`` (partition → the
    offset to fetch at: ListOffsets LATEST, so that nothing or little comes back).

    Sessionless (session id 0, epoch -1: no session opened, none evicted), read_uncommitted, no minimum, and one
    byte as the limit (a broker still returns a first batch larger than the limit, KIP-74; Tansu returns the
    batch). ``max_wait_ms`` is 1, not 0: Tansu 0.6 answers a Fetch with max_wait_ms 0 with no topics at all, and
    waits out max_wait_ms when no record is past the offset (Kafka answers at once, min_bytes being 0).
    """
    partitions = tuple(
        FetchPartition(partition=p, fetch_offset=offsets[p], partition_max_bytes=1) for p in sorted(offsets)
    )
    return FetchRequest(
        max_wait_ms=_END_FETCH_MAX_WAIT_MS,
        min_bytes=0,
        max_bytes=1,
        isolation_level=0,
        session_id=INVALID_SESSION_ID,
        session_epoch=FINAL_EPOCH,
        topics=(FetchTopic(topic=topic, partitions=partitions),),
    )


def high_watermarks(topic: str, partitions: Iterable[int], response: FetchResponse) -> dict[int, int]:
    """partition → high watermark (the offset the next record will get) for each of ``partitions``, from the answer
    to ``end_offsets_fetch``. An error code raises its ``KafkaError`` (retriable ones are retried by the caller);
    a partition left out raises ``CorruptResponseError``."""
    _check(response.error_code, f"fetching the high watermarks of {topic!r}")
    found: dict[int, int] = {}
    for t in response.responses:
        if t.topic != topic:
            continue
        for p in t.partitions:
            _check(p.error_code, f"fetching the high watermark of {topic}-{p.partition_index}")
            found[p.partition_index] = p.high_watermark
    wanted = set(partitions)
    missing = sorted(wanted - set(found))
    if missing:
        raise CorruptResponseError(f"Fetch answered without the high watermark of {topic} partitions {missing}")
    return {p: found[p] for p in sorted(wanted)}


def _said(what: str, message: str | None) -> str:
    """``what``, and the broker's own error message when it gave one."""
    return f"{what}: {message}" if message else what


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


def _share_members(group: DescribedShareGroup) -> tuple[ShareGroupMember, ...]:
    members = [
        ShareGroupMember(
            m.member_id,
            m.client_id,
            m.client_host,
            m.rack_id,
            m.member_epoch,
            tuple(sorted(m.subscribed_topic_names)),
            tuple(sorted(TopicPartition(t.topic_name, p) for t in m.assignment.topic_partitions for p in t.partitions)),
        )
        for m in group.members
    ]
    return tuple(sorted(members, key=lambda m: m.member_id))


def share_group_description(
    described: DescribedShareGroup, offsets: DescribeShareGroupOffsetsResponseGroup, coordinator: int
) -> ShareGroupDescription:
    """Members with their assignments, and each partition's start offset and lag. Raises ``GroupNotFoundError``
    when the coordinator knows no share group of that id (none, or a group of another kind)."""
    for code, message in ((described.error_code, described.error_message), (offsets.error_code, offsets.error_message)):
        if code == ErrorCode.GROUP_ID_NOT_FOUND:
            detail = f": {message}" if message else ""
            raise GroupNotFoundError(f"share group {described.group_id!r} does not exist{detail}")
    _check(described.error_code, _said(f"describing share group {described.group_id!r}", described.error_message))
    _check(offsets.error_code, _said(f"the start offsets of share group {described.group_id!r}", offsets.error_message))
    members = _share_members(described)
    names = {t.topic_id: t.topic_name for m in described.members for t in m.assignment.topic_partitions}
    rows = []
    for topic in offsets.topics:
        name = topic.topic_name or names.get(topic.topic_id, str(topic.topic_id))
        for p in topic.partitions:
            error = None if p.error_code == ErrorCode.NONE else _code_name(p.error_code)
            start = p.start_offset if p.error_code == ErrorCode.NONE and p.start_offset >= 0 else None
            lag = p.lag if p.error_code == ErrorCode.NONE and p.lag >= 0 else None
            rows.append(ShareStartOffset(TopicPartition(name, p.partition_index), start, lag, error))
    return ShareGroupDescription(
        described.group_id,
        described.group_state,
        described.group_epoch,
        described.assignment_epoch,
        described.assignor_name,
        coordinator,
        members,
        tuple(sorted(rows, key=lambda r: r.partition)),
    )


def group_configs_request(
    group_id: str, set: Mapping[str, str], delete: Iterable[str]
) -> IncrementalAlterConfigsRequest:
    """One GROUP resource: a SET of each of ``set`` (in its order), then a DELETE of each of ``delete``; the group's
    other configs stay as they are."""
    configs = [AlterableConfig(name=k, config_operation=CONFIG_SET, value=v) for k, v in set.items()]
    configs += [AlterableConfig(name=k, config_operation=CONFIG_DELETE, value=None) for k in delete]
    resource = AlterConfigsResource(resource_type=GROUP_RESOURCE, resource_name=group_id, configs=tuple(configs))
    return IncrementalAlterConfigsRequest(resources=(resource,))


def group_configs_altered(group_id: str, response: IncrementalAlterConfigsResponse) -> None:
    """Returns when the broker altered ``group_id``'s configs; raises its resource's error with the broker's own
    message (INVALID_CONFIG: ``InvalidConfigError`` naming the key and the bound), or ``CorruptResponseError`` when
    the answer leaves the group out."""
    answer = next(
        (r for r in response.responses if r.resource_type == GROUP_RESOURCE and r.resource_name == group_id), None
    )
    if answer is None:
        raise CorruptResponseError(f"IncrementalAlterConfigs answered without group {group_id!r}")
    _check(answer.error_code, _said(f"configuring group {group_id!r}", answer.error_message))


# --- the client -----------------------------------------------------------------------------------------------


def _by_leader(leaders: Mapping[int, int]) -> list[tuple[int, list[int]]]:
    """(leader, its partitions in order) for each leader, in node order."""
    by_leader: dict[int, list[int]] = {}
    for partition, leader in sorted(leaders.items()):
        by_leader.setdefault(leader, []).append(partition)
    return sorted(by_leader.items())


class _Directory:
    """The delegate's node directory: bootstrap servers as -1, -2, ... then the brokers metadata named."""

    def __init__(self, bootstrap_servers: Iterable[str]) -> None:
        self.bootstrap: dict[int, tuple[str, int]] = {}
        for i, server in enumerate(bootstrap_servers):
            host, _, port = server.strip().rpartition(":")
            self.bootstrap[-(i + 1)] = (host.strip("[]"), int(port))
        self.brokers: dict[int, tuple[str, int]] = {}

    def address(self, node_id: int) -> tuple[str, int] | None:
        return self.brokers.get(node_id) or self.bootstrap.get(node_id)

    def candidate_nodes(self) -> list[int]:
        return list(self.brokers) or list(self.bootstrap)

    def rebootstrap(self, reason: str) -> None:
        """The admin tools ask each call afresh: a moved cluster is found through the bootstrap servers anyway."""
        self.brokers = {}


class AdminClient:
    """``async with AdminClient("host:9092") as admin: await admin.describe_group("g")``.

    Every call gives up with ``KafkaTimeoutError`` (or the last connection error) after ``timeout_ms``.
    """

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        *,
        client_id: str = "asyncconsumer-admin",
        timeout_ms: int = 30_000,
        clock: Clock | None = None,
        security: ConnectionSecurity | None = None,
    ) -> None:
        servers = bootstrap_servers.split(",") if isinstance(bootstrap_servers, str) else list(bootstrap_servers)
        if not servers or any(":" not in s for s in servers):
            raise KafkaConnectionError(f"bootstrap servers must be HOST:PORT, got {bootstrap_servers!r}")
        self._directory = _Directory(servers)
        self._clock: Clock = clock or SystemClock()
        self._timeout_ms = timeout_ms
        self._delegate = NetworkClientDelegate(
            self._clock,
            self._directory,
            client_id=client_id,
            request_timeout_ms=timeout_ms,
            connection_setup_timeout_ms=min(timeout_ms, 10_000),
            max_in_flight=5,
            reconnect_backoff=ExponentialBackoff(50, 1_000),
            security=security,
        )
        self._stack = AsyncExitStack()
        self._tg: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> Self:
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._delegate.attach(self._tg)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # The body's exception is not handed to the task group (it would come back wrapped in an exception
        # group): the connections are closed and their tasks cancelled, then the exception goes on unchanged.
        try:
            await self._delegate.close()
        finally:
            if self._tg is not None:
                self._tg.cancel_scope.cancel()
            await self._stack.aclose()

    def last_connection_error(self) -> KafkaError | None:
        """The most recent connection failure of a node that has not connected since (None: none failed)."""
        return self._delegate.last_connection_error()

    # --- one request ------------------------------------------------------------------------------------------
    async def _send(self, request: Request, node_id: int | None, response_type: type[ResponseT]) -> ResponseT:
        """Sends ``request`` and drives the delegate until its answer (or a ``KafkaError``) arrives."""
        done: asyncio.Future[object] = asyncio.get_running_loop().create_future()

        def on_response(result: object, now_ms: int) -> None:
            if not done.done():
                done.set_result(result)

        self._delegate.add_all([UnsentRequest(request, node_id, on_response)], self._clock.now_ms())
        while not done.done():
            await self._delegate.poll(1_000, self._clock.now_ms())
        result = done.result()
        if isinstance(result, KafkaError):
            raise result
        if not isinstance(result, response_type):
            raise CorruptResponseError(f"{request.API_KEY.name} answered with {type(result).__name__}")
        return result

    async def _retrying(self, what: str, attempt: Callable[[], Awaitable[ResponseT]]) -> ResponseT:
        """Runs ``attempt`` until it returns, a non-retriable error, or the deadline."""
        deadline = self._clock.now_ms() + self._timeout_ms
        failures = 0
        while True:
            try:
                return await attempt()
            except KafkaError as exc:
                failures += 1
                if not exc.retriable or self._clock.now_ms() >= deadline:
                    if exc.retriable:
                        raise KafkaTimeoutError(f"{what} did not succeed within {self._timeout_ms} ms: {exc}") from exc
                    raise
                log.debug("admin.retry", what=what, error=str(exc), failures=failures)
                await anyio.sleep(min(_RETRY_BACKOFF_MS * failures, 1_000) / 1000)

    async def supports(self, api_key: ApiKey) -> bool:
        """Whether the brokers offer ``api_key``, by the ApiVersions of the first broker connected (after a Metadata
        request if none is yet); True when no connection can tell, so that the request itself finds out."""
        if not self._directory.brokers:
            await self._retrying("metadata", lambda: self._metadata(()))
        return self._delegate.supports_api(int(api_key)) is not False

    # --- metadata and offsets ---------------------------------------------------------------------------------
    async def _metadata(self, topics: tuple[str, ...] | None) -> MetadataResponse:
        wanted = None if topics is None else tuple(MetadataRequestTopic(name=t) for t in topics)
        response = await self._send(
            MetadataRequest(topics=wanted, allow_auto_topic_creation=False), None, MetadataResponse
        )
        self._directory.brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
        return response

    async def partition_leaders(self, topic: str) -> dict[int, int]:
        """partition → leader node id; ``TopicNotFoundError`` if the topic does not exist."""

        async def attempt() -> dict[int, int]:
            response = await self._metadata((topic,))
            for t in response.topics:
                if t.name != topic:
                    continue
                if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    raise TopicNotFoundError(f"topic {topic!r} does not exist")
                _check(t.error_code, f"metadata for topic {topic!r}")
                for p in t.partitions:
                    _check(p.error_code, f"metadata for {topic}-{p.partition_index}")
                return {p.partition_index: p.leader_id for p in t.partitions}
            raise TopicNotFoundError(f"topic {topic!r} does not exist")

        return await self._retrying(f"metadata for {topic!r}", attempt)

    async def _list_offsets(self, topic: str, leaders: Mapping[int, int], timestamp: int) -> dict[int, int]:
        found: dict[int, int] = {}
        for leader, partitions in _by_leader(leaders):
            wanted = tuple(ListOffsetsPartition(partition_index=p, timestamp=timestamp) for p in sorted(partitions))
            request = ListOffsetsRequest(
                replica_id=CONSUMER_REPLICA_ID, topics=(ListOffsetsTopic(name=topic, partitions=wanted),)
            )
            response = await self._send(request, leader, ListOffsetsResponse)
            for t in response.topics:
                for p in t.partitions:
                    _check(p.error_code, f"offsets of {topic}-{p.partition_index}")
                    found[p.partition_index] = p.offset
        return found

    async def _end_offsets(self, topic: str, leaders: Mapping[int, int]) -> dict[int, int]:
        """partition → the offset the next record will get: the high watermark of a Fetch at ListOffsets LATEST."""
        latest = await self._list_offsets(topic, leaders, LATEST_TIMESTAMP)
        found: dict[int, int] = {}
        for leader, partitions in _by_leader(leaders):
            request = end_offsets_fetch(topic, {p: latest[p] for p in partitions})
            response = await self._send(request, leader, FetchResponse)
            found.update(high_watermarks(topic, partitions, response))
        return found

    async def topic_offsets(self, topic: str) -> tuple[PartitionOffsets, ...]:
        """Beginning and end offset of every partition of ``topic``."""
        leaders = await self.partition_leaders(topic)

        async def attempt() -> tuple[PartitionOffsets, ...]:
            beginnings = await self._list_offsets(topic, leaders, EARLIEST_TIMESTAMP)
            ends = await self._end_offsets(topic, leaders)
            return partition_offsets(topic, leaders, beginnings, ends)

        return await self._retrying(f"offsets of {topic!r}", attempt)

    # --- groups -----------------------------------------------------------------------------------------------
    async def find_coordinator(self, group_id: str) -> int:
        """The node id of ``group_id``'s coordinator (its address joins the directory)."""
        if not self._directory.brokers:
            await self._retrying("metadata", lambda: self._metadata(()))

        async def attempt() -> int:
            response = await self._send(FindCoordinatorRequest(key=group_id), None, FindCoordinatorResponse)
            found = coordinator_for(response, group_id)
            _check(found.error_code, f"finding the coordinator of group {group_id!r}")
            self._directory.brokers.setdefault(found.node_id, (found.host, found.port))
            log.debug("admin.coordinator", group=group_id, node=found.node_id, host=found.host, port=found.port)
            return found.node_id

        return await self._retrying(f"the coordinator of {group_id!r}", attempt)

    async def describe_share_group(self, group_id: str) -> ShareGroupDescription:
        """State, epochs, assignor, members with their assignments, and each partition's start offset (and lag, from
        DescribeShareGroupOffsets v1) of share group ``group_id``. A broker without share groups raises
        ``UnsupportedVersionError`` naming ShareGroupDescribe (API 77)."""

        async def attempt() -> tuple[int, DescribedShareGroup, DescribeShareGroupOffsetsResponseGroup]:
            node = await self.find_coordinator(group_id)
            described = await self._send(
                ShareGroupDescribeRequest(group_ids=(group_id,)), node, ShareGroupDescribeResponse
            )
            group = next((g for g in described.groups if g.group_id == group_id), None)
            if group is None:
                raise CorruptResponseError(f"ShareGroupDescribe answered without group {group_id!r}")
            if group.error_code != ErrorCode.NONE and group.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
                raise for_code(group.error_code, _said(f"describing share group {group_id!r}", group.error_message))
            request = DescribeShareGroupOffsetsRequest(groups=(DescribeShareGroupOffsetsRequestGroup(group_id),))
            answered = await self._send(request, node, DescribeShareGroupOffsetsResponse)
            offsets = next((g for g in answered.groups if g.group_id == group_id), None)
            if offsets is None:
                raise CorruptResponseError(f"DescribeShareGroupOffsets answered without group {group_id!r}")
            if offsets.error_code != ErrorCode.NONE and offsets.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
                what = f"the start offsets of share group {group_id!r}"
                raise for_code(offsets.error_code, _said(what, offsets.error_message))
            return node, group, offsets

        node, group, offsets = await self._retrying(f"describing share group {group_id!r}", attempt)
        description = share_group_description(group, offsets, node)
        log.debug(
            "admin.share_group_described", group=group_id, state=description.state, members=len(description.members)
        )
        return description

    async def alter_group_configs(self, group_id: str, set: Mapping[str, str], delete: Iterable[str] = ()) -> None:
        """Sets each of ``set`` and deletes each of ``delete`` (back to the broker's default) in ``group_id``'s
        configs, in one request to the least-loaded broker; the group need not exist yet. A refused value raises the
        broker's error (``InvalidConfigError``, with Kafka's message naming the key and the bound); a broker without
        IncrementalAlterConfigs raises ``UnsupportedVersionError`` naming it (API 44)."""
        deleted = tuple(delete)
        request = group_configs_request(group_id, set, deleted)
        if not self._directory.brokers:
            await self._retrying("metadata", lambda: self._metadata(()))

        async def attempt() -> None:
            response = await self._send(request, None, IncrementalAlterConfigsResponse)
            group_configs_altered(group_id, response)

        await self._retrying(f"configuring group {group_id!r}", attempt)
        log.debug("admin.group_configs_altered", group=group_id, set=dict(set), deleted=list(deleted))
