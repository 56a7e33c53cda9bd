"""The fault proxy: first against a stand-in upstream over raw sockets (exact bytes), then with aiokafka's
consumer and producer against a real Tansu broker that advertises the proxy (the ``proxied_broker`` fixture)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import socketserver
import struct
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.client import AIOKafkaClient
from aiokafka.errors import CorruptRecordException, KafkaConnectionError

from tests.conftest import ProxiedBroker
from tests.support.faultproxy import (
    API_FETCH,
    API_METADATA,
    CLOSE,
    DROP,
    UNKNOWN_API,
    Direction,
    FaultProxy,
    FrameAction,
    flip_byte,
    frame,
    parse_request_header,
    request_api_key,
    response_correlation_id,
    truncated_frame,
)
from tests.support.produce import Record
from tests.support.waiting import wait_for, wait_for_async

pytestmark = pytest.mark.broker

# --- a stand-in upstream: answers every request frame with "re:" + its body ------------------------------------


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        while True:
            prefix = _recv_exact(sock, 4)
            if len(prefix) < 4:
                return
            payload = _recv_exact(sock, int.from_bytes(prefix, "big"))
            header = parse_request_header(payload)
            body = payload[10 + len(header.client_id or "") :]
            correlation_id = header.correlation_id
            if body.startswith(b"big:"):
                answer = (bytes(range(256)) * (int(body[4:]) // 256 + 1))[: int(body[4:])]
            elif body == b"stray":
                correlation_id, answer = correlation_id + 1000, b"nobody asked"
            else:
                answer = b"re:" + body
            sock.sendall(frame(struct.pack(">i", correlation_id) + answer))


class _Upstream(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def upstream() -> Iterator[_Upstream]:
    server = _Upstream(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def proxy(upstream: _Upstream) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", upstream.server_address[1]) as started:
        yield started
    assert not started.mutator_errors


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    """Up to ``n`` bytes: fewer only if the peer closed."""
    chunks = bytearray()
    while len(chunks) < n:
        try:
            chunk = sock.recv(n - len(chunks))
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks += chunk
    return bytes(chunks)


def _request(api_key: int, correlation_id: int, body: bytes, *, version: int = 0, client_id: str = "c1") -> bytes:
    encoded = client_id.encode()
    return struct.pack(">hhih", api_key, version, correlation_id, len(encoded)) + encoded + body


def _recv_frame(sock: socket.socket) -> bytes:
    prefix = _recv_exact(sock, 4)
    assert len(prefix) == 4, f"connection closed, got {prefix!r}"
    payload = _recv_exact(sock, int.from_bytes(prefix, "big"))
    assert len(payload) == int.from_bytes(prefix, "big"), "frame cut short"
    return payload


@contextlib.contextmanager
def _client(proxy: FaultProxy) -> Iterator[socket.socket]:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5.0) as sock:
        yield sock


def test_frame_helpers() -> None:
    payload = _request(1, 77, b"xyz", version=11, client_id="me")
    assert request_api_key(payload) == 1
    assert parse_request_header(payload) == parse_request_header(payload[:14])  # header only
    header = parse_request_header(payload)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (1, 11, 77, "me")
    assert response_correlation_id(struct.pack(">i", -5) + b"rest") == -5
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert truncated_frame(b"abcdef", 2) == b"\x00\x00\x00\x06ab"
    assert flip_byte(b"\x00\x0f\xff", 1) == b"\x00\xf0\xff"
    assert flip_byte(b"ab", -1) == b"a\x9d"
    with pytest.raises(IndexError):
        flip_byte(b"ab", 2)
    with pytest.raises(ValueError):
        parse_request_header(b"\x00\x01")


def test_forwards_whole_frames_and_tells_mutators_which_api_a_response_answers(proxy: FaultProxy) -> None:
    seen: list[tuple[Direction, int, bytes]] = []
    proxy.set_request_mutator(lambda key, payload: seen.append((Direction.REQUEST, key, payload)))
    proxy.set_response_mutator(lambda key, payload: seen.append((Direction.RESPONSE, key, payload)))
    first, second = _request(API_FETCH, 1, b"one", version=11), _request(API_METADATA, 2, b"two", version=5)
    wire = frame(first) + frame(second)

    with _client(proxy) as sock:
        for i in range(6):  # the first bytes one at a time: the proxy must reassemble frames
            sock.sendall(wire[i : i + 1])
        sock.sendall(wire[6:])
        responses = [_recv_frame(sock), _recv_frame(sock)]

    assert responses == [struct.pack(">i", 1) + b"re:one", struct.pack(">i", 2) + b"re:two"]
    requests = [(key, payload) for direction, key, payload in seen if direction is Direction.REQUEST]
    answers = [(key, payload) for direction, key, payload in seen if direction is Direction.RESPONSE]
    assert requests == [(API_FETCH, first), (API_METADATA, second)]
    assert answers == [(API_FETCH, responses[0]), (API_METADATA, responses[1])]
    assert proxy.frames_forwarded == {"request": 2, "response": 2}
    assert proxy.bytes_forwarded[Direction.REQUEST] == len(wire)
    assert proxy.requests_by_api == {API_FETCH: 1, API_METADATA: 1}
    assert proxy.request_versions == {API_FETCH: {11}, API_METADATA: {5}}
    assert proxy.connections_by_client_id == {"c1": 1}
    wait_for(lambda: proxy.connections_closed == 1, 5.0)
    assert proxy.connections_accepted == 1 and proxy.active_connections == 0


def test_mutators_rewrite_drop_and_close(proxy: FaultProxy) -> None:
    def mutate(api_key: int, payload: bytes) -> bytes | FrameAction | None:
        body = payload[4:]
        if body == b"re:rewrite":
            return payload[:4] + b"a much longer replacement"
        if body == b"re:drop":
            return DROP
        if body == b"re:close":
            return CLOSE
        return None

    proxy.set_response_mutator(mutate)
    with _client(proxy) as sock:
        sock.sendall(frame(_request(API_FETCH, 1, b"rewrite")))
        assert _recv_frame(sock) == struct.pack(">i", 1) + b"a much longer replacement"
        sock.sendall(frame(_request(API_FETCH, 2, b"drop")) + frame(_request(API_FETCH, 3, b"after")))
        assert _recv_frame(sock) == struct.pack(">i", 3) + b"re:after"  # 2 was swallowed
        sock.sendall(frame(_request(API_FETCH, 4, b"close")))
        assert _recv_exact(sock, 1) == b""
    assert proxy.frames_dropped[Direction.RESPONSE] == 1


def test_raw_mutator_sends_a_truncated_frame_under_the_original_size(proxy: FaultProxy) -> None:
    proxy.set_response_mutator(lambda key, payload: truncated_frame(payload, 5), raw=True)
    with _client(proxy) as sock:
        sock.sendall(frame(_request(API_FETCH, 9, b"0123456789")))
        assert _recv_exact(sock, 4 + 5) == struct.pack(">i", 4 + 13) + struct.pack(">i", 9) + b"r"
        assert proxy.drop_connections() == 1
        assert _recv_exact(sock, 1) == b""  # nothing after the cut


def test_drop_mid_response_cuts_the_next_large_responses_then_closes(proxy: FaultProxy) -> None:
    proxy.drop_mid_response(after_bytes=100, count=1)
    with _client(proxy) as sock:
        sock.sendall(frame(_request(API_FETCH, 1, b"small")))
        assert _recv_frame(sock) == struct.pack(">i", 1) + b"re:small"  # not larger than 100 bytes: untouched
        sock.sendall(frame(_request(API_FETCH, 2, b"big:1000")))
        received = _recv_exact(sock, 1004)
    assert received == frame(struct.pack(">i", 2) + (bytes(range(256)) * 4)[:1000])[:100]
    assert proxy.responses_cut == 1

    with _client(proxy) as sock:  # count is used up: the next large response passes
        sock.sendall(frame(_request(API_FETCH, 3, b"big:1000")))
        assert len(_recv_frame(sock)) == 1004


def test_delay_holds_every_frame(proxy: FaultProxy) -> None:
    proxy.set_delay_ms(100)
    with _client(proxy) as sock:
        started = time.monotonic()
        sock.sendall(frame(_request(API_FETCH, 1, b"slow")))
        assert _recv_frame(sock) == struct.pack(">i", 1) + b"re:slow"
        elapsed = time.monotonic() - started
    assert elapsed >= 0.19  # 100 ms on the way there, 100 ms on the way back


def test_blackhole_holds_frames_until_lifted(proxy: FaultProxy) -> None:
    with _client(proxy) as sock:
        proxy.blackhole(True)
        assert proxy.blackholed
        sock.sendall(frame(_request(API_FETCH, 1, b"held")))
        wait_for(lambda: proxy.frames_held == 1, 5.0, message="the request is read and held")
        assert proxy.frames_forwarded == {"request": 0, "response": 0}
        proxy.blackhole(False)
        assert _recv_frame(sock) == struct.pack(">i", 1) + b"re:held"


def test_refused_connections_are_reset_and_counted(proxy: FaultProxy) -> None:
    proxy.refuse_new_connections(True)
    try:
        with _client(proxy) as sock:
            assert _recv_exact(sock, 1) == b""
    except ConnectionResetError:
        pass  # on loopback the reset can beat connect() back to the caller
    assert proxy.connections_refused == 1 and proxy.connections_accepted == 0
    proxy.refuse_new_connections(False)
    with _client(proxy) as sock:
        sock.sendall(frame(_request(API_FETCH, 1, b"ok")))
        assert _recv_frame(sock) == struct.pack(">i", 1) + b"re:ok"


def test_a_raising_mutator_closes_the_connection_and_is_reported(upstream: _Upstream) -> None:
    def broken(api_key: int, payload: bytes) -> bytes | None:
        raise ZeroDivisionError("mutator bug")

    with FaultProxy("127.0.0.1", upstream.server_address[1]) as proxy:
        proxy.set_response_mutator(broken)
        with _client(proxy) as sock:
            sock.sendall(frame(_request(API_FETCH, 1, b"x")))
            assert _recv_exact(sock, 1) == b""
        assert [type(e) for e in proxy.mutator_errors] == [ZeroDivisionError]


def test_a_response_nobody_asked_for_has_an_unknown_api(proxy: FaultProxy) -> None:
    keys: list[int] = []
    proxy.set_response_mutator(lambda key, payload: keys.append(key))
    with _client(proxy) as sock:
        sock.sendall(frame(_request(API_FETCH, 1, b"stray")) + frame(_request(API_FETCH, 2, b"asked")))
        assert response_correlation_id(_recv_frame(sock)) == 1001
        assert response_correlation_id(_recv_frame(sock)) == 2
    assert keys == [UNKNOWN_API, API_FETCH]
    assert proxy.responses_by_api == {UNKNOWN_API: 1, API_FETCH: 1}


def test_stop_closes_open_connections_and_is_idempotent(upstream: _Upstream) -> None:
    proxy = FaultProxy("127.0.0.1", upstream.server_address[1]).start()
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5.0) as sock:
        sock.sendall(frame(_request(API_FETCH, 1, b"hi")))
        assert _recv_frame(sock) == struct.pack(">i", 1) + b"re:hi"
        proxy.blackhole(True)  # a held frame must not keep stop() waiting
        sock.sendall(frame(_request(API_FETCH, 2, b"held")))
        wait_for(lambda: proxy.frames_held == 1, 5.0)
        proxy.stop()
        assert _recv_exact(sock, 1) == b""
    proxy.stop()
    with pytest.raises(RuntimeError, match="not running"):
        proxy.drop_connections()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=5.0).close()


# --- aiokafka through the proxy against the real broker ---------------------------------------------------------


@contextlib.asynccontextmanager
async def _consumer(bootstrap: str, client_id: str, **options: Any) -> AsyncIterator[AIOKafkaConsumer]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        check_crcs=True,
        request_timeout_ms=10_000,
        retry_backoff_ms=50,
        fetch_max_wait_ms=100,
        **options,
    )
    await consumer.start()
    await asyncio.sleep(0)  # aiokafka: stop() right after start() raises CancelledError otherwise
    try:
        yield consumer
    finally:
        await consumer.stop()


async def _read(consumer: AIOKafkaConsumer, n: int, timeout_s: float = 10.0) -> list[bytes | None]:
    values: list[bytes | None] = []

    async def drain() -> None:
        while len(values) < n:
            for records in (await consumer.getmany(timeout_ms=100)).values():
                values.extend(r.value for r in records)

    await asyncio.wait_for(drain(), timeout_s)
    return values


@pytest.mark.anyio
async def test_every_connection_goes_through_the_proxy(proxied_broker: ProxiedBroker) -> None:
    proxy = proxied_broker.proxy
    name = proxied_broker.create_topic(partitions=2)
    produced = await proxied_broker.produce.values_async(name, 20, 2)

    async with _consumer(proxied_broker.bootstrap_servers, "through") as consumer:
        consumer.assign([TopicPartition(name, 0), TopicPartition(name, 1)])
        values = await _read(consumer, 20)
        brokers = {(b.host, b.port) for b in consumer._client.cluster.brokers()}  # no public accessor

    assert sorted(v or b"" for v in values) == sorted(r.value or b"" for rs in produced.values() for r in rs)
    assert brokers == {("127.0.0.1", proxy.port)}
    assert proxy.connections_by_client_id["through"] >= 2  # bootstrap, then the node learned from metadata
    assert proxy.responses_by_api[API_FETCH] >= 1
    assert proxy.responses_by_api[UNKNOWN_API] == 0


@pytest.mark.anyio
async def test_drop_connections_makes_the_consumer_reconnect(proxied_broker: ProxiedBroker) -> None:
    proxy = proxied_broker.proxy
    name = proxied_broker.create_topic(partitions=1)
    await proxied_broker.produce.produce_async(name, [b"before-%d" % i for i in range(5)], partition=0)

    async with _consumer(proxied_broker.bootstrap_servers, "reconnecting") as consumer:
        consumer.assign([TopicPartition(name, 0)])
        assert await _read(consumer, 5) == [b"before-%d" % i for i in range(5)]
        connections = proxy.connections_by_client_id["reconnecting"]

        assert proxy.drop_connections() >= 1
        await proxied_broker.produce.produce_async(name, [b"after-%d" % i for i in range(5)], partition=0)

        assert await _read(consumer, 5) == [b"after-%d" % i for i in range(5)]
        assert proxy.connections_by_client_id["reconnecting"] > connections


@pytest.mark.anyio
async def test_a_flipped_byte_in_fetched_record_data_fails_the_crc_check(proxied_broker: ProxiedBroker) -> None:
    proxy = proxied_broker.proxy
    name = proxied_broker.create_topic(partitions=1)
    marker = b"corrupt-me-please-0001"
    await proxied_broker.produce.produce_async(name, [Record(value=marker, key=b"k")], partition=0)
    flipped: list[int] = []

    def corrupt_once(api_key: int, payload: bytes) -> bytes | None:
        where = payload.find(marker)
        if api_key != API_FETCH or where < 0 or flipped:
            return None
        flipped.append(api_key)
        return flip_byte(payload, where + 3)

    proxy.set_response_mutator(corrupt_once)
    async with _consumer(proxied_broker.bootstrap_servers, "crc") as consumer:
        tp = TopicPartition(name, 0)
        consumer.assign([tp])
        with pytest.raises(CorruptRecordException):
            await _read(consumer, 1)
        assert flipped == [API_FETCH]
        # Only the first response was corrupted: the refetch delivers the record intact.
        assert await _read(consumer, 1) == [marker]


@pytest.mark.anyio
async def test_blackhole_stalls_everything_then_resumes(proxied_broker: ProxiedBroker) -> None:
    proxy = proxied_broker.proxy
    name = proxied_broker.create_topic(partitions=1)
    await proxied_broker.produce.produce_async(name, [b"first"], partition=0)

    async with _consumer(proxied_broker.bootstrap_servers, "stalled") as consumer:
        consumer.assign([TopicPartition(name, 0)])
        assert await _read(consumer, 1) == [b"first"]

        proxy.blackhole(True)
        forwarded = dict(proxy.frames_forwarded)
        producing = asyncio.create_task(proxied_broker.produce.produce_async(name, [b"second"], partition=0))
        # The consumer's in-flight fetch response and the producer's first request are read but held.
        await wait_for_async(lambda: proxy.frames_held >= 2, 10.0, message=lambda: f"held {proxy.frames_held}")
        assert proxy.frames_forwarded == forwarded
        assert not producing.done()
        assert (await consumer.getmany(timeout_ms=50)) == {}

        proxy.blackhole(False)
        await asyncio.wait_for(producing, 15.0)
        assert await _read(consumer, 1) == [b"second"]
        assert proxy.frames_forwarded[Direction.RESPONSE] > forwarded[Direction.RESPONSE]


@pytest.mark.anyio
async def test_refused_connections_fail_bootstrap_but_spare_open_ones(proxied_broker: ProxiedBroker) -> None:
    proxy = proxied_broker.proxy
    name = proxied_broker.create_topic(partitions=1)
    await proxied_broker.produce.produce_async(name, [b"r0"], partition=0)

    async with _consumer(proxied_broker.bootstrap_servers, "open-before") as consumer:
        tp = TopicPartition(name, 0)
        consumer.assign([tp])
        assert await _read(consumer, 1) == [b"r0"]
        proxy.refuse_new_connections(True)

        late = AIOKafkaClient(bootstrap_servers=proxied_broker.bootstrap_servers, client_id="late")
        try:
            with pytest.raises(KafkaConnectionError):
                await late.bootstrap()
        finally:
            await late.close()
        assert proxy.connections_refused >= 1
        assert proxy.connections_by_client_id["late"] == 0
        # The consumer's connection was open before: it still answers.
        assert await consumer.end_offsets([tp]) == {tp: 1}

        proxy.refuse_new_connections(False)
        client = AIOKafkaClient(bootstrap_servers=proxied_broker.bootstrap_servers, client_id="later")
        try:
            await client.bootstrap()
            assert proxy.connections_by_client_id["later"] == 1
        finally:
            await client.close()


@pytest.mark.anyio
async def test_consumer_recovers_from_a_fetch_response_cut_mid_way(proxied_broker: ProxiedBroker) -> None:
    proxy = proxied_broker.proxy
    name = proxied_broker.create_topic(partitions=1)
    values = [b"%04d" % i + b"x" * 1000 for i in range(20)]
    await proxied_broker.produce.produce_async(name, values, partition=0)

    async with _consumer(proxied_broker.bootstrap_servers, "cut") as consumer:
        proxy.drop_mid_response(after_bytes=5_000, count=1)  # only a fetch with records is that large
        consumer.assign([TopicPartition(name, 0)])
        assert await _read(consumer, 20) == values

    assert proxy.responses_cut == 1
