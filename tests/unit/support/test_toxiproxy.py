"""tests/support/toxiproxy.py (Toxiproxy for the network-fault tests): the cached ``go install`` build (built once,
atomically, never half), what is missing when it cannot be built, and the API's bodies checked before they are sent.
A stand-in ``go`` (a shell script on PATH) plays the build, so nothing here reaches the module proxy; the real build
and server run in tests/integration/test_network_faults_kafka.py."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import toxiproxy
from tests.support.toxiproxy import Toxic, ToxiproxyUnavailable, built_server, toxic_body, unavailable_reason


def fake_go(folder: Path, *, exit_code: int = 0, write: bool = True) -> Path:
    """A ``go`` that records each call in ``calls`` and, for ``install``, writes ``$GOBIN/server``."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "go"
    body = [
        "#!/bin/sh",
        f'echo "$@" >> "{folder / "calls"}"',
        "sleep 0.2",  # long enough for a second process to find the lock held
    ]
    if write:
        body.append('printf "binary" > "$GOBIN/server"')
    body += ["echo 'go: building the server'", f"exit {exit_code}"]
    script.write_text("\n".join(body) + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


@pytest.fixture
def path_with(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    def put(folder: Path) -> None:
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")

    return put


def calls(folder: Path) -> list[str]:
    log = folder / "calls"
    return log.read_text().splitlines() if log.exists() else []


def test_the_build_goes_into_a_folder_per_release_under_the_cache(tmp_path: Path) -> None:
    assert toxiproxy.binary_path("2.5.0", tmp_path) == tmp_path / "toxiproxy-2.5.0" / "bin" / "server"
    assert toxiproxy.install_command("2.5.0") == ["go", "install", "github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0"]


def test_without_go_and_without_a_build_the_reason_names_go(tmp_path: Path, path_with: Callable[[Path], None]) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    path_with(empty)
    reason = unavailable_reason("2.5.0", tmp_path)
    assert reason is not None and "Go" in reason and "`go`" in reason
    with pytest.raises(ToxiproxyUnavailable, match="Go is needed"):
        built_server("2.5.0", tmp_path)


def test_a_finished_build_needs_no_go(tmp_path: Path, path_with: Callable[[Path], None]) -> None:
    folder = toxiproxy.build_dir("2.5.0", tmp_path)
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "server").write_text("binary")
    (folder / ".complete").write_text("done\n")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    path_with(empty)
    assert unavailable_reason("2.5.0", tmp_path) is None
    assert built_server("2.5.0", tmp_path) == folder / "bin" / "server"


def test_the_server_is_built_once_with_gobin_in_the_cache(tmp_path: Path, path_with: Callable[[Path], None]) -> None:
    go = fake_go(tmp_path / "go-bin")
    path_with(go)
    cache = tmp_path / "cache"
    first = built_server("2.5.0", cache)
    assert first == cache / "toxiproxy-2.5.0" / "bin" / "server"
    assert first.read_text() == "binary"
    assert (cache / "toxiproxy-2.5.0" / ".complete").exists()
    assert not (cache / "toxiproxy-2.5.0.partial").exists()
    assert built_server("2.5.0", cache) == first
    assert calls(go) == ["install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0"]


def test_concurrent_builds_run_go_once(tmp_path: Path, path_with: Callable[[Path], None]) -> None:
    go = fake_go(tmp_path / "go-bin")
    path_with(go)
    cache = tmp_path / "cache"
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(built_server("2.5.0", cache))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 3 and len(set(results)) == 1
    assert len(calls(go)) == 1


@pytest.mark.parametrize(("exit_code", "write"), [(1, True), (0, False)])
def test_a_failed_build_leaves_nothing_that_looks_built_and_says_what_go_said(
    tmp_path: Path, path_with: Callable[[Path], None], exit_code: int, write: bool
) -> None:
    go = fake_go(tmp_path / "go-bin", exit_code=exit_code, write=write)
    path_with(go)
    cache = tmp_path / "cache"
    with pytest.raises(ToxiproxyUnavailable, match="go: building the server"):
        built_server("2.5.0", cache)
    assert not (cache / "toxiproxy-2.5.0").exists()
    assert not (cache / "toxiproxy-2.5.0.partial").exists()
    # the next call tries again (a failure is not cached)
    with pytest.raises(ToxiproxyUnavailable):
        built_server("2.5.0", cache)
    assert len(calls(go)) == 2


def test_a_toxic_body_names_its_stream_and_defaults_to_full_toxicity() -> None:
    body = toxic_body("latency", stream="upstream", latency=200, jitter=50)
    assert body == {
        "name": "latency_upstream",
        "type": "latency",
        "stream": "upstream",
        "toxicity": 1.0,
        "attributes": {"latency": 200, "jitter": 50},
    }
    json.dumps(body)  # what is sent
    named = toxic_body("timeout", stream="downstream", toxicity=0.5, name="black-hole", timeout=0)
    assert named["name"] == "black-hole" and named["toxicity"] == 0.5 and named["attributes"] == {"timeout": 0}


@pytest.mark.parametrize(
    ("kind", "stream", "toxicity", "attributes", "message"),
    [
        ("lag", "upstream", 1.0, {}, "unknown toxic 'lag'"),
        ("latency", "sideways", 1.0, {}, "stream must be 'upstream' or 'downstream'"),
        ("latency", "upstream", 1.5, {}, "toxicity is a probability"),
        ("bandwidth", "downstream", 1.0, {"rate": -1}, "must not be negative"),
    ],
)
def test_a_wrong_toxic_is_refused_before_the_server_is_asked(
    kind: str, stream: str, toxicity: float, attributes: dict[str, int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        toxic_body(kind, stream=stream, toxicity=toxicity, **attributes)  # type: ignore[arg-type]


def test_the_servers_answers_are_read_back() -> None:
    toxic = Toxic.from_json(
        {
            "name": "slicer_downstream",
            "type": "slicer",
            "stream": "downstream",
            "toxicity": 1,
            "attributes": {"delay": 5},
        }
    )
    assert toxic == Toxic("slicer_downstream", "slicer", "downstream", 1.0, {"delay": 5})
    assert toxiproxy._error_text(b'{"error":"proxy already exists","status":409}') == "proxy already exists"
    assert toxiproxy._error_text(b"not json\n") == "not json"
    assert toxiproxy._error_text(b"") == "(no body)"
    assert toxiproxy._host_port("127.0.0.1:9092") == ("127.0.0.1", 9092)


def test_a_toxicity_out_of_range_is_refused_before_the_server_is_asked() -> None:
    proxy = toxiproxy.Proxy(toxiproxy.ToxiproxyClient("127.0.0.1", 1), "p", ("127.0.0.1", 2), ("127.0.0.1", 3))
    with pytest.raises(ValueError, match="toxicity is a probability"):
        proxy.update_toxic("t", toxicity=2.0)
