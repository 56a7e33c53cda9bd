"""The admin clients: ``AsyncAdmin`` (asyncio) and ``Admin`` (blocking), one set of methods (Java's ``Admin``
written Pythonically), one background thread each, on the consumers' chassis and with their settings and security.

    async with AsyncAdmin("localhost:9092") as admin:
        groups = await admin.list_groups(types=["consumer"])
"""

from __future__ import annotations

from asyncconsumer._caller.admin_configs import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
)
from asyncconsumer._caller.admin_methods import AdminMethods, OffsetSpec
from asyncconsumer._caller.admin_results import (
    BrokerNode,
    ClusterDescription,
    ConsumerGroupDescription,
    GroupListing,
    MemberDescription,
    NewTopic,
    PartitionLag,
    TopicDescription,
    TopicPartitionInfo,
)
from asyncconsumer._caller.admin_share import ShareGroupDescription, ShareMemberDescription, SharePartitionOffsetInfo
from asyncconsumer._caller.faces import AsyncFace, BlockingFace
from asyncconsumer._state.snapshot import AdminMetrics

__all__ = [
    "Admin",
    "AdminMetrics",
    "AlterConfigOp",
    "AlterConfigOpType",
    "AsyncAdmin",
    "BrokerNode",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "ConsumerGroupDescription",
    "GroupListing",
    "MemberDescription",
    "NewTopic",
    "OffsetSpec",
    "PartitionLag",
    "ShareGroupDescription",
    "ShareMemberDescription",
    "SharePartitionOffsetInfo",
    "TopicDescription",
    "TopicPartitionInfo",
]


class AsyncAdmin(AdminMethods, AsyncFace[None]):
    """The asyncio admin client: every method is awaited; ``async with`` closes it."""


class Admin(AdminMethods, BlockingFace[None]):
    """The blocking admin client (scripts, PySpark drivers): every method blocks; ``with`` closes it."""
