"""The SQLite offset store: the embedded default, for a laptop, the demo and the docs.

``SQLiteOffsetStore`` (asyncio) runs on ``aiosqlite``, ``BlockingSQLiteOffsetStore`` on the stdlib ``sqlite3`` that
``aiosqlite`` wraps: one SQL dialect and one set of semantics under both faces, as psycopg's two sides give
PostgreSQL. aiosqlite rather than a thread of our own: the handler gets a connection whose API users know
(``await tx.execute(...)``), kept off the event loop by a well-kept library instead of a wrapper written here.

SQLite has one writer at a time, so each store keeps one connection in WAL mode (readers never block the writer)
and runs one transaction at a time on it (``BEGIN IMMEDIATE``: the write lock is taken at once, so two processes on
one file wait for each other up to ``busy_timeout_ms`` instead of failing on a lock upgrade). Partitions still run
side by side in the handler's other work; their transactions take turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Collection, Iterator
from pathlib import Path
from typing import Any

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ConfigError, OffsetStoreUnavailableError
from asyncconsumer.records import TopicPartition
from asyncconsumer.stores.base import DEFAULT_TABLE, Lease, backoffs, check_table, check_write, claimed

log = get_logger("asyncconsumer.stores")

CONNECT_ATTEMPTS = 3
"""Attempts to open the database file before ``OffsetStoreUnavailableError`` (backoff 100 ms, doubling)."""


def path_of(url: str) -> str:
    """The file of a ``sqlite:`` URL, as SQLAlchemy spells them: ``sqlite:///relative.db``, ``sqlite:////abs.db``
    (``sqlite:relative.db`` too)."""
    if not url.startswith("sqlite:"):
        raise ConfigError("offsets", f"not a sqlite: URL: {url!r}")
    rest = url[len("sqlite:") :]
    path = rest[3:] if rest.startswith("///") else rest
    if not path:
        raise ConfigError("offsets", f"{url!r} names no file")
    return path


class _Statements:
    def __init__(self, table: str) -> None:
        self.create = (
            f"CREATE TABLE IF NOT EXISTS {table} (group_id TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT"
            " NULL, next_offset INTEGER, epoch INTEGER NOT NULL, PRIMARY KEY (group_id, topic, partition))"
        )
        self.insert = (
            f"INSERT OR IGNORE INTO {table} (group_id, topic, partition, next_offset, epoch) VALUES (?, ?, ?, NULL, 0)"
        )
        self.bump = (
            f"UPDATE {table} SET epoch = epoch + 1 WHERE group_id = ? AND topic = ? AND partition = ?"
            " RETURNING next_offset, epoch"
        )
        self.write = (
            f"UPDATE {table} SET next_offset = ? WHERE group_id = ? AND topic = ? AND partition = ? AND epoch = ?"
            " AND next_offset IS ?"
        )
        self.read = f"SELECT epoch, next_offset FROM {table} WHERE group_id = ? AND topic = ? AND partition = ?"


def _unavailable(error: BaseException) -> bool:
    """A lock held past ``busy_timeout_ms`` by another process, or a file that cannot be opened (yet)."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    text = str(error).lower()
    return "locked" in text or "busy" in text or "unable to open" in text or "disk i/o" in text


class SQLiteOffsetStore:
    """The asyncio side: ``SQLiteOffsetStore("offsets.db")``; the handler's transaction is an
    ``aiosqlite.Connection`` inside ``BEGIN IMMEDIATE``."""

    def __init__(self, path: str | Path, *, table: str = DEFAULT_TABLE, busy_timeout_ms: int = 5_000) -> None:
        self.path = str(path)
        self.name = f"sqlite:{self.path}"
        self._statements = _Statements(check_table(table))
        self._busy_timeout_ms = busy_timeout_ms
        self._conn: Any = None
        self._lock: asyncio.Lock | None = None

    async def open(self) -> None:
        import aiosqlite  # the sqlite extra: a Consumer-only install needs none of it

        if self._conn is not None:
            return
        error: BaseException | None = None
        waits = backoffs(100, 1_000)
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                conn = await aiosqlite.connect(self.path, isolation_level=None, timeout=self._busy_timeout_ms / 1000)
                break
            except sqlite3.Error as exc:
                error = exc
                log.warning("eos.store_unavailable", store=self.name, attempt=attempt + 1, error=repr(exc))
                await asyncio.sleep(next(waits))
        else:
            raise OffsetStoreUnavailableError(
                self.name, f"cannot open it after {CONNECT_ATTEMPTS} attempts: {error}"
            ) from error
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout_ms)}")
            await conn.execute(self._statements.create)
        except sqlite3.Error as exc:
            await conn.close()
            raise OffsetStoreUnavailableError(self.name, f"cannot set it up: {exc}") from exc
        self._conn = conn
        self._lock = asyncio.Lock()
        log.info("eos.store_opened", store=self.name)

    def _open_conn(self) -> tuple[Any, asyncio.Lock]:
        if self._conn is None or self._lock is None:
            raise OffsetStoreUnavailableError(self.name, "not opened (call open() first)")
        return self._conn, self._lock

    async def claim(self, group: str, partitions: Collection[TopicPartition]) -> dict[TopicPartition, Lease]:
        leases: dict[TopicPartition, Lease] = {}
        async with self.transaction() as conn:
            for tp in sorted(partitions):
                key = (group, tp.topic, tp.partition)
                await conn.execute(self._statements.insert, key)
                async with conn.execute(self._statements.bump, key) as cursor:
                    leases[tp] = claimed(group, tp, await cursor.fetchone())
        return leases

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
        conn, lock = self._open_conn()
        async with lock:
            await conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                await asyncio.shield(conn.execute("ROLLBACK"))
                raise
            await conn.execute("COMMIT")

    async def write(self, tx: Any, lease: Lease, next_offset: int) -> None:
        tp = lease.partition
        key = (lease.group, tp.topic, tp.partition)
        cursor = await tx.execute(self._statements.write, (next_offset, *key, lease.epoch, lease.offset))
        if cursor.rowcount == 1:
            return
        async with tx.execute(self._statements.read, key) as found:
            row = await found.fetchone()
        check_write(self.name, lease, next_offset, None if row is None else (row[0], row[1]))

    def unavailable(self, error: BaseException) -> bool:
        return _unavailable(error)

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


class BlockingSQLiteOffsetStore:
    """The blocking side: ``BlockingSQLiteOffsetStore("offsets.db")``; the handler's transaction is a
    ``sqlite3.Connection`` inside ``BEGIN IMMEDIATE``, used from one worker thread at a time."""

    def __init__(self, path: str | Path, *, table: str = DEFAULT_TABLE, busy_timeout_ms: int = 5_000) -> None:
        self.path = str(path)
        self.name = f"sqlite:{self.path}"
        self._statements = _Statements(check_table(table))
        self._busy_timeout_ms = busy_timeout_ms
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def open(self) -> None:
        if self._conn is not None:
            return
        error: BaseException | None = None
        waits = backoffs(100, 1_000)
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                conn = sqlite3.connect(
                    self.path, isolation_level=None, timeout=self._busy_timeout_ms / 1000, check_same_thread=False
                )
                break
            except sqlite3.Error as exc:
                error = exc
                log.warning("eos.store_unavailable", store=self.name, attempt=attempt + 1, error=repr(exc))
                time.sleep(next(waits))
        else:
            raise OffsetStoreUnavailableError(
                self.name, f"cannot open it after {CONNECT_ATTEMPTS} attempts: {error}"
            ) from error
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout_ms)}")
            conn.execute(self._statements.create)
        except sqlite3.Error as exc:
            conn.close()
            raise OffsetStoreUnavailableError(self.name, f"cannot set it up: {exc}") from exc
        self._conn = conn
        log.info("eos.store_opened", store=self.name)

    def claim(self, group: str, partitions: Collection[TopicPartition]) -> dict[TopicPartition, Lease]:
        leases: dict[TopicPartition, Lease] = {}
        with self.transaction() as conn:
            for tp in sorted(partitions):
                key = (group, tp.topic, tp.partition)
                conn.execute(self._statements.insert, key)
                leases[tp] = claimed(group, tp, conn.execute(self._statements.bump, key).fetchone())
        return leases

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        if conn is None:
            raise OffsetStoreUnavailableError(self.name, "not opened (call open() first)")
        with self._lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def write(self, tx: sqlite3.Connection, lease: Lease, next_offset: int) -> None:
        tp = lease.partition
        key = (lease.group, tp.topic, tp.partition)
        if tx.execute(self._statements.write, (next_offset, *key, lease.epoch, lease.offset)).rowcount == 1:
            return
        row = tx.execute(self._statements.read, key).fetchone()
        check_write(self.name, lease, next_offset, None if row is None else (row[0], row[1]))

    def unavailable(self, error: BaseException) -> bool:
        return _unavailable(error)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def create(url: str, *, blocking: bool = False) -> SQLiteOffsetStore | BlockingSQLiteOffsetStore:
    """The entry point of ``sqlite:`` URLs."""
    path = path_of(url)
    return BlockingSQLiteOffsetStore(path) if blocking else SQLiteOffsetStore(path)
