"""Hand-built metadata and backoff for the request manager unit tests: no sockets, no clock, no jitter."""

from __future__ import annotations

import itertools
import uuid

from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)


def no_jitter(initial: int = 100, maximum: int = 1000) -> ExponentialBackoff:
    return ExponentialBackoff(initial, maximum, jitter=0.0)


def metadata_response(
    topic: str = "t",
    partitions: int = 2,
    leader: int | tuple[int, ...] = 1,
    error_code: int = 0,
    leader_epoch: int = 0,
) -> MetadataResponse:
    """``leader``: one leader for all partitions, or partition p's leader at ``leader[p % len(leader)]``."""
    leaders = (leader,) if isinstance(leader, int) else leader
    return MetadataResponse(
        brokers=(
            MetadataResponseBroker(node_id=1, host="127.0.0.1", port=9092),
            MetadataResponseBroker(node_id=2, host="127.0.0.1", port=9093),
        ),
        topics=(
            MetadataResponseTopic(
                error_code=error_code,
                name=topic,
                partitions=tuple(
                    MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=node,
                        leader_epoch=leader_epoch,
                        replica_nodes=(node,),
                        isr_nodes=(node,),
                    )
                    for p, node in zip(range(partitions), itertools.cycle(leaders))
                )
                if error_code == 0
                else (),
                topic_id=uuid.uuid4(),
            ),
        ),
        cluster_id="c",
        controller_id=1,
    )


def only(requests: tuple[UnsentRequest, ...]) -> UnsentRequest:
    assert len(requests) == 1, requests
    return requests[0]
