"""The admin client's methods, written once for both faces (``AsyncAdmin`` awaits them, ``Admin`` blocks).

Each operation is a few requests, each one an event to the background thread, which finds where it goes (a group's
coordinator, any broker, a partition's leader named by metadata) and retries connection errors until the
operation's deadline (``timeout_ms``, default ``default_api_timeout_ms``). An answer whose error a retry can fix (a
coordinator loading or moving, a leader election) is asked again after a backoff the background waits out; any
other error is raised, typed and naming the group, topic or partition.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, Unpack

from asyncconsumer._caller.admin_configs import (
    AlterConfigOp,
    ConfigEntry,
    ConfigResource,
    alter_errors,
    alter_request,
    by_broker,
    check_changes,
    describe_request,
    described_configs,
)
from asyncconsumer._caller.admin_core import AdminCore
from asyncconsumer._caller.admin_results import (
    GROUP_TYPES,
    BrokerNode,
    ClusterDescription,
    ConsumerGroupDescription,
    GroupListing,
    NewTopic,
    PartitionLag,
    TopicDescription,
    cluster_description,
    commit_errors,
    committed_offsets,
    described_consumer_group,
    described_group,
    group_delete_errors,
    group_lag,
    listed_groups,
    offset_delete_errors,
    offsets_only,
    partitions_create_errors,
    topic_create_errors,
    topic_delete_errors,
    topic_descriptions,
    topic_names,
)
from asyncconsumer._caller.admin_share import (
    ShareGroupDescription,
    SharePartitionOffsetInfo,
    described_share_group,
    share_group_offsets,
    share_offsets_request,
)
from asyncconsumer._caller.faces import FaceMethods, both_faces
from asyncconsumer._state.snapshot import AdminMetrics
from asyncconsumer.config import AdminConfig, AdminSettings
from asyncconsumer.errors import (
    CoordinatorNotAvailableError,
    CorruptResponseError,
    ErrorCode,
    GroupIdNotFoundError,
    InvalidOffsetError,
    KafkaError,
    NonEmptyGroupError,
    NotCoordinatorError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    for_code,
)
from asyncconsumer.events.admin import AdminAnswer, CoordinatorOf, Target
from asyncconsumer.protocol.base import Request
from asyncconsumer.protocol.constants import CONSUMER_REPLICA_ID, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from asyncconsumer.protocol.layouts import offsets_for_group
from asyncconsumer.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from asyncconsumer.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
)
from asyncconsumer.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from asyncconsumer.protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from asyncconsumer.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from asyncconsumer.protocol.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from asyncconsumer.protocol.messages.describe_configs import DescribeConfigsResponse
from asyncconsumer.protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from asyncconsumer.protocol.messages.describe_share_group_offsets import DescribeShareGroupOffsetsResponse
from asyncconsumer.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsResponse
from asyncconsumer.protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from asyncconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from asyncconsumer.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from asyncconsumer.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from asyncconsumer.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
)
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from asyncconsumer.protocol.messages.share_group_describe import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from asyncconsumer.records import OffsetAndMetadata, TopicPartition

T = TypeVar("T")
R = TypeVar("R")

_MOVED = (NotCoordinatorError, CoordinatorNotAvailableError)
"""Answers that say the coordinator asked is not (or no longer) the one: the next attempt looks it up again."""

_NOTHING_LEFT = ("Empty", "Dead", "")
"""The states of a group that, with no members and no committed offsets, is no group at all."""

OffsetSpec = int | str
"""Where ``list_offsets`` looks: ``"earliest"``, ``"latest"``, or a timestamp in Unix epoch milliseconds."""


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return by_topic


def _first_error(errors: Mapping[Any, KafkaError]) -> None:
    """Raises the first of ``errors`` (in key order), if any: one operation, one error, naming what it concerns."""
    if errors:
        raise errors[sorted(errors, key=str)[0]]


def _typed(response: object, kind: type[T], request: Request) -> T:
    if not isinstance(response, kind):
        raise CorruptResponseError(f"{request.API_KEY.name} answered with {type(response).__name__}")
    return response


class AdminMethods(FaceMethods):
    """Groups, offsets, topics and the cluster, as Java's ``Admin`` names them."""

    _core: AdminCore

    def __init__(self, config: Any = None, /, **settings: Unpack[AdminSettings]) -> None:
        """``AsyncAdmin("host:9092")`` (or ``Admin(...)``), or a settings mapping with Java keys; the consumers'
        connection and security settings (TLS, every SASL mechanism, rebootstrap), nothing else."""
        self._core = AdminCore(AdminConfig.from_settings(config, **settings))
        self._pending = []

    @property
    def config(self) -> AdminConfig:
        """The settings it was made with, checked and complete."""
        return self._core.config

    def metrics(self) -> AdminMetrics:
        """The connections' counts and latest failure, as the background last published them (any thread)."""
        return self._core.parts.published.current

    @both_faces
    async def close(self, timeout_ms: int | None = None) -> None:
        """Stops the background thread (what is in flight fails with ``ClientClosedError``), within ``timeout_ms``
        (default 30 s). A no-op on a client never used or already closed."""
        core = self._core
        timeout = 30_000 if timeout_ms is None else timeout_ms
        future = core.close(timeout)
        if future is not None:
            with contextlib.suppress(TimeoutError):
                await self._wait_at_most(future, timeout / 1000 + 0.5)
        await self._join(timeout / 1000 + 0.5)

    # --- one request, asked again while a retry can fix its answer -----------------------------------------------
    async def _ask(self, request: Request, target: Target, deadline_ms: int, read: Callable[[AdminAnswer], T]) -> T:
        core = self._core
        failures, delay, refresh = 0, 0, False
        while True:
            left = max(deadline_ms - core.clock.now_ms(), 0)
            answer = await self._wait(core.send(request, target, deadline_ms, delay_ms=delay, refresh=refresh), left)
            assert isinstance(answer, AdminAnswer)
            try:
                return read(answer)
            except KafkaError as exc:
                failures += 1
                delay = core.settings.retry_backoff_ms * min(2 ** (failures - 1), 32)
                delay = min(delay, core.settings.retry_backoff_max_ms)
                if not exc.retriable or core.clock.now_ms() + delay >= deadline_ms:
                    raise
                refresh = isinstance(exc, _MOVED)

    async def _ask_each(
        self,
        request: Request,
        target: Target,
        deadline_ms: int,
        kind: type[R],
        errors_of: Callable[[R], Mapping[Any, KafkaError]],
    ) -> None:
        """A request about many items (topics, partitions): asked again while an item's error is retriable, then the
        first item's error raised (the others were done)."""

        def read(answer: AdminAnswer) -> Mapping[Any, KafkaError]:
            errors = errors_of(_typed(answer.response, kind, request))
            for error in errors.values():
                if error.retriable:
                    raise error
            return errors

        _first_error(await self._ask(request, target, deadline_ms, read))

    async def _metadata(self, topics: Iterable[str] | None, deadline_ms: int) -> MetadataResponse:
        wanted = None if topics is None else tuple(MetadataRequestTopic(name=t) for t in topics)
        request = MetadataRequest(topics=wanted, allow_auto_topic_creation=False)
        return await self._ask(request, None, deadline_ms, lambda a: _typed(a.response, MetadataResponse, request))

    # --- groups --------------------------------------------------------------------------------------------------
    @both_faces
    async def list_groups(
        self,
        *,
        types: Iterable[str] | None = None,
        states: Iterable[str] | None = None,
        timeout_ms: int | None = None,
    ) -> list[GroupListing]:
        """Every group on the cluster (each broker lists those it coordinates), ``types`` and ``states`` filtering
        them on the brokers (KIP-1043: ``classic``, ``consumer``, ``share``, ``streams``; states as Kafka names them:
        ``Stable``, ``Empty``...)."""
        wanted_types = tuple(sorted({t.lower() for t in types})) if types is not None else ()
        for kind in wanted_types:
            if kind not in GROUP_TYPES:
                raise ValueError(f"types: {kind!r} is not a group type (one of {', '.join(GROUP_TYPES)})")
        request = ListGroupsRequest(states_filter=tuple(states or ()), types_filter=wanted_types)
        deadline = self._core.deadline(timeout_ms)
        brokers = sorted(b.node_id for b in (await self._metadata((), deadline)).brokers)
        found: list[GroupListing] = []
        for node in brokers:

            def read(answer: AdminAnswer) -> list[GroupListing]:
                return listed_groups(_typed(answer.response, ListGroupsResponse, request), answer.node_id)

            found += await self._ask(request, node, deadline, read)
        return sorted(found, key=lambda g: g.group_id)

    @both_faces
    async def describe_consumer_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        """Each group's state, assignor and members with their partitions; ``GroupIdNotFoundError`` naming a group
        its coordinator does not know."""
        deadline = self._core.deadline(timeout_ms)
        found: dict[str, ConsumerGroupDescription] = {}
        for group_id in _names(group_ids, "group_ids"):
            found[group_id] = await self._describe(group_id, deadline)
        return found

    async def _describe(self, group_id: str, deadline_ms: int) -> ConsumerGroupDescription:
        """ConsumerGroupDescribe first (KIP-848's groups), then DescribeGroups for a classic group, as Java's Admin."""
        asked = ConsumerGroupDescribeRequest(group_ids=(group_id,))

        def read_consumer(answer: AdminAnswer) -> ConsumerGroupDescription | None:
            response = _typed(answer.response, ConsumerGroupDescribeResponse, asked)
            return described_consumer_group(response, group_id, answer.node_id)

        try:
            found = await self._ask(asked, CoordinatorOf(group_id), deadline_ms, read_consumer)
        except UnsupportedVersionError:  # a broker without KIP-848's groups has only classic ones
            found = None
        if found is not None and found.members:
            return found
        try:
            classic = await self._describe_classic(group_id, deadline_ms)
        except GroupIdNotFoundError:
            if found is not None:
                return found
            raise
        # Kafka answers ConsumerGroupDescribe of a classic group GROUP_ID_NOT_FOUND; Tansu 0.6 describes it as a
        # consumer group with no members, so an empty answer is checked against DescribeGroups.
        return classic if found is None or classic.members or classic.protocol_type else found

    async def _describe_classic(self, group_id: str, deadline_ms: int) -> ConsumerGroupDescription:
        request = DescribeGroupsRequest(groups=(group_id,))

        def read(answer: AdminAnswer) -> ConsumerGroupDescription:
            response = _typed(answer.response, DescribeGroupsResponse, request)
            for group in response.groups:
                if group.group_id == group_id and group.error_code in (ErrorCode.NOT_COORDINATOR,):
                    raise for_code(group.error_code, f"describing group {group_id!r}")
            return described_group(response, group_id, answer.node_id)

        return await self._ask(request, CoordinatorOf(group_id), deadline_ms, read)

    @both_faces
    async def delete_consumer_groups(self, group_ids: Iterable[str], *, timeout_ms: int | None = None) -> None:
        """Deletes each group and its committed offsets. A group with members is not deleted: ``NonEmptyGroupError``
        (``GroupIdNotFoundError`` for one that does not exist), raised after the others were deleted."""
        deadline = self._core.deadline(timeout_ms)
        errors: dict[str, KafkaError] = {}
        for group_id in _names(group_ids, "group_ids"):
            request = DeleteGroupsRequest(groups_names=(group_id,))

            def read(answer: AdminAnswer, request: DeleteGroupsRequest = request) -> dict[str, KafkaError]:
                found = group_delete_errors(_typed(answer.response, DeleteGroupsResponse, request))
                for error in found.values():
                    if error.retriable:
                        raise error
                return found

            errors.update(await self._ask(request, CoordinatorOf(group_id), deadline, read))
        _first_error(errors)

    # --- share groups (KIP-932) ----------------------------------------------------------------------------------
    @both_faces
    async def describe_share_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, ShareGroupDescription]:
        """Each share group's state, epochs, assignor and members with their partitions; ``GroupIdNotFoundError``
        naming a group its coordinator knows no share group of; ``UnsupportedVersionError`` naming
        ShareGroupDescribe (API 77) on a broker without share groups."""
        deadline = self._core.deadline(timeout_ms)
        found: dict[str, ShareGroupDescription] = {}
        for group_id in _names(group_ids, "group_ids"):
            request = ShareGroupDescribeRequest(group_ids=(group_id,))

            def read(
                answer: AdminAnswer, request: Request = request, group_id: str = group_id
            ) -> ShareGroupDescription:
                response = _typed(answer.response, ShareGroupDescribeResponse, request)
                return described_share_group(response, group_id, answer.node_id)

            found[group_id] = await self._ask(request, CoordinatorOf(group_id), deadline, read)
        return found

    @both_faces
    async def list_share_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, SharePartitionOffsetInfo]:
        """Each partition's start offset (every record below it acknowledged, or never to be delivered), leader epoch
        and lag (KIP-1226: the broker's count of records from the start offset on not yet acknowledged), of
        ``partitions`` or of every partition the group has state for."""
        deadline = self._core.deadline(timeout_ms)
        request = share_offsets_request(group_id, partitions)
        response = await self._ask(
            request,
            CoordinatorOf(group_id),
            deadline,
            lambda a: _typed(a.response, DescribeShareGroupOffsetsResponse, request),
        )
        names = {}
        if any(not t.topic_name for g in response.groups for t in g.topics):  # named by id only: ask metadata
            names = {t.topic_id: t.name or "" for t in (await self._metadata(None, deadline)).topics}
        return share_group_offsets(response, group_id, names)

    # --- offsets -------------------------------------------------------------------------------------------------
    @both_faces
    async def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (of ``partitions``, or all); partitions with none are left out."""
        return await self._committed(group_id, partitions, self._core.deadline(timeout_ms))

    async def _committed(
        self, group_id: str, partitions: Iterable[TopicPartition] | None, deadline: int
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        wanted = None
        if partitions is not None:
            wanted = tuple(
                OffsetFetchRequestTopics(name=t, partition_indexes=tuple(p)) for t, p in _by_topic(partitions).items()
            )
        request = OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id=group_id, topics=wanted),))
        return await self._ask(
            request,
            CoordinatorOf(group_id),
            deadline,
            lambda a: committed_offsets(offsets_for_group(_typed(a.response, OffsetFetchResponse, request), group_id)),
        )

    @both_faces
    async def list_consumer_group_lag(self, group_id: str, *, timeout_ms: int | None = None) -> list[PartitionLag]:
        """Every partition the group has committed for or has assigned, in order: its committed offset, log-end
        offset, lag and member, the rows ``kafka-consumer-groups.sh --describe`` prints; ``GroupIdNotFoundError``
        for a group with no members and no committed offsets."""
        deadline = self._core.deadline(timeout_ms)
        try:
            described = await self._describe(group_id, deadline)
        except GroupIdNotFoundError:
            described = None
        committed = await self._committed(group_id, None, deadline)
        if not committed and (described is None or (not described.members and described.state in _NOTHING_LEFT)):
            # Kafka forgets an empty group once its offsets go; Tansu 0.6 describes any unknown id as Empty
            raise GroupIdNotFoundError(f"group {group_id!r} does not exist (no members, no committed offsets)")
        if described is None:
            described = offsets_only(group_id)
        partitions = {tp for m in described.members for tp in m.assignment} | set(committed)
        ends: dict[TopicPartition, int | None] = {}
        for topic, numbers in _by_topic(partitions).items():
            try:
                found = await self._list_offsets(
                    {TopicPartition(topic, p): LATEST_TIMESTAMP for p in numbers}, deadline
                )
            except UnknownTopicOrPartitionError:  # deleted since: its rows show no log end
                continue
            ends.update(found)
        return group_lag(described, committed, ends)

    @both_faces
    async def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        *,
        timeout_ms: int | None = None,
    ) -> None:
        """Sets the group's committed offsets. Refused, with nothing changed, while the group has members
        (``NonEmptyGroupError`` naming its state and members), as Kafka's ``kafka-consumer-groups.sh`` refuses; an
        offset below 0 is an ``InvalidOffsetError`` naming the partition, before anything is sent."""
        given = {tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o) for tp, o in offsets.items()}
        for tp, offset in sorted(given.items()):
            if not isinstance(tp, TopicPartition):
                raise TypeError(f"offsets are keyed by TopicPartition, got {tp!r}")
            if offset.offset < 0:
                raise InvalidOffsetError(f"offset {offset.offset} for {tp} of group {group_id!r} is below 0")
        deadline = self._core.deadline(timeout_ms)
        await self._refuse_if_active(group_id, deadline)
        topics = tuple(
            OffsetCommitRequestTopic(
                name=topic,
                partitions=tuple(
                    OffsetCommitRequestPartition(
                        partition_index=p,
                        committed_offset=given[TopicPartition(topic, p)].offset,
                        committed_leader_epoch=given[TopicPartition(topic, p)].leader_epoch or -1,
                        committed_metadata=given[TopicPartition(topic, p)].metadata,
                    )
                    for p in parts
                ),
            )
            for topic, parts in _by_topic(given).items()
        )
        request = OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=-1, member_id="", topics=topics)

        await self._ask_each(
            request, CoordinatorOf(group_id), deadline, OffsetCommitResponse, lambda r: commit_errors(r, group_id)
        )

    async def _refuse_if_active(self, group_id: str, deadline_ms: int) -> None:
        """``NonEmptyGroupError`` if the group has members (a group that does not exist yet may be given offsets)."""
        try:
            described = await self._describe(group_id, deadline_ms)
        except GroupIdNotFoundError:
            return
        if described.members or described.state.lower() not in ("empty", "dead", ""):
            raise NonEmptyGroupError(
                f"group {group_id!r} is {described.state} with {len(described.members)} member(s): its offsets can "
                "be altered or reset only while it has none (stop its consumers first)"
            )

    @both_faces
    async def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> None:
        """Deletes the group's committed offsets of ``partitions``; ``GroupSubscribedToTopicError`` for a topic the
        group's members are subscribed to (nothing of it is deleted)."""
        by_topic = _by_topic(partitions)
        topics = tuple(
            OffsetDeleteRequestTopic(
                name=t, partitions=tuple(OffsetDeleteRequestPartition(partition_index=p) for p in ps)
            )
            for t, ps in by_topic.items()
        )
        request = OffsetDeleteRequest(group_id=group_id, topics=topics)

        await self._ask_each(
            request,
            CoordinatorOf(group_id),
            self._core.deadline(timeout_ms),
            OffsetDeleteResponse,
            lambda r: offset_delete_errors(r, group_id),
        )

    @both_faces
    async def list_offsets(
        self, specs: Mapping[TopicPartition, OffsetSpec], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, int | None]:
        """Each partition's offset at ``"earliest"``, ``"latest"`` or a timestamp (the first record at or after it;
        None when every record is older), asked of its leader; ``UnknownTopicOrPartitionError`` naming a partition
        that does not exist."""
        timestamps: dict[TopicPartition, int] = {}
        for tp, spec in specs.items():
            if spec == "earliest":
                timestamps[tp] = EARLIEST_TIMESTAMP
            elif spec == "latest":
                timestamps[tp] = LATEST_TIMESTAMP
            elif isinstance(spec, int) and not isinstance(spec, bool) and spec >= 0:
                timestamps[tp] = spec
            else:
                raise ValueError(
                    f"the offset spec for {tp} must be 'earliest', 'latest' or a timestamp >= 0, got {spec!r}"
                )
        return await self._list_offsets(timestamps, self._core.deadline(timeout_ms))

    async def _list_offsets(
        self, timestamps: Mapping[TopicPartition, int], deadline: int
    ) -> dict[TopicPartition, int | None]:
        metadata = await self._metadata(sorted({tp.topic for tp in timestamps}), deadline)
        leaders: dict[TopicPartition, int] = {}
        for topic in metadata.topics:
            for p in topic.partitions:
                leaders[TopicPartition(topic.name or "", p.partition_index)] = p.leader_id
        for tp in sorted(timestamps):
            if tp not in leaders:
                raise UnknownTopicOrPartitionError(f"partition {tp} does not exist")
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in sorted(timestamps):
            by_leader.setdefault(leaders[tp], []).append(tp)
        found: dict[TopicPartition, int | None] = {}
        for leader, tps in sorted(by_leader.items()):
            request = ListOffsetsRequest(
                replica_id=CONSUMER_REPLICA_ID,
                topics=tuple(
                    ListOffsetsTopic(
                        name=t,
                        partitions=tuple(
                            ListOffsetsPartition(partition_index=p, timestamp=timestamps[TopicPartition(t, p)])
                            for p in ps
                        ),
                    )
                    for t, ps in _by_topic(tps).items()
                ),
            )

            def read(answer: AdminAnswer, request: ListOffsetsRequest = request) -> dict[TopicPartition, int | None]:
                response = _typed(answer.response, ListOffsetsResponse, request)
                got: dict[TopicPartition, int | None] = {}
                for t in response.topics:
                    for p in t.partitions:
                        tp = TopicPartition(t.name, p.partition_index)
                        if p.error_code != ErrorCode.NONE:
                            raise for_code(p.error_code, f"listing the offset of {tp}")
                        got[tp] = p.offset if p.offset >= 0 else None
                return got

            found.update(await self._ask(request, leader, deadline, read))
        return dict(sorted(found.items()))

    # --- topics and the cluster ----------------------------------------------------------------------------------
    @both_faces
    async def list_topics(self, *, internal: bool = False, timeout_ms: int | None = None) -> set[str]:
        """Every topic's name; ``internal`` adds ``__consumer_offsets`` and the like."""
        return topic_names(await self._metadata(None, self._core.deadline(timeout_ms)), internal=internal)

    @both_faces
    async def describe_topics(
        self, names: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, TopicDescription]:
        """Each topic's id and partitions (leader, replicas, in-sync replicas)."""
        wanted = _names(names, "names")
        metadata = await self._metadata(wanted, self._core.deadline(timeout_ms))
        return topic_descriptions(metadata, wanted)

    @both_faces
    async def create_topics(
        self, new_topics: Iterable[NewTopic], *, validate_only: bool = False, timeout_ms: int | None = None
    ) -> None:
        """Creates the topics (``validate_only``: checks them and creates none); ``TopicAlreadyExistsError``,
        ``InvalidPartitionsError``, ``InvalidReplicationFactorError`` or ``InvalidConfigError`` with the broker's
        message naming the first topic refused (the others are created)."""
        topics = list(new_topics)
        for topic in topics:
            if not isinstance(topic, NewTopic):
                raise TypeError(f"create_topics takes NewTopic values, got {topic!r}")
        deadline = self._core.deadline(timeout_ms)
        request = CreateTopicsRequest(
            topics=tuple(
                CreatableTopic(
                    name=t.name,
                    num_partitions=t.num_partitions,
                    replication_factor=t.replication_factor,
                    configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()),
                )
                for t in topics
            ),
            timeout_ms=max(deadline - self._core.clock.now_ms(), 0),
            validate_only=validate_only,
        )
        await self._ask_each(request, None, deadline, CreateTopicsResponse, topic_create_errors)

    @both_faces
    async def delete_topics(self, names: Iterable[str], *, timeout_ms: int | None = None) -> None:
        """Deletes the topics; ``UnknownTopicOrPartitionError`` naming the first that does not exist."""
        wanted = _names(names, "names")
        deadline = self._core.deadline(timeout_ms)
        request = DeleteTopicsRequest(
            topic_names=tuple(wanted), timeout_ms=max(deadline - self._core.clock.now_ms(), 0)
        )
        await self._ask_each(request, None, deadline, DeleteTopicsResponse, topic_delete_errors)

    @both_faces
    async def create_partitions(self, counts: Mapping[str, int], *, timeout_ms: int | None = None) -> None:
        """Raises each topic's partition count to the one given (``InvalidPartitionsError`` if not above what it
        has)."""
        deadline = self._core.deadline(timeout_ms)
        request = CreatePartitionsRequest(
            topics=tuple(CreatePartitionsTopic(name=t, count=c) for t, c in sorted(counts.items())),
            timeout_ms=max(deadline - self._core.clock.now_ms(), 0),
        )
        await self._ask_each(request, None, deadline, CreatePartitionsResponse, partitions_create_errors)

    @both_faces
    async def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        """The cluster's id, controller and brokers (DescribeCluster; Metadata where a broker lacks it)."""
        deadline = self._core.deadline(timeout_ms)
        request = DescribeClusterRequest()
        try:
            return await self._ask(
                request,
                None,
                deadline,
                lambda a: cluster_description(_typed(a.response, DescribeClusterResponse, request)),
            )
        except UnsupportedVersionError:
            metadata = await self._metadata((), deadline)
            brokers = tuple(
                sorted((BrokerNode(b.node_id, b.host, b.port, b.rack) for b in metadata.brokers), key=lambda b: b.id)
            )
            return ClusterDescription(metadata.cluster_id or "", metadata.controller_id, brokers)

    # --- configs -------------------------------------------------------------------------------------------------
    @both_faces
    async def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Every config of each resource (topics, groups, brokers, client-metrics subscriptions) by name, with
        where its value comes from; a broker's asked of that broker. The first resource the broker refuses raises
        its error (``UnknownTopicOrPartitionError`` for a topic that does not exist), naming it."""
        deadline = self._core.deadline(timeout_ms)
        found: dict[ConfigResource, dict[str, ConfigEntry]] = {}
        errors: dict[ConfigResource, KafkaError] = {}
        for broker, chosen in by_broker(resources).items():
            request = describe_request(chosen, synonyms=include_synonyms, documentation=include_documentation)

            def read(
                answer: AdminAnswer, request: Request = request, chosen: list[ConfigResource] = chosen
            ) -> tuple[dict[ConfigResource, dict[str, ConfigEntry]], dict[ConfigResource, KafkaError]]:
                return described_configs(chosen, _typed(answer.response, DescribeConfigsResponse, request))

            configs, refused = await self._ask(request, broker, deadline, read)
            found.update(configs)
            errors.update(refused)
        _first_error(errors)
        return dict(sorted(found.items()))

    @both_faces
    async def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        """Applies each resource's changes (set, delete, append, subtract), leaving its other configs as they are;
        ``validate_only`` checks them and changes nothing. A resource is changed whole or not at all; the first one
        refused raises its error with the broker's message (``InvalidConfigError`` naming the key and its bound)."""
        checked = check_changes(changes)
        deadline = self._core.deadline(timeout_ms)
        errors: dict[ConfigResource, KafkaError] = {}
        for broker, chosen in by_broker(checked).items():
            request = alter_request(checked, chosen, validate_only)

            def read(
                answer: AdminAnswer, request: Request = request, chosen: list[ConfigResource] = chosen
            ) -> dict[ConfigResource, KafkaError]:
                return alter_errors(chosen, _typed(answer.response, IncrementalAlterConfigsResponse, request))

            errors.update(await self._ask(request, broker, deadline, read))
        _first_error(errors)


def _names(names: Iterable[str], what: str) -> list[str]:
    if isinstance(names, str):
        raise TypeError(f"{what} takes a list of names, not one string")
    wanted = list(names)
    for name in wanted:
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what}: names are non-empty strings, got {name!r}")
    return wanted
