"""Metadata: bootstrap, periodic refresh, refresh on demand, and waiters for topics.

It also answers the delegate's question "where is node N?", with bootstrap servers as nodes -1, -2, ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer._state.cluster import Broker, Cluster, TopicInfo
from asyncconsumer.errors import ErrorCode, KafkaError, for_code
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.managers.request_state import ExponentialBackoff, RequestState
from asyncconsumer.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from asyncconsumer.records import PartitionInfo

log = get_logger("asyncconsumer.metadata")

MetadataListener = Callable[[Cluster, frozenset[str]], None]
"""Called after each metadata response with the new cluster and the topics the response named."""


@attrs.define(slots=True)
class _TopicWaiter:
    topic: str | None
    on_done: Callable[[Cluster], None]
    on_error: Callable[[KafkaError], None]


class MetadataManager:
    """Keeps ``cluster`` fresh for the topics anyone is interested in."""

    def __init__(
        self,
        bootstrap_servers: Iterable[str],
        metadata_max_age_ms: int,
        backoff: ExponentialBackoff,
        rebootstrap_trigger_ms: int | None = None,
    ) -> None:
        self.bootstrap: dict[int, tuple[str, int]] = {}
        for i, server in enumerate(bootstrap_servers):
            host, _, port = server.rpartition(":")
            self.bootstrap[-(i + 1)] = (host.strip("[]"), int(port))
        self.cluster = Cluster()
        self._max_age_ms = metadata_max_age_ms
        self._unknown_topic_age_ms = min(metadata_max_age_ms, backoff.maximum_ms)
        """While a topic of interest is unknown (not created yet, or gone with a restarted broker), metadata is
        refreshed this often rather than every ``metadata_max_age_ms``, as Java's consumer keeps asking."""
        self._state = RequestState(backoff)
        self._last_refresh_ms: int | None = None
        self._update_requested = True
        self._interest: set[str] = set()
        self._want_all_topics = False
        self.all_topics_always = False
        """Every refresh asks for every topic (pattern subscriptions need to see new topics)."""
        self._waiters: list[_TopicWaiter] = []
        self._listeners: list[MetadataListener] = []
        self.last_error: KafkaError | None = None
        self._rebootstrap_trigger_ms = rebootstrap_trigger_ms
        """``metadata_recovery_rebootstrap_trigger_ms`` under the ``rebootstrap`` strategy; None: never."""
        self.rebootstrapping = False
        """Asking the bootstrap servers again (KIP-899): every known broker failed, or no metadata came for too long,
        or a broker said REBOOTSTRAP_REQUIRED. Ends with the next metadata response."""
        self.rebootstraps = 0
        self._wanted_since_ms: int | None = None
        """Since when a refresh is wanted and none has succeeded (KIP-1102's trigger counts from here)."""

    # --- the delegate's node directory ----------------------------------------------------------------------
    def address(self, node_id: int) -> tuple[str, int] | None:
        broker = self.cluster.brokers.get(node_id)
        if broker is not None:
            return broker.host, broker.port
        return self.bootstrap.get(node_id)

    def candidate_nodes(self) -> list[int]:
        """Nodes a request for 'any node' may go to: known brokers, else the bootstrap servers; while
        rebootstrapping, the bootstrap servers first."""
        if self.rebootstrapping:
            return [*self.bootstrap, *self.cluster.brokers]
        return list(self.cluster.brokers) or list(self.bootstrap)

    def rebootstrap(self, reason: str) -> None:
        """Asks the bootstrap servers for metadata again (KIP-899), when the strategy allows it."""
        if self._rebootstrap_trigger_ms is None or self.rebootstrapping:
            return
        self.rebootstrapping = True
        self.rebootstraps += 1
        self._update_requested = True
        log.info("metadata.rebootstrap", reason=reason, bootstrap=[f"{h}:{p}" for h, p in self.bootstrap.values()])

    # --- interest ------------------------------------------------------------------------------------------
    def add_listener(self, listener: MetadataListener) -> None:
        self._listeners.append(listener)

    def set_topics(self, topics: Iterable[str]) -> None:
        """The topics the consumer needs (its assignment); new ones trigger a refresh."""
        wanted = set(topics)
        if not wanted <= self._interest or not wanted:
            self._update_requested = True
        self._interest = wanted

    def request_update(self) -> None:
        self._update_requested = True

    def await_topic(
        self, topic: str | None, on_done: Callable[[Cluster], None], on_error: Callable[[KafkaError], None]
    ) -> None:
        """Calls ``on_done`` after the next metadata response that covers ``topic`` (None = every topic)."""
        if topic is None:
            self._want_all_topics = True
        self._waiters.append(_TopicWaiter(topic, on_done, on_error))
        self._update_requested = True

    # --- the manager contract -------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        due = self._update_requested or self._last_refresh_ms is None or now_ms >= self._refresh_due_ms()
        if not due:
            self._wanted_since_ms = None
            return PollResult(self._refresh_due_ms() - now_ms)
        if self._wanted_since_ms is None:
            self._wanted_since_ms = now_ms
        trigger = self._rebootstrap_trigger_ms
        if trigger is not None and self._last_refresh_ms is not None and now_ms - self._wanted_since_ms >= trigger:
            self._wanted_since_ms = now_ms
            self.rebootstrap(f"no metadata for {trigger} ms")
        if not self._state.can_send_request(now_ms):
            wait = self._state.remaining_backoff_ms(now_ms)
            return PollResult(wait if wait > 0 else self._max_age_ms)
        self._state.on_send_attempt(now_ms)
        self._update_requested = False
        extra = {w.topic for w in self._waiters if w.topic is not None}
        all_topics = self._want_all_topics or self.all_topics_always
        topics = None if all_topics else tuple(sorted(self._interest | extra))
        request = MetadataRequest(
            topics=None if topics is None else tuple(MetadataRequestTopic(name=t) for t in topics),
            allow_auto_topic_creation=False,
        )

        def on_response(result: object, now: int) -> None:
            self._on_response(result, now, all_topics)

        log.debug("metadata.request", topics=topics)
        return PollResult(self._max_age_ms, (UnsentRequest(request, None, on_response),))

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()

    def _refresh_due_ms(self) -> int:
        assert self._last_refresh_ms is not None
        missing = self._interest & self.cluster.unknown_topics
        return self._last_refresh_ms + (self._unknown_topic_age_ms if missing else self._max_age_ms)

    # --- responses -----------------------------------------------------------------------------------------
    def _on_response(self, result: object, now_ms: int, all_topics: bool) -> None:
        if isinstance(result, KafkaError):
            self._state.on_failed_attempt(now_ms)
            self._update_requested = True
            self.last_error = result
            log.info("metadata.failed", error=str(result))
            return
        assert isinstance(result, MetadataResponse)
        if result.error_code == ErrorCode.REBOOTSTRAP_REQUIRED:
            self._state.on_failed_attempt(now_ms)
            self._update_requested = True
            self.rebootstrap("the broker answered REBOOTSTRAP_REQUIRED")
            return
        self._state.on_successful_attempt(now_ms)
        self.rebootstrapping = False
        self._wanted_since_ms = None
        self._last_refresh_ms = now_ms
        self.last_error = None
        brokers = {b.node_id: Broker(b.node_id, b.host, b.port, b.rack) for b in result.brokers}
        topics = dict(self.cluster.topics) if not all_topics else {}
        named: set[str] = set()
        unknown = set(self.cluster.unknown_topics) if not all_topics else set()
        retry = False
        for t in result.topics:
            if t.name is None:
                continue
            named.add(t.name)
            if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                topics.pop(t.name, None)
                unknown.add(t.name)
                continue
            unknown.discard(t.name)
            parts = {
                p.partition_index: PartitionInfo(
                    topic=t.name,
                    partition=p.partition_index,
                    leader=p.leader_id,
                    replicas=tuple(p.replica_nodes),
                    in_sync_replicas=tuple(p.isr_nodes),
                    offline_replicas=tuple(p.offline_replicas),
                    leader_epoch=None if p.leader_epoch < 0 else p.leader_epoch,
                )
                for p in t.partitions
            }
            if t.error_code != ErrorCode.NONE or any(p.leader_id < 0 for p in t.partitions):
                retry = True  # e.g. LEADER_NOT_AVAILABLE while a topic is being created
            topics[t.name] = TopicInfo(t.name, t.error_code, parts, t.topic_id, t.is_internal)
        if retry:
            self._update_requested = True
        self.cluster = Cluster(brokers, topics, result.cluster_id, result.controller_id, frozenset(unknown))
        if all_topics:
            self._want_all_topics = False
        log.debug("metadata.updated", brokers=len(brokers), topics=len(named))
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if waiter.topic is None and not all_topics:
                self._waiters.append(waiter)  # asked for all topics after this request left
                self._want_all_topics = self._update_requested = True
                continue
            if waiter.topic is not None and waiter.topic not in named and not all_topics:
                self._waiters.append(waiter)
                self._update_requested = True
                continue
            info = topics.get(waiter.topic) if waiter.topic is not None else None
            if waiter.topic is not None and waiter.topic in unknown:
                waiter.on_done(self.cluster)
            elif info is not None and info.error_code not in (0, 5):  # 5: LEADER_NOT_AVAILABLE, retriable
                waiter.on_error(for_code(info.error_code, f"topic {waiter.topic!r}"))
            else:
                waiter.on_done(self.cluster)
        for listener in self._listeners:
            listener(self.cluster, frozenset(named))

    def fail_waiters(self, error: KafkaError) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.on_error(error)
