"""The offset-store contract: where ``process_transactionally`` keeps each partition's next offset, beside the
results, and the lease that fences a member which lost the partition without knowing it.

A store does three things, on two sides (``OffsetStore`` for ``AsyncConsumer``, ``BlockingOffsetStore`` for
``Consumer``, one driver family under both):

- ``claim``: for newly assigned partitions, bump each one's lease epoch (creating its row if missing) and return
  the new epoch with the stored next offset, in one committed transaction. The member that claimed last owns the
  partition, whatever the group protocol says or whether there is a group at all.
- ``transaction``: open a transaction on one of its connections and hand it (the driver's own connection object)
  to the handler; commit when the block ends, roll back when it raises.
- ``write``: inside that transaction, move the partition's next offset, guarded by the lease epoch (and the next
  offset it expects), so a zombie's write matches no row: ``check_write`` then raises ``OffsetStoreFencedError``
  and everything the transaction wrote is rolled back.

Stores are found by name through the entry-point group ``asyncconsumer.offset_stores``: ``open_store("sqlite:///
offsets.db")`` loads the entry point named by the URL's scheme and calls it with the URL and the side wanted.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from asyncconsumer.errors import ConfigError, OffsetStoreError, OffsetStoreFencedError, PluginError
from asyncconsumer.records import TopicPartition

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

ENTRY_POINT_GROUP = "asyncconsumer.offset_stores"
DEFAULT_TABLE = "asyncconsumer_offsets"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")


@attrs.define(frozen=True, slots=True)
class Lease:
    """A partition claimed in a store: ``epoch`` is this member's fencing token, ``offset`` the next offset to read
    as stored (None: nothing stored yet, so the consumer's ``auto_offset_reset`` decides)."""

    group: str
    partition: TopicPartition
    epoch: int
    offset: int | None


class OffsetAlreadyStored(Exception):
    """The write found the partition's next offset already where it was to go, under this member's own epoch: an
    earlier attempt of this transaction committed and its answer was lost (a connection cut at ``COMMIT``). The
    retry is rolled back and the unit counts as done, so nothing lands twice."""


@runtime_checkable
class OffsetStore(Protocol):
    """The asyncio side of an offset store (``AsyncConsumer.process_transactionally``)."""

    name: str
    """What errors name: a file, or a DSN without its password."""

    async def open(self) -> None:
        """Connects (a bounded retry, then ``OffsetStoreUnavailableError``) and creates the table if missing."""
        ...

    async def claim(self, group: str, partitions: Collection[TopicPartition]) -> dict[TopicPartition, Lease]:
        """Bumps each partition's lease epoch and returns the leases, committed before it returns."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[Any]:
        """A transaction on one connection, yielded as the driver's connection; committed at the end of the block,
        rolled back if it raises."""
        ...

    async def write(self, tx: Any, lease: Lease, next_offset: int) -> None:
        """Inside ``tx``: the partition's next offset becomes ``next_offset`` if the store still has ``lease``'s
        epoch and offset; else ``check_write`` raises."""
        ...

    def unavailable(self, error: BaseException) -> bool:
        """Whether ``error`` says the database could not be reached (retried with backoff, reconnecting)."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class BlockingOffsetStore(Protocol):
    """The blocking side (``Consumer.process_transactionally``): the same, in plain calls, from worker threads."""

    name: str

    def open(self) -> None: ...

    def claim(self, group: str, partitions: Collection[TopicPartition]) -> dict[TopicPartition, Lease]: ...

    def transaction(self) -> AbstractContextManager[Any]: ...

    def write(self, tx: Any, lease: Lease, next_offset: int) -> None: ...

    def unavailable(self, error: BaseException) -> bool: ...

    def close(self) -> None: ...


StoreFactory = Callable[..., "OffsetStore | BlockingOffsetStore"]
"""An entry point's object: ``factory(url, blocking=False)`` returns the store for that side."""


def check_table(table: str) -> str:
    """The offsets table's name, checked: an identifier (``schema.table`` allowed), as it goes into SQL text."""
    if not isinstance(table, str) or not _IDENTIFIER.fullmatch(table):
        raise ConfigError("table", f"must be an SQL identifier (letters, digits, _; schema.table), got {table!r}")
    return table


def check_write(store: str, lease: Lease, next_offset: int, found: tuple[int, int | None] | None) -> None:
    """After a guarded write matched no row: ``found`` is the row's (epoch, next_offset), None if it is gone.
    Raises ``OffsetStoreFencedError`` when another member claimed the partition since, ``OffsetAlreadyStored`` when
    an earlier attempt already stored this offset, ``OffsetStoreError`` for anything else."""
    tp = lease.partition
    if found is None or found[0] != lease.epoch:
        raise OffsetStoreFencedError(store, tp, lease.epoch, None if found is None else found[0])
    if found[1] == next_offset:
        raise OffsetAlreadyStored()
    raise OffsetStoreError(
        store,
        f"{tp.topic}-{tp.partition}: the store has next offset {found[1]}, this member expected {lease.offset}"
        f" under its own lease epoch {lease.epoch} (another writer uses that epoch)",
    )


def claimed(group: str, tp: TopicPartition, row: tuple[Any, Any] | None) -> Lease:
    """The lease a claim's ``RETURNING next_offset, epoch`` row gives."""
    if row is None:
        raise OffsetStoreError("claim", f"{tp.topic}-{tp.partition}: the claim returned no row")
    offset, epoch = row
    return Lease(group, tp, int(epoch), None if offset is None else int(offset))


def installed_stores() -> dict[str, EntryPoint]:
    """Every offset store installed in this environment, by name (a URL scheme; the first distribution wins)."""
    from importlib.metadata import entry_points  # late, as the plugins' registry does

    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return dict(sorted(found.items()))


def open_store(spec: str | OffsetStore | BlockingOffsetStore, *, blocking: bool) -> OffsetStore | BlockingOffsetStore:
    """The store ``spec`` names (a URL whose scheme is an installed store's name) or ``spec`` itself (an object of
    the side asked for); not opened yet. A name nothing installed has, or an object of the other side, is a
    ``ConfigError`` naming ``offsets``."""
    side = "a BlockingOffsetStore (for Consumer)" if blocking else "an OffsetStore (for AsyncConsumer)"
    if not isinstance(spec, str):
        if not isinstance(spec, OffsetStore):  # the two sides have the same method names
            raise ConfigError("offsets", f"must be a store URL or {side}, got {type(spec).__name__}")
        if _is_async_side(spec) == blocking:
            raise ConfigError("offsets", f"{type(spec).__name__} is the other face's side; this one needs {side}")
        return spec
    scheme, colon, _ = spec.partition(":")
    installed = installed_stores()
    if not colon or scheme not in installed:
        listed = ", ".join(installed) or f"none (no entry points in group {ENTRY_POINT_GROUP!r})"
        raise ConfigError("offsets", f"no offset store for {redact(spec)!r}; installed schemes: {listed}")
    entry = installed[scheme]
    try:
        factory = entry.load()
    except Exception as exc:
        raise PluginError(scheme, f"entry point {entry.value!r} could not be loaded: {exc!r}") from exc
    store = factory(spec, blocking=blocking)
    if isinstance(store, str):
        raise PluginError(scheme, f"entry point {entry.value!r} returned a string, not a store")
    return open_store(store, blocking=blocking)


def _is_async_side(store: object) -> bool:
    return inspect.iscoroutinefunction(getattr(store, "claim", None))


_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@|(password\s*=\s*)\S+", re.I)


def redact(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***``: what errors and logs may name."""
    return _PASSWORD.sub(lambda m: f"{m.group(1) or m.group(2)}***" + ("@" if m.group(1) else ""), dsn)


def backoffs(initial_ms: int, maximum_ms: int) -> Iterator[float]:
    """Seconds to wait between attempts: doubling from ``initial_ms`` up to ``maximum_ms``."""
    wait = initial_ms
    while True:
        yield wait / 1000
        wait = min(wait * 2, maximum_ms)


def by_partition(leases: Mapping[TopicPartition, Lease]) -> dict[str, int | None]:
    """Leases as ``{"topic-partition": offset}``, for logs."""
    return {f"{tp.topic}-{tp.partition}": lease.offset for tp, lease in leases.items()}
