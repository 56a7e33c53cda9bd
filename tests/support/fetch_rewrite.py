"""Read and rewrite Fetch traffic passing a FaultProxy as decoded objects, for tests.

``FetchTap(proxy, rewrite)`` installs a request mutator that remembers each Fetch request (decoded, with its
version, by connection and correlation id) and a response mutator that decodes each Fetch response and calls
``rewrite(exchange)`` with both, which returns ``None`` to forward the response unchanged, a new ``FetchResponse``
to send instead (encoded at the request's version), or raw payload bytes / a ``FrameAction`` as any proxy mutator
may. Every exchange is also kept in ``seen`` as the broker answered it, so a test can check what the broker really
said, e.g. the last stable offset. A response to a request sent before the tap was installed passes unchanged.
Fetch versions this client does not speak cannot be decoded: remove the tap before another client fetches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import attrs

from asyncconsumer.protocol.base import decode_request_frame, encode_response
from asyncconsumer.protocol.messages.fetch import FetchPartition, FetchRequest, FetchResponse, PartitionData
from asyncconsumer.protocol.wire import Reader
from tests.support.faultproxy import API_FETCH, FaultProxy, FrameAction, response_correlation_id

__all__ = ["FetchExchange", "FetchTap", "Rewrite", "with_partitions"]


@attrs.frozen
class FetchExchange:
    """One Fetch request and the response the broker gave to it (before any rewrite)."""

    version: int
    request: FetchRequest
    response: FetchResponse

    def partitions(self) -> Iterator[tuple[str, PartitionData]]:
        """(topic, partition data) of every partition in the response."""
        for topic in self.response.responses:
            for part in topic.partitions:
                yield topic.topic, part

    def requested(self, topic: str, partition: int) -> FetchPartition | None:
        """What the request asked of ``topic``-``partition`` (offset, size limit), or None if it did not ask."""
        for t in self.request.topics:
            if t.topic == topic:
                for p in t.partitions:
                    if p.partition == partition:
                        return p
        return None


Rewrite = Callable[[FetchExchange], "FetchResponse | bytes | FrameAction | None"]


def with_partitions(response: FetchResponse, change: Callable[[str, PartitionData], PartitionData]) -> FetchResponse:
    """``response`` with every partition replaced by ``change(topic, partition)``."""
    return attrs.evolve(
        response,
        responses=tuple(
            attrs.evolve(t, partitions=tuple(change(t.topic, p) for p in t.partitions)) for t in response.responses
        ),
    )


class FetchTap:
    """Decodes the Fetch requests and responses through ``proxy``; see the module docstring.

    Replaces the proxy's request and response mutators; ``remove()`` takes them off again.
    """

    def __init__(self, proxy: FaultProxy, rewrite: Rewrite | None = None) -> None:
        self._proxy = proxy
        self._rewrite = rewrite
        self._lock = threading.Lock()
        self._requests: dict[tuple[int, int], tuple[int, FetchRequest]] = {}
        """(proxy connection, correlation id) -> the request's version and the request."""
        self.seen: list[FetchExchange] = []
        """Every Fetch exchange so far, in arrival order, as the broker answered it."""
        self.rewritten = 0
        """Responses the rewrite replaced (returned something other than None)."""
        proxy.set_request_mutator(self._on_request)
        proxy.set_response_mutator(self._on_response)

    def set_rewrite(self, rewrite: Rewrite | None) -> None:
        self._rewrite = rewrite

    def remove(self) -> None:
        self._proxy.set_request_mutator(None)
        self._proxy.set_response_mutator(None)

    def exchanges(self) -> list[FetchExchange]:
        with self._lock:
            return list(self.seen)

    def _on_request(self, api_key: int, payload: bytes) -> None:
        if api_key == API_FETCH:
            _, version, correlation_id, _, request = decode_request_frame(payload, {API_FETCH: FetchRequest})
            assert isinstance(request, FetchRequest)
            with self._lock:
                self._requests[(self._proxy.mutating_connection, correlation_id)] = (version, request)
        return None

    def _on_response(self, api_key: int, payload: bytes) -> bytes | FrameAction | None:
        if api_key != API_FETCH:
            return None
        correlation_id = response_correlation_id(payload)
        with self._lock:
            sent = self._requests.pop((self._proxy.mutating_connection, correlation_id), None)
        if sent is None:
            return None  # its request went out before the tap was installed
        version, request = sent
        reader = Reader(payload, 4)
        if version >= FetchRequest.FLEXIBLE_FROM:
            reader.skip_tags()
        response = FetchResponse.decode(reader, version)
        exchange = FetchExchange(version, request, response)
        with self._lock:
            self.seen.append(exchange)
        rewrite = self._rewrite
        result = rewrite(exchange) if rewrite is not None else None
        if result is None:
            return None
        self.rewritten += 1
        if isinstance(result, FetchResponse):
            return encode_response(result, FetchRequest, version, correlation_id)[4:]
        return result
