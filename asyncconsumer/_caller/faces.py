"""One declaration, two faces: every public method of a client is written once, and its asyncio face and its
blocking face are made from it.

A method both faces share is written as a coroutine (``@both_faces async def ...``) that waits only through the
face's own primitives (``_wait``, ``_wait_signal``, ``_settle``, ``_wait_at_most``, ``_join``). On the asyncio face
(``AsyncFace``) they suspend, and the method is the coroutine function itself. On the blocking face
(``BlockingFace``) they wait where they are called and hand back an awaitable that is already done, so the coroutine
never suspends: one ``send(None)`` runs it to its end (``run_to_end``). So a signature, a docstring and a body serve
both faces; ``both_faces`` types each method per face (a coroutine on the one, its plain value on the other), and
each face class gets the method in its own form when it is defined.

A method neither face waits in (``assignment``, ``metrics``) is an ordinary method of the shared class.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import types
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator
from concurrent.futures import Future
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, Self, TypeVar, cast, overload

from asyncconsumer._caller.lifecycle import ClientCore
from asyncconsumer._state.signal import CallerSignal

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class both_faces(Generic[P, T]):
    """Marks a method both faces share: awaited on the asyncio face, blocking on the blocking one.

    Type checkers see this descriptor, which gives the method's type per face; at run time each face class holds
    the method in its own form (``FaceMethods.__init_subclass__``), so a call goes through no descriptor.
    """

    def __init__(self, method: Callable[Concatenate[Any, P], Coroutine[Any, Any, T]]) -> None:
        if not inspect.iscoroutinefunction(method):
            raise TypeError(f"@both_faces takes an async def, got {method!r}")
        self.method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, face: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, face: BlockingFace[Any], owner: type[Any]) -> Callable[P, T]: ...

    @overload
    def __get__(self, face: AsyncFace[Any], owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(self, face: object, owner: type[Any]) -> Any:
        """Reached only on the shared class itself (its faces hold their own forms): the coroutine function."""
        return self if face is None else types.MethodType(self.method, face)


def run_to_end(call: Coroutine[Any, Any, T]) -> T:
    """Runs a shared method's coroutine on a blocking face, where nothing it awaits suspends: its result."""
    try:
        call.send(None)
    except StopIteration as end:
        result: T = end.value
        return result
    call.close()
    raise RuntimeError("a method of a blocking face awaited something that suspends: only the face's waits may be")


class _Done(Generic[T]):
    """An awaitable already done: what a blocking face's waits return, having waited where they were called."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, T]:
        yield from ()
        return self.value


_NOTHING: _Done[None] = _Done(None)


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def _bounded(future: Future[Any], timeout_s: float) -> None:
    async with asyncio.timeout(timeout_s):  # not wait_for: 3.11's can swallow a cancel
        await asyncio.wrap_future(future)


def _copy(function: Callable[..., Any], owner: type[Any], name: str) -> Callable[..., Any]:
    """``function`` as the asyncio face holds it: the same code under the face's name, so a call adds no frame."""
    assert isinstance(function, types.FunctionType)
    code, defaults = function.__code__, function.__defaults__
    copy = types.FunctionType(code, function.__globals__, name, defaults, function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__annotations__ = function.__annotations__
    copy.__doc__ = function.__doc__
    copy.__module__ = owner.__module__
    copy.__qualname__ = f"{owner.__qualname__}.{name}"
    return copy


def _blocking(method: Callable[..., Coroutine[Any, Any, Any]], owner: type[Any], name: str) -> Callable[..., Any]:
    """``method`` as a blocking face holds it: a plain function with the coroutine's signature and docstring."""

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return run_to_end(method(self, *args, **kwargs))

    functools.update_wrapper(call, method)  # __wrapped__ too: inspect.signature and get_type_hints read method's
    call.__module__ = owner.__module__
    call.__qualname__ = f"{owner.__qualname__}.{name}"
    return call


class FaceMethods:
    """What the shared methods may use: the client's core and the waits each face provides."""

    _core: ClientCore[Any]
    _pending: list[Any]
    """What ``async for`` polled and has not handed out yet (set empty by each client's ``__init__``)."""
    _FORM: Callable[[Callable[..., Any], type[Any], str], Callable[..., Any]] | None = None
    """How a face class holds a shared method (``None``: not a face)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A face class (a subclass of ``AsyncFace`` or ``BlockingFace``) gets each shared method in its form."""
        super().__init_subclass__(**kwargs)
        form = cls._FORM
        if form is None:
            return
        for name in dir(cls):
            shared = inspect.getattr_static(cls, name)
            if isinstance(shared, both_faces):
                setattr(cls, name, form(shared.method, cls, name))

    @both_faces
    async def start(self) -> None:
        """Starts the background thread now; optional, as every call that needs it starts it."""
        self._core.start()

    @both_faces
    async def client_instance_id(self, timeout_ms: int | None = None) -> uuid.UUID:
        """The id a broker gave this client for its telemetry (KIP-714), waiting up to ``timeout_ms`` for the
        first (``KafkaTimeoutError`` past it); ``IllegalStateError`` with ``enable_metrics_push=False`` or when the
        brokers offer no client telemetry."""
        return await self._wait(self._core.client_instance_id(timeout_ms), timeout_ms)

    # --- the waits: each face provides them -------------------------------------------------------------------
    def _wait(self, future: Future[T], timeout_ms: int | None = None) -> Awaitable[T]:
        """The result of an event's future (a blocking face gives up after ``timeout_ms`` and a grace second)."""
        raise NotImplementedError

    def _wait_signal(self, seen: int, timeout_s: float) -> Awaitable[Any]:
        """Until the background signals after ``seen``, or ``timeout_s`` passes."""
        raise NotImplementedError

    def _settle(self, result: Awaitable[T]) -> Awaitable[T]:
        """What a callback returned that is awaitable (a blocking face runs it in a loop of its own)."""
        raise NotImplementedError

    def _wait_at_most(self, future: Future[Any], timeout_s: float) -> Awaitable[None]:
        """``future`` done, or ``TimeoutError`` after ``timeout_s``."""
        raise NotImplementedError

    def _join(self, timeout_s: float) -> Awaitable[None]:
        """The end of ``close``: the background thread joined (off the event loop on the asyncio face)."""
        raise NotImplementedError


class _Batch(Protocol[R_co]):
    def records(self) -> Iterator[R_co]: ...


class _Client(Protocol):
    """A face's ``poll`` and ``close`` as its iteration and context manager call them (each kind of client
    declares its own, so a face sees them only through this)."""

    def poll(self, timeout_ms: float) -> Any: ...

    def close(self) -> Any: ...


class AsyncFace(FaceMethods, Generic[R]):
    """The asyncio face: the waits suspend the caller's task; iterates with ``async for`` over records ``R``."""

    _pending: list[R]
    _FORM = staticmethod(_copy)

    def _wait(self, future: Future[T], timeout_ms: int | None = None) -> Awaitable[T]:
        return asyncio.wrap_future(future)  # the background ends the call by its deadline

    def _wait_signal(self, seen: int, timeout_s: float) -> Awaitable[Any]:
        signal: CallerSignal = self._core.parts.signal
        return signal.wait_async(seen, timeout_s)

    def _settle(self, result: Awaitable[T]) -> Awaitable[T]:
        return result

    def _wait_at_most(self, future: Future[Any], timeout_s: float) -> Awaitable[None]:
        return _bounded(future, timeout_s)

    def _join(self, timeout_s: float) -> Awaitable[None]:
        return asyncio.to_thread(self._core.finish_close, timeout_s)

    async def __aenter__(self) -> Self:
        self._core.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await cast(_Client, self).close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> R:
        """Records one at a time, polled at most a second at a time; ends once the consumer is closed."""
        while not self._pending:
            if self._core.closed:
                raise StopAsyncIteration
            batch: _Batch[R] = await cast(_Client, self).poll(timeout_ms=1_000)
            self._pending = list(batch.records())
            self._pending.reverse()
        return self._pending.pop()


class BlockingFace(FaceMethods, Generic[R]):
    """The blocking face: the waits block the calling thread, and ``wakeup()`` from any thread interrupts them;
    iterates with ``for`` over records ``R``."""

    _FORM = staticmethod(_blocking)

    def _wait(self, future: Future[T], timeout_ms: int | None = None) -> Awaitable[T]:
        return _Done(self._core.wait(future, timeout_ms))

    def _wait_signal(self, seen: int, timeout_s: float) -> Awaitable[Any]:
        self._core.parts.signal.wait(seen, timeout_s)
        return _NOTHING

    def _settle(self, result: Awaitable[T]) -> Awaitable[T]:
        return _Done(asyncio.run(_awaited(result)))

    def _wait_at_most(self, future: Future[Any], timeout_s: float) -> Awaitable[None]:
        future.result(timeout_s)
        return _NOTHING

    def _join(self, timeout_s: float) -> Awaitable[None]:
        self._core.finish_close(timeout_s)
        return _NOTHING

    def wakeup(self) -> None:
        """Interrupts the blocking call in progress (``poll`` or another), or the next one, with ``WakeupError``;
        the only method that may be called from another thread (Java's ``wakeup``). Nothing consumed is lost."""
        self._core.wakeup()

    def __enter__(self) -> Self:
        self._core.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        cast(_Client, self).close()

    def __iter__(self) -> Iterator[R]:
        """Records one at a time, polled at most a second at a time; ends once the consumer is closed."""
        while not self._core.closed:
            batch: _Batch[R] = cast(_Client, self).poll(timeout_ms=1_000)
            yield from batch.records()
