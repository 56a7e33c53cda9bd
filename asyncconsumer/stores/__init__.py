"""Offset stores for ``process_transactionally``: each partition's next offset kept in the database the handler
writes to, in the handler's own transaction, and fenced by a lease epoch (``base.py``: the contract).

``SQLiteOffsetStore`` / ``BlockingSQLiteOffsetStore`` (``sqlite.py``) and ``PostgresOffsetStore`` /
``BlockingPostgresOffsetStore`` (``postgres.py``, needing the ``postgres`` extra) are installed under the
entry-point group ``asyncconsumer.offset_stores`` as ``sqlite`` and ``postgresql``; add another database with an
entry point of your own whose object is ``factory(url, blocking=False)``::

    [project.entry-points."asyncconsumer.offset_stores"]
    mysql = "my_package.offsets:create"
"""

from asyncconsumer.stores.base import (
    DEFAULT_TABLE,
    ENTRY_POINT_GROUP,
    BlockingOffsetStore,
    Lease,
    OffsetAlreadyStored,
    OffsetStore,
    check_write,
    installed_stores,
    open_store,
)
from asyncconsumer.stores.postgres import BlockingPostgresOffsetStore, PostgresOffsetStore
from asyncconsumer.stores.sqlite import BlockingSQLiteOffsetStore, SQLiteOffsetStore

__all__ = [
    "DEFAULT_TABLE",
    "ENTRY_POINT_GROUP",
    "BlockingOffsetStore",
    "BlockingPostgresOffsetStore",
    "BlockingSQLiteOffsetStore",
    "Lease",
    "OffsetAlreadyStored",
    "OffsetStore",
    "PostgresOffsetStore",
    "SQLiteOffsetStore",
    "check_write",
    "installed_stores",
    "open_store",
]
