"""Values that Kafka's message definitions name only in prose: special timestamps, key types, member epochs."""

from __future__ import annotations

# ListOffsets timestamps that ask for a position rather than a time.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3  # v7+
EARLIEST_LOCAL_TIMESTAMP = -4  # v8+
LATEST_TIERED_TIMESTAMP = -5  # v9+

CONSUMER_REPLICA_ID = -1
"""The ReplicaId of a consumer in ListOffsets and OffsetForLeaderEpoch (their JSON defaults mean a broker)."""

# FindCoordinator key types.
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1

# ConsumerGroupHeartbeat member epochs (KIP-848).
JOIN_EPOCH = 0
"""MemberEpoch of a member joining (or rejoining after it was fenced)."""
LEAVE_EPOCH = -1
"""MemberEpoch of a member leaving the group."""
STATIC_LEAVE_EPOCH = -2
"""MemberEpoch of a static member leaving for now: the coordinator keeps its assignment for its return."""

NO_AUTHORIZED_OPERATIONS = -(2**31)
"""The authorized-operations bit set of an answer that was not asked for them."""
