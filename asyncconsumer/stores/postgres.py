"""The PostgreSQL offset store, for production: psycopg 3, whose async side (``PostgresOffsetStore``, for
``AsyncConsumer``) and sync side (``BlockingPostgresOffsetStore``, for ``Consumer``) are one driver family with one
set of types, errors and SQL (the measurement behind the choice is in ``benchmarks/README.md``).

Each store keeps a few connections (autocommit, each transaction an explicit ``conn.transaction()`` block), one per
transaction running at once, so partitions commit side by side. A connection the server cut (a restart, a
failover) is dropped and a new one is made for the next transaction; the error itself counts as ``unavailable``,
so the unit is tried again with backoff. The table is made if missing; two members making it at once is fine.

Fencing: the write is ``UPDATE ... WHERE epoch = <lease> AND next_offset IS NOT DISTINCT FROM <expected>``. Under
READ COMMITTED an UPDATE that waits on a row another transaction changed re-reads it once that one commits, so a
zombie's write after the new owner's claim matches no row whatever the order of their statements.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Collection, Iterator
from typing import Any

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ConfigError, OffsetStoreUnavailableError
from asyncconsumer.records import TopicPartition
from asyncconsumer.stores.base import DEFAULT_TABLE, Lease, backoffs, check_table, check_write, claimed, redact

log = get_logger("asyncconsumer.stores")

CONNECT_ATTEMPTS = 3
"""Attempts to connect before ``OffsetStoreUnavailableError`` (backoff 200 ms, doubling); each waits up to
``connect_timeout_s``."""


class _Statements:
    def __init__(self, table: str) -> None:
        self.create = (
            f"CREATE TABLE IF NOT EXISTS {table} (group_id text NOT NULL, topic text NOT NULL, partition integer NOT"
            " NULL, next_offset bigint, epoch bigint NOT NULL, PRIMARY KEY (group_id, topic, partition))"
        )
        self.claim = (
            f"INSERT INTO {table} AS o (group_id, topic, partition, next_offset, epoch) VALUES (%s, %s, %s, NULL, 1)"
            " ON CONFLICT (group_id, topic, partition) DO UPDATE SET epoch = o.epoch + 1 RETURNING next_offset, epoch"
        )
        self.write = (
            f"UPDATE {table} SET next_offset = %s WHERE group_id = %s AND topic = %s AND partition = %s AND epoch = %s"
            " AND next_offset IS NOT DISTINCT FROM %s::bigint"
        )
        self.read = f"SELECT epoch, next_offset FROM {table} WHERE group_id = %s AND topic = %s AND partition = %s"


def _unavailable(error: BaseException) -> bool:
    """The server could not be reached or cut the connection (``OperationalError``: refused, timed out, shut down,
    starting up), a connection closed under us, or a transaction the server asks to run again."""
    import psycopg
    from psycopg import errors

    return isinstance(
        error,
        (
            psycopg.OperationalError,
            psycopg.InterfaceError,
            errors.SerializationFailure,
            errors.DeadlockDetected,
            OffsetStoreUnavailableError,  # a new connection for a transaction could not be made (yet)
        ),
    )


def _check_dsn(dsn: str) -> str:
    if not isinstance(dsn, str) or not dsn.strip():
        raise ConfigError("offsets", f"a PostgreSQL DSN must be a non-empty string, got {dsn!r}")
    return dsn


class PostgresOffsetStore:
    """The asyncio side: ``PostgresOffsetStore("postgresql://app@db/app")``; the handler's transaction is a
    ``psycopg.AsyncConnection`` inside ``conn.transaction()``."""

    def __init__(self, dsn: str, *, table: str = DEFAULT_TABLE, connect_timeout_s: float = 5.0) -> None:
        self._dsn = _check_dsn(dsn)
        self.name = redact(dsn)
        self._statements = _Statements(check_table(table))
        self._connect_timeout_s = connect_timeout_s
        self._idle: list[Any] = []
        self._opened = False

    async def _connect(self) -> Any:
        import psycopg

        error: BaseException | None = None
        waits = backoffs(200, 2_000)
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                return await psycopg.AsyncConnection.connect(
                    self._dsn, autocommit=True, connect_timeout=max(1, int(self._connect_timeout_s))
                )
            except psycopg.Error as exc:
                error = exc
                log.warning("eos.store_unavailable", store=self.name, attempt=attempt + 1, error=repr(exc))
                if attempt + 1 < CONNECT_ATTEMPTS:
                    await asyncio.sleep(next(waits))
        raise OffsetStoreUnavailableError(
            self.name, f"cannot connect after {CONNECT_ATTEMPTS} attempts: {error}"
        ) from error

    async def open(self) -> None:
        from psycopg import errors

        if self._opened:
            return
        conn = await self._connect()
        with contextlib.suppress(errors.UniqueViolation, errors.DuplicateTable):  # another member made it just now
            await conn.execute(self._statements.create)
        self._idle.append(conn)
        self._opened = True
        log.info("eos.store_opened", store=self.name)

    async def claim(self, group: str, partitions: Collection[TopicPartition]) -> dict[TopicPartition, Lease]:
        leases: dict[TopicPartition, Lease] = {}
        async with self.transaction() as conn:
            for tp in sorted(partitions):
                cursor = await conn.execute(self._statements.claim, (group, tp.topic, tp.partition))
                leases[tp] = claimed(group, tp, await cursor.fetchone())
        return leases

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
        if not self._opened:
            raise OffsetStoreUnavailableError(self.name, "not opened (call open() first)")
        conn = self._idle.pop() if self._idle else await self._connect()
        try:
            async with conn.transaction():
                yield conn
        finally:
            if conn.closed or conn.broken:
                with contextlib.suppress(Exception):
                    await conn.close()
            else:
                self._idle.append(conn)

    async def write(self, tx: Any, lease: Lease, next_offset: int) -> None:
        tp = lease.partition
        key = (lease.group, tp.topic, tp.partition)
        cursor = await tx.execute(self._statements.write, (next_offset, *key, lease.epoch, lease.offset))
        if cursor.rowcount == 1:
            return
        found = await (await tx.execute(self._statements.read, key)).fetchone()
        check_write(self.name, lease, next_offset, None if found is None else (int(found[0]), found[1]))

    def unavailable(self, error: BaseException) -> bool:
        return _unavailable(error)

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        self._opened = False
        for conn in idle:
            with contextlib.suppress(Exception):
                await conn.close()


class BlockingPostgresOffsetStore:
    """The blocking side: ``BlockingPostgresOffsetStore("postgresql://app@db/app")``; the handler's transaction is
    a ``psycopg.Connection`` inside ``conn.transaction()``, one per worker thread at a time."""

    def __init__(self, dsn: str, *, table: str = DEFAULT_TABLE, connect_timeout_s: float = 5.0) -> None:
        self._dsn = _check_dsn(dsn)
        self.name = redact(dsn)
        self._statements = _Statements(check_table(table))
        self._connect_timeout_s = connect_timeout_s
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._opened = False

    def _connect(self) -> Any:
        import psycopg

        error: BaseException | None = None
        waits = backoffs(200, 2_000)
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                return psycopg.Connection.connect(
                    self._dsn, autocommit=True, connect_timeout=max(1, int(self._connect_timeout_s))
                )
            except psycopg.Error as exc:
                error = exc
                log.warning("eos.store_unavailable", store=self.name, attempt=attempt + 1, error=repr(exc))
                if attempt + 1 < CONNECT_ATTEMPTS:
                    time.sleep(next(waits))
        raise OffsetStoreUnavailableError(
            self.name, f"cannot connect after {CONNECT_ATTEMPTS} attempts: {error}"
        ) from error

    def open(self) -> None:
        from psycopg import errors

        if self._opened:
            return
        conn = self._connect()
        with contextlib.suppress(errors.UniqueViolation, errors.DuplicateTable):
            conn.execute(self._statements.create)
        with self._lock:
            self._idle.append(conn)
        self._opened = True
        log.info("eos.store_opened", store=self.name)

    def claim(self, group: str, partitions: Collection[TopicPartition]) -> dict[TopicPartition, Lease]:
        leases: dict[TopicPartition, Lease] = {}
        with self.transaction() as conn:
            for tp in sorted(partitions):
                row = conn.execute(self._statements.claim, (group, tp.topic, tp.partition)).fetchone()
                leases[tp] = claimed(group, tp, row)
        return leases

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        if not self._opened:
            raise OffsetStoreUnavailableError(self.name, "not opened (call open() first)")
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect()
        try:
            with conn.transaction():
                yield conn
        finally:
            if conn.closed or conn.broken:
                with contextlib.suppress(Exception):
                    conn.close()
            else:
                with self._lock:
                    self._idle.append(conn)

    def write(self, tx: Any, lease: Lease, next_offset: int) -> None:
        tp = lease.partition
        key = (lease.group, tp.topic, tp.partition)
        if tx.execute(self._statements.write, (next_offset, *key, lease.epoch, lease.offset)).rowcount == 1:
            return
        found = tx.execute(self._statements.read, key).fetchone()
        check_write(self.name, lease, next_offset, None if found is None else (int(found[0]), found[1]))

    def unavailable(self, error: BaseException) -> bool:
        return _unavailable(error)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        self._opened = False
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()


def create(url: str, *, blocking: bool = False) -> PostgresOffsetStore | BlockingPostgresOffsetStore:
    """The entry point of ``postgresql:`` (and ``postgres:``) URLs: the URL is the DSN."""
    return BlockingPostgresOffsetStore(url) if blocking else PostgresOffsetStore(url)
