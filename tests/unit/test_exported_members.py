"""The public API, pinned (as httpx's ``test_exported_members.py`` does): ``asyncconsumer.__all__`` and the plugin
authors' ``asyncconsumer.plugins.__all__``, each name importable."""

from __future__ import annotations

import asyncconsumer
import asyncconsumer.plugins


def test_public_api_is_pinned() -> None:
    assert set(asyncconsumer.__all__) == {
        "AcknowledgeType",
        "Admin",
        "AdminConfig",
        "AsyncAdmin",
        "AsyncConsumer",
        "AsyncShareConsumer",
        "ShareConsumer",
        "ShareConsumerConfig",
        "ShareConsumerMetrics",
        "ShareConsumerSettings",
        "ShareRecord",
        "ShareRecords",
        "AuthenticationError",
        "ClientClosedError",
        "CommitFailedError",
        "ConfigError",
        "ConsumerRebalanceListener",
        "GroupMembershipOperation",
        "GroupMetadata",
        "OffsetAndMetadata",
        "OffsetStoreError",
        "OffsetStoreFencedError",
        "OffsetStoreUnavailableError",
        "PollIntervalExceededError",
        "Consumer",
        "ConsumerConfig",
        "ConsumerMetrics",
        "ConsumerRecord",
        "ConsumerRecords",
        "ConsumerSettings",
        "CorruptRecordError",
        "ErrorCode",
        "IllegalStateError",
        "InvalidOffsetError",
        "KafkaConnectionError",
        "KafkaError",
        "KafkaTimeoutError",
        "LogTruncationError",
        "NoOffsetForPartitionError",
        "OAuthBearerToken",
        "OffsetAndTimestamp",
        "OffsetOutOfRangeError",
        "PartitionInfo",
        "PartitionMetrics",
        "PluginError",
        "ProcessingMetrics",
        "RecordDeserializationError",
        "TopicPartition",
        "UnknownTopicOrPartitionError",
        "WakeupError",
        "__version__",
    }
    for name in asyncconsumer.__all__:
        assert hasattr(asyncconsumer, name)
    assert set(asyncconsumer.plugins.__all__) == {
        "ENTRY_POINT_GROUP",
        "MAX_POLL_WAIT_MS",
        "Broker",
        "Clock",
        "Cluster",
        "Plugin",
        "PluginContext",
        "PluginError",
        "PluginFactory",
        "PluginMetrics",
        "PollResult",
        "RequestManager",
        "ResponseCallback",
        "TopicInfo",
        "UnsentRequest",
        "installed_plugins",
    }
    for name in asyncconsumer.plugins.__all__:
        assert hasattr(asyncconsumer.plugins, name)
