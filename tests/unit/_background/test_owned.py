"""The thread-ownership debug mode: once the owner thread claims an object, any other thread touching it raises."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

import attrs
import pytest

from asyncconsumer import Consumer
from asyncconsumer._background import owned
from asyncconsumer._background.owned import Owner, ThreadOwnershipError, guard

T = TypeVar("T")


@pytest.fixture(autouse=True)
def no_violations_left() -> Iterator[None]:
    owned.violations.clear()
    yield
    owned.violations.clear()


class Plain:
    def __init__(self) -> None:
        self.count = 0

    def bump(self) -> int:
        self.count += 1
        return self.count


@attrs.define(slots=True)
class Slotted:
    count: int = 0


def on_thread(fn: Callable[[], T]) -> T:
    """Runs ``fn`` on a new thread and returns its result (or raises its error)."""
    out: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(5)
    if errors:
        raise errors[0]
    return out[0]


def claimed_elsewhere(owner: Owner) -> None:
    on_thread(owner.claim)  # that thread owns it from now on (and has ended: nobody may touch it)


@pytest.mark.parametrize("make", [Plain, Slotted])
def test_before_the_owner_claims_any_thread_may_touch(make: Callable[[], Plain | Slotted]) -> None:
    obj = guard(make(), Owner(), "obj")
    obj.count = 3
    assert obj.count == 3
    assert isinstance(obj, make)  # still the same class, to isinstance and to attrs


@pytest.mark.parametrize("make", [Plain, Slotted])
def test_after_the_owner_claims_another_thread_raises_and_it_is_recorded(make: Callable[[], Plain | Slotted]) -> None:
    owner = Owner()
    obj = guard(make(), owner, "fetch")
    claimed_elsewhere(owner)
    with pytest.raises(ThreadOwnershipError, match=r"touched fetch\.count, which the background thread owns"):
        _ = obj.count
    with pytest.raises(ThreadOwnershipError, match=r"fetch\.count"):
        obj.count = 1
    assert len(owned.violations) == 2


def test_the_owner_thread_itself_may_touch() -> None:
    owner = Owner()
    obj = guard(Plain(), owner, "plain")

    def as_owner() -> int:
        owner.claim()
        return obj.bump() + obj.bump()

    assert on_thread(as_owner) == 3
    assert owned.violations == []


def test_a_consumer_built_in_debug_mode_guards_what_its_background_owns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(owned.ENV, "1")
    consumer = Consumer("127.0.0.1:1", group_id="g")
    try:
        parts = consumer._core.parts.owned
        assert type(parts.fetch).__name__ == "OwnedFetchManager"
        assert type(parts.group).__name__ == "OwnedConsumerGroup"
        consumer.assign([("t", 0)])  # starts the background thread, which claims them
        with pytest.raises(ThreadOwnershipError, match=r"fetch\.latency"):
            _ = parts.fetch.latency
        owned.violations.clear()
        consumer.metrics()  # the caller's side reads the published snapshot only
        consumer.group_metadata()
        assert owned.violations == []
    finally:
        consumer.close(timeout_ms=1_000)


def test_without_the_environment_variable_nothing_is_guarded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(owned.ENV, raising=False)
    consumer = Consumer("127.0.0.1:1")
    assert type(consumer._core.parts.owned.fetch).__name__ == "FetchManager"
    consumer.close()
