"""A test-only KIP-848 group coordinator in front of a real broker that lacks ConsumerGroupHeartbeat.

``Kip848Shim`` is a Kafka-framing TCP proxy (its own asyncio loop in a daemon thread, like ``FaultProxy``):

* ApiVersions (18) is forwarded and the broker's answer gets ``ConsumerGroupHeartbeat`` (68) versions 0-1
  added (``advertise_api68``; when off, an upstream 68 entry is removed), re-encoded at the request's version.
  A re-encoded answer loses the broker's tagged fields (supported/finalized features);
* ConsumerGroupHeartbeat (68), OffsetCommit (8) and OffsetFetch (9) are answered by the shim itself: it runs
  the groups (epochs, a server-side assignor, KIP-848 reconciliation with safe handoff) and keeps committed
  offsets. These are never forwarded, so every group's offsets live in the shim, classic groups' included;
* everything else is forwarded byte for byte, and the broker's answers relayed unchanged.

Topic ids and partition counts come from the shim's own Metadata v12 requests on a separate upstream
connection, refreshed when a heartbeat names an unknown topic or topic id (at most every 200 ms) and at least
every second while heartbeats arrive. The broker must advertise the shim's port, so that Metadata and
FindCoordinator answers send clients back through the shim.

Reconciliation (per member, on each of its heartbeats), as Kafka's ``CurrentAssignmentBuilder``: the member is
told ``assigned & target`` at once, and what it loses is pending revocation: still its own, so no other member is
given it, until one of its heartbeats lists the partitions it owns without them (an owned list left out, as
unchanged, acknowledges nothing: the member may hold partitions it was sent and has not reported yet). Meanwhile
it keeps its member epoch and gets nothing new. Once it has nothing pending revocation it takes the group epoch
and is given the partitions of its target that no other member has assigned or pending revocation (those follow
on later heartbeats, without an epoch change).

Control calls and snapshots are thread-safe and take effect before they return.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import struct
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import attrs

from asyncconsumer.protocol.base import (
    Request,
    Response,
    decode_request_frame,
    decode_response,
    encode_request,
    encode_response,
)
from asyncconsumer.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from asyncconsumer.protocol.messages.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from asyncconsumer.protocol.messages.metadata import MetadataRequest, MetadataResponse
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
from tests.support.faultproxy import parse_request_header, response_correlation_id
from tests.support.loop_thread import STREAM_LIMIT, LoopThreadServer, close_gracefully

__all__ = [
    "API_CONSUMER_GROUP_HEARTBEAT",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "FENCED_MEMBER_EPOCH",
    "GROUP_AUTHORIZATION_FAILED",
    "GROUP_MAX_SIZE_REACHED",
    "INVALID_REQUEST",
    "NOT_COORDINATOR",
    "STALE_MEMBER_EPOCH",
    "UNKNOWN_MEMBER_ID",
    "UNSUPPORTED_ASSIGNOR",
    "Kip848Shim",
    "MemberView",
    "TopicPartition",
]

API_OFFSET_COMMIT = 8
API_OFFSET_FETCH = 9
API_API_VERSIONS = 18
API_CONSUMER_GROUP_HEARTBEAT = 68

COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
UNKNOWN_MEMBER_ID = 25
GROUP_AUTHORIZATION_FAILED = 30
INVALID_REQUEST = 42
GROUP_MAX_SIZE_REACHED = 81
FENCED_MEMBER_EPOCH = 110
UNSUPPORTED_ASSIGNOR = 112
STALE_MEMBER_EPOCH = 113

TopicPartition = tuple[str, int]
"""``(topic name, partition)``."""

_LOCAL_REQUESTS: dict[int, type[Request]] = {
    API_CONSUMER_GROUP_HEARTBEAT: ConsumerGroupHeartbeatRequest,
    API_OFFSET_COMMIT: OffsetCommitRequest,
    API_OFFSET_FETCH: OffsetFetchRequest,
}
_METADATA_VERSION = 12
_METADATA_MIN_REFRESH_S = 0.2
_METADATA_MAX_AGE_S = 1.0
_METADATA_TIMEOUT_S = 5.0
_MAX_FRAME = 512 * 1024 * 1024
_UPSTREAM_CONNECT_TIMEOUT_S = 10.0


@attrs.frozen
class MemberView:
    """A snapshot of one member as the shim sees it."""

    member_id: str
    member_epoch: int
    previous_epoch: int
    instance_id: str | None
    subscribed_topics: frozenset[str]
    """Names the member subscribed to (regex matches included)."""
    subscribed_regex: str | None
    server_assignor: str
    assigned: frozenset[TopicPartition]
    """What the shim last told the member it may use."""
    target: frozenset[TopicPartition]
    """What the assignor wants the member to have."""
    pending_revocation: frozenset[TopicPartition]
    """Taken from the member, which may still hold them: nobody else gets them until it reports letting go."""
    owned: frozenset[TopicPartition]
    """What the member last reported owning."""
    rebalance_timeout_ms: int


@dataclass
class _Member:
    member_id: str
    server_assignor: str
    last_heartbeat: float
    member_epoch: int = 0
    previous_epoch: int = -1
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topic_names: frozenset[str] = frozenset()
    regex: str | None = None
    owned: frozenset[TopicPartition] = frozenset()
    assigned: frozenset[TopicPartition] = frozenset()
    pending_revocation: frozenset[TopicPartition] = frozenset()
    last_sent: frozenset[TopicPartition] | None = None


@dataclass
class _Group:
    epoch: int = 0
    members: dict[str, _Member] = field(default_factory=dict)
    targets: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)
    fenced: set[str] = field(default_factory=set)
    """Member ids removed by ``fence()``: their next heartbeat gets FENCED_MEMBER_EPOCH."""
    offsets: dict[TopicPartition, tuple[int, int, str | None]] = field(default_factory=dict)
    """(topic, partition) -> (offset, leader epoch, metadata)."""


class _Connection:
    """One client connection and, once something is forwarded, its upstream connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.write_lock = asyncio.Lock()
        self.upstream_reader: asyncio.StreamReader | None = None
        self.upstream_writer: asyncio.StreamWriter | None = None
        self.upstream_pump: asyncio.Task[None] | None = None
        self.pending: dict[int, tuple[int, int]] = {}
        """correlation id -> (api key, version) of forwarded requests not answered yet."""
        self.closed = False

    def writers(self) -> list[asyncio.StreamWriter]:
        return [w for w in (self.writer, self.upstream_writer) if w is not None]

    def abort(self) -> None:
        self.closed = True
        for writer in self.writers():
            writer.transport.abort()


class _ShimError(Exception):
    """A heartbeat answered with an error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Kip848Shim(LoopThreadServer[_Connection]):
    """A KIP-848 coordinator shim on ``host``; see the module docstring."""

    _what = "the KIP-848 shim"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        heartbeat_interval_ms: int = 250,
        session_timeout_ms: int = 3000,
        assignors: Iterable[str] = ("uniform", "range"),
        default_assignor: str = "uniform",
        max_group_size: int | None = None,
        advertise_api68: bool = True,
    ) -> None:
        super().__init__(host, port)
        self._target: tuple[str, int] | None = None
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.session_timeout_ms = session_timeout_ms
        self._assignors = tuple(assignors)
        if default_assignor not in self._assignors:
            raise ValueError(f"default assignor {default_assignor!r} is not one of {self._assignors}")
        self._default_assignor = default_assignor
        self._max_group_size = max_group_size
        self._advertise_api68 = advertise_api68

        self._groups: dict[str, _Group] = {}
        self._fail_code = 0
        self._fail_remaining = 0
        self._member_ids = itertools.count(1)

        self._topics: dict[str, tuple[uuid.UUID, int]] = {}
        """Topic name -> (topic id, partition count), from the shim's own Metadata requests."""
        self._topic_names: dict[uuid.UUID, str] = {}
        self._metadata_at = float("-inf")
        self._metadata_lock: asyncio.Lock | None = None
        self._metadata_conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._metadata_correlation = itertools.count(1)

        self._counts: Counter[int] = Counter()
        self._heartbeats: list[tuple[str, str, ConsumerGroupHeartbeatRequest, int]] = []
        self.metadata_refreshes = 0
        """Metadata requests the shim sent upstream for itself."""
        self.errors: list[BaseException] = []
        """Unexpected exceptions while serving a connection (that connection was closed)."""

    # --- lifecycle ----------------------------------------------------------------------------------------

    def set_target(self, host: str, port: int) -> None:
        """The upstream broker for connections made from now on (and for the shim's Metadata requests)."""
        self._target = (host, port)

    # --- faults -------------------------------------------------------------------------------------------

    def fail_heartbeats(self, error_code: int, count: int = 1) -> None:
        """Answer the next ``count`` heartbeats (of any member) with ``error_code``; nothing else changes."""
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")

        def apply() -> None:
            self._fail_code, self._fail_remaining = error_code, count

        self._call(apply)

    def fence(self, member_id: str) -> str:
        """Remove the member (its next heartbeat gets FENCED_MEMBER_EPOCH); returns its group id."""

        def apply() -> str:
            for group_id, group in self._groups.items():
                if member_id in group.members:
                    del group.members[member_id]
                    group.fenced.add(member_id)
                    self._recompute(group, bump=True)
                    return group_id
            raise KeyError(f"no group has member {member_id!r}")

        return self._call(apply)

    def set_advertise_api68(self, flag: bool) -> None:
        """Whether ApiVersions answers from now on list ConsumerGroupHeartbeat."""
        self._call(lambda: setattr(self, "_advertise_api68", flag))

    # --- observation --------------------------------------------------------------------------------------

    def members(self, group_id: str) -> dict[str, MemberView]:
        """A snapshot of the group's members (empty for an unknown group)."""

        def snapshot() -> dict[str, MemberView]:
            group = self._groups.get(group_id)
            if group is None:
                return {}
            return {
                member_id: MemberView(
                    member_id=member_id,
                    member_epoch=m.member_epoch,
                    previous_epoch=m.previous_epoch,
                    instance_id=m.instance_id,
                    subscribed_topics=self._subscribed(m),
                    subscribed_regex=m.regex,
                    server_assignor=m.server_assignor,
                    assigned=m.assigned,
                    target=group.targets.get(member_id, frozenset()),
                    pending_revocation=m.pending_revocation,
                    owned=m.owned,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                )
                for member_id, m in group.members.items()
            }

        return self._call(snapshot)

    def group_epoch(self, group_id: str) -> int:
        """The group's epoch (0 for a group the shim has not seen)."""
        return self._call(lambda: self._groups[group_id].epoch if group_id in self._groups else 0)

    def committed(self, group_id: str) -> dict[TopicPartition, int]:
        """The offsets committed to the shim for the group."""
        return self._call(
            lambda: (
                {tp: stored[0] for tp, stored in self._groups[group_id].offsets.items()}
                if group_id in self._groups
                else {}
            )
        )

    @property
    def heartbeats(self) -> list[tuple[str, str, ConsumerGroupHeartbeatRequest, int]]:
        """Every heartbeat received: ``(group id, member id, request, version)``; the member id is the one
        answered (a generated one for a v0 join with an empty id)."""
        return self._call(lambda: list(self._heartbeats))

    @property
    def counts(self) -> Counter[int]:
        """Client requests received, by api key (local and forwarded)."""
        return self._call(lambda: Counter(self._counts))

    def reset_observations(self) -> None:
        """Forget the recorded heartbeats and request counts (not the groups)."""

        def apply() -> None:
            self._heartbeats.clear()
            self._counts.clear()

        self._call(apply)

    # --- the shim's thread --------------------------------------------------------------------------------

    def _thread_name(self) -> str:
        return "kip848-shim"

    def _prepare(self) -> None:
        self._metadata_lock = asyncio.Lock()

    def _abort_connections(self) -> None:
        super()._abort_connections()
        if self._metadata_conn is not None:
            self._metadata_conn[1].transport.abort()
            self._metadata_conn = None

    async def _handle_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connection = _Connection(reader, writer)
        if self._stopped:
            connection.abort()
            return
        self._connections.add(connection)
        self._handlers.add(task)
        try:
            await self._serve(connection)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass  # either side went away
        except Exception as exc:
            self.errors.append(exc)
        finally:
            self._connections.discard(connection)
            connection.closed = True
            pump = connection.upstream_pump
            if pump is not None:
                pump.cancel()
                await asyncio.gather(pump, return_exceptions=True)
            await close_gracefully(connection.writers())
            self._handlers.discard(task)

    async def _serve(self, connection: _Connection) -> None:
        reader = connection.reader
        while not connection.closed:
            prefix = await reader.readexactly(4)
            size = int.from_bytes(prefix, "big", signed=True)
            if not 0 <= size <= _MAX_FRAME:
                return
            payload = await reader.readexactly(size)
            header = parse_request_header(payload)
            self._counts[header.api_key] += 1
            if header.api_key in _LOCAL_REQUESTS:
                answer = await self._answer_locally(payload)
                await self._write_client(connection, answer)
                continue
            if connection.upstream_writer is None and not await self._connect_upstream(connection):
                return
            upstream = connection.upstream_writer
            assert upstream is not None
            connection.pending[header.correlation_id] = (header.api_key, header.api_version)
            upstream.write(prefix + payload)
            await upstream.drain()

    async def _connect_upstream(self, connection: _Connection) -> bool:
        if self._target is None:
            return False
        host, port = self._target
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, limit=STREAM_LIMIT), _UPSTREAM_CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError):
            return False
        connection.upstream_reader, connection.upstream_writer = upstream_reader, upstream_writer
        if connection.closed:
            return False
        connection.upstream_pump = asyncio.create_task(self._relay_upstream(connection, upstream_reader))
        return True

    async def _relay_upstream(self, connection: _Connection, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                prefix = await reader.readexactly(4)
                size = int.from_bytes(prefix, "big", signed=True)
                if not 0 <= size <= _MAX_FRAME:
                    return
                payload = await reader.readexactly(size)
                api_key, version = connection.pending.pop(response_correlation_id(payload), (-1, -1))
                out = prefix + payload
                if api_key == API_API_VERSIONS:
                    out = self._rewrite_api_versions(payload, version) or out
                await self._write_client(connection, out)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        except Exception as exc:
            self.errors.append(exc)
        finally:
            connection.abort()  # the client's read loop then ends and cleans up

    async def _write_client(self, connection: _Connection, data: bytes) -> None:
        async with connection.write_lock:
            if connection.closed:
                return
            connection.writer.write(data)
            await connection.writer.drain()

    def _rewrite_api_versions(self, payload: bytes, version: int) -> bytes | None:
        """The broker's ApiVersions answer with API 68 added (or removed); None to relay it unchanged."""
        answer = decode_response(payload, ApiVersionsRequest, version)
        assert isinstance(answer, ApiVersionsResponse)
        if answer.error_code != 0:
            return None
        others = tuple(k for k in answer.api_keys if k.api_key != API_CONSUMER_GROUP_HEARTBEAT)
        if self._advertise_api68:
            keys = (*others, ApiVersion(api_key=API_CONSUMER_GROUP_HEARTBEAT, min_version=0, max_version=1))
        elif len(others) == len(answer.api_keys):
            return None
        else:
            keys = others
        rewritten = ApiVersionsResponse(
            error_code=answer.error_code, api_keys=keys, throttle_time_ms=answer.throttle_time_ms
        )
        return encode_response(rewritten, ApiVersionsRequest, version, response_correlation_id(payload))

    # --- local answers ------------------------------------------------------------------------------------

    async def _answer_locally(self, payload: bytes) -> bytes:
        api_key, version, correlation_id, _client_id, request = decode_request_frame(payload, _LOCAL_REQUESTS)
        request_type = _LOCAL_REQUESTS[api_key]
        if not request_type.MIN_VERSION <= version <= request_type.MAX_VERSION:
            raise ValueError(f"api {api_key} v{version} is outside what the shim models")
        response: Response
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            response = await self._heartbeat(request, version)
        elif isinstance(request, OffsetCommitRequest):
            response = self._offset_commit(request)
        else:
            assert isinstance(request, OffsetFetchRequest)
            response = self._offset_fetch(request, version)
        return encode_response(response, request_type, version, correlation_id)

    # --- metadata -----------------------------------------------------------------------------------------

    async def _refresh_metadata(self, *, force: bool) -> None:
        """Refresh the topic cache if it is older than the max age, or (``force``) than the min interval."""
        assert self._metadata_lock is not None
        async with self._metadata_lock:
            age = time.monotonic() - self._metadata_at
            if age < (_METADATA_MIN_REFRESH_S if force else _METADATA_MAX_AGE_S):
                return
            try:
                answer = await asyncio.wait_for(self._fetch_metadata(), _METADATA_TIMEOUT_S)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
                if self._metadata_conn is not None:
                    self._metadata_conn[1].transport.abort()
                    self._metadata_conn = None
                return  # keep the old cache
            self.metadata_refreshes += 1
            self._metadata_at = time.monotonic()
            topics: dict[str, tuple[uuid.UUID, int]] = {}
            for t in answer.topics:
                if t.error_code == 0 and t.name is not None and not t.is_internal:
                    topics[t.name] = (t.topic_id, len(t.partitions))
            self._topics = topics
            self._topic_names = {topic_id: name for name, (topic_id, _) in topics.items()}

    async def _fetch_metadata(self) -> MetadataResponse:
        if self._metadata_conn is None:
            if self._target is None:
                raise OSError("the shim has no upstream target")
            self._metadata_conn = await asyncio.open_connection(*self._target, limit=STREAM_LIMIT)
        reader, writer = self._metadata_conn
        correlation_id = next(self._metadata_correlation)
        writer.write(
            encode_request(
                MetadataRequest(topics=None, allow_auto_topic_creation=False),
                _METADATA_VERSION,
                correlation_id,
                "kip848-shim",
            )
        )
        await writer.drain()
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        payload = await reader.readexactly(size)
        if response_correlation_id(payload) != correlation_id:
            raise ValueError("metadata answer for another request")
        answer = decode_response(payload, MetadataRequest, _METADATA_VERSION)
        assert isinstance(answer, MetadataResponse)
        return answer

    def _subscribed(self, member: _Member) -> frozenset[str]:
        names = set(member.topic_names)
        if member.regex is not None:
            with contextlib.suppress(re.error):
                pattern = re.compile(member.regex)
                names.update(t for t in self._topics if pattern.fullmatch(t))
        return frozenset(names)

    # --- ConsumerGroupHeartbeat ---------------------------------------------------------------------------

    async def _heartbeat(self, request: ConsumerGroupHeartbeatRequest, version: int) -> Response:
        if self._fail_remaining > 0:
            self._fail_remaining -= 1
            self._heartbeats.append((request.group_id, request.member_id, request, version))
            return ConsumerGroupHeartbeatResponse(
                error_code=self._fail_code,
                member_id=None,
                member_epoch=0,
                heartbeat_interval_ms=0,
                error_message="injected by the KIP-848 shim",
            )

        # What this heartbeat needs to know about topics; fetched before touching group state, which is then
        # updated without awaiting (so atomically on the shim's loop).
        group = self._groups.get(request.group_id)
        member = group.members.get(request.member_id) if group is not None and request.member_id else None
        names = set(request.subscribed_topic_names or ())
        if member is not None and request.subscribed_topic_names is None:
            names |= member.topic_names
        ids = {tp.topic_id for tp in request.topic_partitions or ()}
        unknown = bool(names - self._topics.keys() or ids - self._topic_names.keys())
        await self._refresh_metadata(force=unknown)

        member_id = request.member_id
        try:
            response, member_id = self._heartbeat_now(request)
        except _ShimError as exc:
            response = ConsumerGroupHeartbeatResponse(
                error_code=exc.code, member_id=None, member_epoch=0, heartbeat_interval_ms=0, error_message=exc.message
            )
        self._heartbeats.append((request.group_id, member_id, request, version))
        return response

    def _heartbeat_now(self, request: ConsumerGroupHeartbeatRequest) -> tuple[ConsumerGroupHeartbeatResponse, str]:
        now = time.monotonic()
        self._expire(now)
        if not request.group_id:
            raise _ShimError(INVALID_REQUEST, "GroupId can't be empty")
        group = self._groups.setdefault(request.group_id, _Group())
        epoch = request.member_epoch

        if epoch in (-1, -2):
            if group.members.pop(request.member_id, None) is not None:
                group.targets.pop(request.member_id, None)
                self._recompute(group, bump=True)
            return ConsumerGroupHeartbeatResponse(
                error_code=0,
                member_id=request.member_id,
                member_epoch=epoch,
                heartbeat_interval_ms=self.heartbeat_interval_ms,
            ), request.member_id

        assignor = request.server_assignor
        if assignor is not None and assignor not in self._assignors:
            raise _ShimError(UNSUPPORTED_ASSIGNOR, f"server assignor {assignor!r} is not supported")

        joined = epoch == 0
        bump = False
        if joined:
            if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
                raise _ShimError(INVALID_REQUEST, "SubscribedTopicNames or SubscribedTopicRegex must be set to join")
            member_id = request.member_id or f"shim-member-{next(self._member_ids)}-{uuid.uuid4().hex[:8]}"
            if (
                member_id not in group.members
                and self._max_group_size is not None
                and len(group.members) >= self._max_group_size
            ):
                raise _ShimError(GROUP_MAX_SIZE_REACHED, f"the group has {len(group.members)} members already")
            group.fenced.discard(member_id)
            member = _Member(member_id, assignor or self._default_assignor, now)
            member.topic_names = frozenset(request.subscribed_topic_names or ())
            member.regex = request.subscribed_topic_regex
            group.members[member_id] = member
            bump = True
        elif epoch < 0:
            raise _ShimError(INVALID_REQUEST, f"MemberEpoch {epoch} is not valid")
        else:
            member_id = request.member_id
            if member_id in group.fenced:
                group.fenced.discard(member_id)
                raise _ShimError(FENCED_MEMBER_EPOCH, f"member {member_id} was fenced")
            found = group.members.get(member_id)
            if found is None:
                raise _ShimError(UNKNOWN_MEMBER_ID, f"member {member_id!r} is not in group {request.group_id}")
            member = found
            if epoch not in (member.member_epoch, member.previous_epoch):
                del group.members[member_id]
                self._recompute(group, bump=True)
                raise _ShimError(
                    FENCED_MEMBER_EPOCH, f"epoch {epoch} is not {member.member_epoch} or {member.previous_epoch}"
                )
            if assignor is not None and assignor != member.server_assignor:
                member.server_assignor = assignor
                bump = True
            if request.subscribed_topic_names is not None:
                names = frozenset(request.subscribed_topic_names)
                bump |= names != member.topic_names
                member.topic_names = names
            if request.subscribed_topic_regex is not None:
                regex = request.subscribed_topic_regex or None  # "" clears the regex
                bump |= regex != member.regex
                member.regex = regex

        reported = None if request.topic_partitions is None else self._names(request.topic_partitions)
        if reported is not None:
            member.owned = reported
        member.last_heartbeat = now
        if request.instance_id is not None:
            member.instance_id = request.instance_id
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        if request.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = request.rebalance_timeout_ms
        self._recompute(group, bump=bump)  # also catches metadata changes (new topics, more partitions)
        self._reconcile(group, member, reported)

        assignment = None
        if joined or member.assigned != member.last_sent or (reported is not None and reported != member.assigned):
            assignment = self._assignment(member.assigned)
            member.last_sent = member.assigned
        response = ConsumerGroupHeartbeatResponse(
            error_code=0,
            member_id=member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            error_message=None,
            assignment=assignment,
        )
        return response, member_id

    def _names(self, topic_partitions: Iterable[TopicPartitions]) -> frozenset[TopicPartition]:
        owned: set[TopicPartition] = set()
        for tp in topic_partitions:
            name = self._topic_names.get(tp.topic_id)
            if name is not None:
                owned.update((name, p) for p in tp.partitions)
        return frozenset(owned)

    def _assignment(self, partitions: frozenset[TopicPartition]) -> Assignment:
        by_topic: dict[str, list[int]] = {}
        for name, partition in partitions:
            by_topic.setdefault(name, []).append(partition)
        return Assignment(
            topic_partitions=tuple(
                TopicPartitions(topic_id=self._topics[name][0], partitions=tuple(sorted(by_topic[name])))
                for name in sorted(by_topic)
                if name in self._topics
            )
        )

    def _expire(self, now: float) -> None:
        deadline = now - self.session_timeout_ms / 1000.0
        for group in self._groups.values():
            expired = [mid for mid, m in group.members.items() if m.last_heartbeat < deadline]
            for member_id in expired:
                del group.members[member_id]
            if expired:
                self._recompute(group, bump=True)

    def _recompute(self, group: _Group, *, bump: bool) -> None:
        """New targets for every member; the group epoch moves when ``bump`` or when a target changed."""
        targets = self._assign(group)
        if bump or targets != group.targets:
            group.epoch += 1
        group.targets = targets

    def _assign(self, group: _Group) -> dict[str, frozenset[TopicPartition]]:
        """Per topic, its partitions in contiguous ranges over the subscribed members sorted by member id.

        ``range`` gives the extra partitions of every topic to the first members; ``uniform`` rotates which
        members get them, topic by topic, so totals stay even across topics. The group's assignor is the one
        most members ask for (ties: by name)."""
        targets: dict[str, set[TopicPartition]] = {mid: set() for mid in group.members}
        if not group.members:
            return {}
        votes = Counter(m.server_assignor for m in group.members.values())
        assignor = min(votes, key=lambda name: (-votes[name], name))
        subscriptions = {mid: self._subscribed(m) for mid, m in group.members.items()}
        topics = sorted(set().union(*subscriptions.values()) & self._topics.keys())
        for index, topic in enumerate(topics):
            subscribers = sorted(mid for mid, names in subscriptions.items() if topic in names)
            count = self._topics[topic][1]
            base, extra = divmod(count, len(subscribers))
            shift = index % len(subscribers) if assignor != "range" else 0
            order = subscribers[shift:] + subscribers[:shift]
            sizes = {mid: base + (1 if rank < extra else 0) for rank, mid in enumerate(order)}
            start = 0
            for mid in subscribers:
                targets[mid].update((topic, p) for p in range(start, start + sizes[mid]))
                start += sizes[mid]
        return {mid: frozenset(tps) for mid, tps in targets.items()}

    def _reconcile(self, group: _Group, member: _Member, reported: frozenset[TopicPartition] | None) -> None:
        """Move the member's ``assigned`` toward its target without two members ever holding a partition.

        ``reported`` is the owned list of the heartbeat being answered, None when it was left out. As in Kafka's
        ``CurrentAssignmentBuilder.ownsRevokedPartitions``, only a list without them acknowledges a revocation."""

        def still_owns(partitions: frozenset[TopicPartition]) -> bool:
            return bool(partitions) and (reported is None or bool(reported & partitions))

        if still_owns(member.pending_revocation):
            return  # Kafka's UNREVOKED_PARTITIONS: the epoch waits until the member reports it let go
        member.pending_revocation = frozenset()
        target = group.targets.get(member.member_id, frozenset())
        keep = member.assigned & target
        revoked = member.assigned - target
        if still_owns(revoked):
            member.assigned, member.pending_revocation = keep, revoked  # revoke first
            return
        taken: set[TopicPartition] = set()
        for other in group.members.values():
            if other is not member:
                taken |= other.assigned | other.pending_revocation
        member.assigned = keep | frozenset(tp for tp in target - keep if tp not in taken)
        if member.member_epoch != group.epoch:
            member.previous_epoch, member.member_epoch = member.member_epoch, group.epoch

    # --- offsets ------------------------------------------------------------------------------------------

    def _offset_commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        group = self._groups.setdefault(request.group_id, _Group())
        epoch = request.generation_id_or_member_epoch
        member = group.members.get(request.member_id) if request.member_id else None
        code = 0
        if member is None:
            if epoch >= 0:
                code = UNKNOWN_MEMBER_ID
        elif epoch < member.member_epoch:
            code = STALE_MEMBER_EPOCH
        elif epoch > member.member_epoch:
            code = FENCED_MEMBER_EPOCH
        topics = []
        for topic in request.topics:
            for p in topic.partitions if code == 0 else ():
                group.offsets[(topic.name, p.partition_index)] = (
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.committed_metadata,
                )
            partitions = tuple(
                OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                for p in topic.partitions
            )
            topics.append(OffsetCommitResponseTopic(name=topic.name, partitions=partitions))
        return OffsetCommitResponse(topics=tuple(topics))

    def _offset_fetch(self, request: OffsetFetchRequest, version: int) -> OffsetFetchResponse:
        if request.groups:  # v8+ asks per group; our client asks for one
            group_id, asked = request.groups[0].group_id, request.groups[0].topics
        else:
            group_id, asked = request.group_id, request.topics
        group = self._groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        wanted: dict[str, list[int]] = {}
        if asked is None:
            for name, partition in sorted(offsets):
                wanted.setdefault(name, []).append(partition)
        else:
            for t in asked:
                wanted.setdefault(t.name, []).extend(t.partition_indexes)
        rows = {
            name: [(p, *offsets.get((name, p), (-1, -1, ""))) for p in partitions]
            for name, partitions in wanted.items()
        }
        if version >= 8:
            topics = tuple(
                OffsetFetchResponseTopics(
                    name=name,
                    partitions=tuple(
                        OffsetFetchResponsePartitions(
                            partition_index=p, committed_offset=o, committed_leader_epoch=e, metadata=m
                        )
                        for p, o, e, m in answers
                    ),
                )
                for name, answers in rows.items()
            )
            return OffsetFetchResponse(groups=(OffsetFetchResponseGroup(group_id=group_id, topics=topics),))
        return OffsetFetchResponse(
            topics=tuple(
                OffsetFetchResponseTopic(
                    name=name,
                    partitions=tuple(
                        OffsetFetchResponsePartition(
                            partition_index=p, committed_offset=o, committed_leader_epoch=e, metadata=m
                        )
                        for p, o, e, m in answers
                    ),
                )
                for name, answers in rows.items()
            )
        )

    def __repr__(self) -> str:
        where = f"{self._listen[0]}:{self._port}" if self._port is not None else "not started"
        return f"<Kip848Shim {where} -> {self._target}>"
