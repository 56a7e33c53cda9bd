"""Share consumers (KIP-932, "queues for Kafka"): ``AsyncShareConsumer`` and the blocking ``ShareConsumer``.

Members of a share group read the same partitions together. The broker hands each record to one member under a
time-limited acquisition lock; the member acknowledges it as accepted, released (delivered again, its delivery
count raised) or rejected (never delivered again). Built like the consumers: a background thread owns the network,
and heartbeats, fetches and acknowledgements go on while the caller works.
"""

from __future__ import annotations

from asyncconsumer._caller.faces import AsyncFace, BlockingFace
from asyncconsumer._caller.share_core import AcknowledgementCommitCallback
from asyncconsumer._caller.share_methods import CommitResults as CommitResults
from asyncconsumer._caller.share_methods import ShareConsumerMethods
from asyncconsumer.records import ShareRecord

__all__ = ["AcknowledgementCommitCallback", "AsyncShareConsumer", "ShareConsumer"]


class AsyncShareConsumer(AsyncFace[ShareRecord], ShareConsumerMethods):
    """A share-group member for asyncio code; iterated with ``async for``, each poll's records are accepted (in
    implicit mode) when the next poll begins. Its methods are declared once for both faces
    (``_caller/share_methods.py``)."""


class ShareConsumer(BlockingFace[ShareRecord], ShareConsumerMethods):
    """A blocking share-group member with the same methods as ``AsyncShareConsumer``, plus ``wakeup()``."""
