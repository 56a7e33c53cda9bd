"""``faces.py``: a method declared once (``@both_faces async def``) is a coroutine on the asyncio face and a plain
call on the blocking face, with one signature, docstring and body; the blocking form runs to its end without an
event loop, raises what the body raises, refuses to suspend; and the two faces' waits fail alike."""

from __future__ import annotations

import asyncio
import inspect
import typing
from concurrent.futures import Future

import pytest

from asyncconsumer._caller.core import ConsumerCore
from asyncconsumer._caller.faces import AsyncFace, BlockingFace, FaceMethods, both_faces, run_to_end
from asyncconsumer.config import ConsumerConfig
from tests.support.no_broker import REFUSED


def done(value: str) -> Future[str]:
    future: Future[str] = Future()
    future.set_result(value)
    return future


class Greeter(FaceMethods):
    """A client of two methods, on a real core that never starts (no call here needs the background)."""

    def __init__(self) -> None:
        self._core = ConsumerCore(ConsumerConfig.from_settings(REFUSED))
        self._pending = []
        self.cleaned_up = 0

    @both_faces
    async def greet(self, name: str, *, loud: bool = False) -> str:
        """Says hello to ``name``."""
        text = await self._wait(done(f"hello {name}"))
        return text.upper() if loud else text

    @both_faces
    async def fail(self) -> None:
        try:
            await self._wait(done("x"))
            raise LookupError("from the shared body")
        finally:
            self.cleaned_up += 1

    @both_faces
    async def suspend(self) -> None:
        try:
            await asyncio.sleep(0)  # not one of the face's waits: a blocking face cannot run it
        finally:
            self.cleaned_up += 1


class AsyncGreeter(AsyncFace[str], Greeter):
    pass


class BlockingGreeter(BlockingFace[str], Greeter):
    pass


DECLARED = Greeter.__dict__["greet"].method


def test_a_shared_method_is_a_coroutine_on_the_asyncio_face_and_a_plain_call_on_the_blocking_one() -> None:
    assert inspect.iscoroutinefunction(AsyncGreeter.greet)
    assert not inspect.iscoroutinefunction(BlockingGreeter.greet)
    assert asyncio.run(AsyncGreeter().greet("ann", loud=True)) == "HELLO ANN"
    assert BlockingGreeter().greet("ann") == "hello ann"


def test_both_forms_keep_the_one_signature_docstring_and_type_hints_under_their_own_name() -> None:
    for face in (AsyncGreeter, BlockingGreeter):
        assert inspect.signature(face.greet) == inspect.signature(DECLARED)
        assert face.greet.__doc__ == "Says hello to ``name``."
        assert typing.get_type_hints(face.greet) == {"name": str, "loud": bool, "return": str}
        assert face.greet.__qualname__ == f"{face.__qualname__}.greet"
        assert "greet" in vars(face)  # each face holds its form: a call goes through no descriptor


def test_the_asyncio_form_is_the_declared_code_itself_and_adds_no_frame() -> None:
    assert AsyncGreeter.greet.__code__ is DECLARED.__code__


def test_what_the_shared_body_raises_reaches_the_caller_of_either_face_after_its_finally() -> None:
    blocking, asynchronous = BlockingGreeter(), AsyncGreeter()
    with pytest.raises(LookupError, match="shared body"):
        blocking.fail()
    with pytest.raises(LookupError, match="shared body"):
        asyncio.run(asynchronous.fail())
    assert blocking.cleaned_up == asynchronous.cleaned_up == 1


def test_a_blocking_face_refuses_a_method_that_would_suspend_and_closes_it() -> None:
    greeter = BlockingGreeter()
    with pytest.raises(RuntimeError, match="awaited something that suspends"):
        greeter.suspend()
    assert greeter.cleaned_up == 1  # the coroutine was closed, not left to be collected unawaited
    asyncio.run(AsyncGreeter().suspend())  # the asyncio face suspends as usual


def test_run_to_end_returns_what_a_coroutine_that_never_suspends_returns() -> None:
    async def seven() -> int:
        return 7

    assert run_to_end(seven()) == 7


def test_both_faces_takes_only_an_async_def() -> None:
    def plain(self: object) -> None:
        pass

    with pytest.raises(TypeError, match="takes an async def"):
        both_faces(plain)  # type: ignore[arg-type]


def test_a_subclass_of_a_face_keeps_its_overrides_and_inherits_the_rest() -> None:
    class Quiet(BlockingGreeter):
        def greet(self, name: str, *, loud: bool = False) -> str:  # type: ignore[override]
            return "..."

    class Same(BlockingGreeter):
        pass

    assert Quiet().greet("ann") == "..."
    assert Same().greet("ann") == "hello ann"
    assert Same.greet is BlockingGreeter.greet


def test_the_shared_class_is_no_face_its_waits_are_left_to_the_faces() -> None:
    assert isinstance(Greeter.__dict__["greet"], both_faces)
    assert Greeter.__dict__["greet"].__doc__ == "Says hello to ``name``."
    call = Greeter().greet("ann")  # type: ignore[misc]  # neither face: typed by no overload
    with pytest.raises(NotImplementedError):
        asyncio.run(call)


def test_a_bounded_wait_that_runs_out_raises_timeout_error_on_both_faces() -> None:
    """The shared ``close`` suppresses ``TimeoutError``: both faces must raise that one type."""
    never: Future[None] = Future()
    with pytest.raises(TimeoutError):
        BlockingGreeter()._wait_at_most(never, 0.01)  # it waits where it is called

    async def asynchronous() -> None:
        await AsyncGreeter()._wait_at_most(never, 0.01)

    with pytest.raises(TimeoutError):
        asyncio.run(asynchronous())


def test_an_awaitable_a_callback_returned_is_run_to_its_value_on_both_faces() -> None:
    async def callback_result() -> str:
        await asyncio.sleep(0)  # it may suspend: the blocking face gives it a loop of its own
        return "ran"

    assert run_to_end(_awaiting(BlockingGreeter()._settle(callback_result()))) == "ran"

    async def asynchronous() -> str:
        return await AsyncGreeter()._settle(callback_result())

    assert asyncio.run(asynchronous()) == "ran"


def test_a_blocking_wait_gives_the_result_of_a_done_future_without_a_thread() -> None:
    greeter = BlockingGreeter()
    assert run_to_end(_awaiting(greeter._wait(done("now")))) == "now"
    assert not greeter._core.started


async def _awaiting(awaitable: typing.Awaitable[typing.Any]) -> typing.Any:
    return await awaitable
