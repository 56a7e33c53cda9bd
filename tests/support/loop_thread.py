"""An asyncio TCP server on its own event loop in a daemon thread, the shared lifecycle of the test servers.

Synchronous and asynchronous tests drive such a server the same way: ``start()``/``stop()`` (or ``with``) from
any thread, control calls run on the loop through ``_call`` and take effect before they return.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Generic, Protocol, Self, TypeVar

__all__ = ["CLOSE_GRACE_S", "STREAM_LIMIT", "Abortable", "LoopThreadServer", "close_gracefully"]

STREAM_LIMIT = 4 * 1024 * 1024
"""The stream reader limit of accepted and upstream connections."""
CLOSE_GRACE_S = 1.0


class Abortable(Protocol):
    def abort(self) -> None:
        """Close the connection now and stop serving it."""


_C = TypeVar("_C", bound=Abortable)
_T = TypeVar("_T")


async def close_gracefully(writers: Iterable[asyncio.StreamWriter], grace_s: float = CLOSE_GRACE_S) -> None:
    """Close ``writers`` so bytes already written still arrive; abort any that has not closed within ``grace_s``."""
    writers = list(writers)
    for writer in writers:
        writer.close()
    for writer in writers:
        try:
            await asyncio.wait_for(writer.wait_closed(), grace_s)
        except (OSError, TimeoutError):
            writer.transport.abort()


class LoopThreadServer(Generic[_C]):
    """Start, stop and call into a server whose loop runs in a daemon thread; subclasses serve the connections.

    A subclass implements ``_handle_client`` (keeping its connections in ``_connections`` and their tasks in
    ``_handlers``, so ``stop()`` can end them) and may extend ``_prepare``, ``_abort_connections`` and
    ``_thread_name``; ``_what`` names it in error messages.
    """

    _what = "the server"

    def __init__(self, host: str, port: int | None) -> None:
        self._listen = (host, port or 0)
        self._port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        self._stopped = False
        self._connections: set[_C] = set()
        self._handlers: set[asyncio.Task[None]] = set()

    # --- lifecycle ----------------------------------------------------------------------------------------

    def start(self, timeout_s: float = 5.0) -> Self:
        """Start listening; returns once the port is bound. Raises OSError if it cannot be bound."""
        if self._thread is not None:
            raise RuntimeError(f"{type(self).__name__}.start() called twice")
        self._thread = threading.Thread(target=self._run, name=self._thread_name(), daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s):
            raise TimeoutError(f"{self._what} did not start within {timeout_s} s")
        if self._start_error is not None:
            self._thread.join(timeout_s)
            raise self._start_error
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close the listener and every connection, then end the loop's thread. Idempotent."""
        if self._stopped or self._thread is None:
            self._stopped = True
            return
        self._stopped = True
        loop = self._loop
        if loop is not None and not loop.is_closed() and self._start_error is None:
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout_s)
            finally:
                with contextlib.suppress(RuntimeError):  # the loop is already closed
                    loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise RuntimeError(f"{self._what}'s thread did not end within {timeout_s} s")

    def __enter__(self) -> Self:
        if self._thread is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"{self._what} is not started")
        return self._port

    @property
    def address(self) -> str:
        """``"host:port"`` of the listener, usable as bootstrap servers."""
        return f"{self._listen[0]}:{self.port}"

    @property
    def active_connections(self) -> int:
        return len(self._connections)

    def drop_connections(self) -> int:
        """Close every client connection (and its upstream side) now; returns how many were open."""

        def drop() -> int:
            connections = list(self._connections)
            for connection in connections:
                connection.abort()
            return len(connections)

        return self._call(drop)

    # --- the loop's thread --------------------------------------------------------------------------------

    def _thread_name(self) -> str:
        return type(self).__name__

    def _prepare(self) -> None:
        """Runs on the loop before listening: create loop-bound objects (events, locks) here."""

    async def _handle_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    def _abort_connections(self) -> None:
        """Part of ``stop()``: make every connection end now."""
        for connection in list(self._connections):
            connection.abort()

    def _call(self, fn: Callable[[], _T], timeout_s: float = 5.0) -> _T:
        """Run ``fn`` on the loop and return its result (directly when already on the loop's thread)."""
        loop = self._loop
        if loop is None or self._port is None or self._stopped:
            raise RuntimeError(f"{self._what} is not running")
        if threading.current_thread() is self._thread:
            return fn()
        result: concurrent.futures.Future[_T] = concurrent.futures.Future()

        def run() -> None:
            try:
                result.set_result(fn())
            except BaseException as exc:
                result.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return result.result(timeout_s)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            try:
                loop.run_until_complete(self._open())
            except BaseException as exc:
                self._start_error = exc
                return
            finally:
                self._started.set()
            loop.run_forever()
        finally:
            leftovers = asyncio.all_tasks(loop)
            for task in leftovers:
                task.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _open(self) -> None:
        self._prepare()
        host, port = self._listen
        self._server = await asyncio.start_server(self._handle_client, host, port, limit=STREAM_LIMIT)
        self._port = self._server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        self._abort_connections()
        if self._handlers:
            _, pending = await asyncio.wait(set(self._handlers), timeout=CLOSE_GRACE_S * 2)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
