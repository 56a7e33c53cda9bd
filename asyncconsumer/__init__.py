"""asyncconsumer: an asyncio-first Kafka consumer with one background I/O thread and sans-I/O request managers."""

from asyncconsumer._caller.processing.core import ProcessingMetrics
from asyncconsumer.config import ConsumerConfig, ConsumerSettings, ShareConsumerConfig, ShareConsumerSettings
from asyncconsumer.consumer import AsyncConsumer
from asyncconsumer.errors import (
    AuthenticationError,
    ClientClosedError,
    CommitFailedError,
    ConfigError,
    CorruptRecordError,
    ErrorCode,
    IllegalStateError,
    InvalidOffsetError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    OffsetStoreError,
    OffsetStoreFencedError,
    OffsetStoreUnavailableError,
    PluginError,
    PollIntervalExceededError,
    RecordDeserializationError,
    UnknownTopicOrPartitionError,
    WakeupError,
)
from asyncconsumer.listener import ConsumerRebalanceListener
from asyncconsumer.metrics import ConsumerMetrics, PartitionMetrics, ShareConsumerMetrics
from asyncconsumer.network.oauthbearer import OAuthBearerToken
from asyncconsumer.records import (
    AcknowledgeType,
    ConsumerRecord,
    ConsumerRecords,
    GroupMetadata,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionInfo,
    ShareRecord,
    ShareRecords,
    TopicPartition,
)
from asyncconsumer.share import AsyncShareConsumer, ShareConsumer
from asyncconsumer.sync import Consumer

__version__ = "0.1.0"

__all__ = [
    "AcknowledgeType",
    "AsyncConsumer",
    "AsyncShareConsumer",
    "AuthenticationError",
    "ClientClosedError",
    "CommitFailedError",
    "ConfigError",
    "Consumer",
    "ConsumerConfig",
    "ConsumerMetrics",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerRecords",
    "ConsumerSettings",
    "CorruptRecordError",
    "ErrorCode",
    "GroupMetadata",
    "IllegalStateError",
    "InvalidOffsetError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaTimeoutError",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "OAuthBearerToken",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "OffsetOutOfRangeError",
    "OffsetStoreError",
    "OffsetStoreFencedError",
    "OffsetStoreUnavailableError",
    "PartitionInfo",
    "PartitionMetrics",
    "PluginError",
    "PollIntervalExceededError",
    "ProcessingMetrics",
    "RecordDeserializationError",
    "ShareConsumer",
    "ShareConsumerConfig",
    "ShareConsumerMetrics",
    "ShareConsumerSettings",
    "ShareRecord",
    "ShareRecords",
    "TopicPartition",
    "UnknownTopicOrPartitionError",
    "WakeupError",
    "__version__",
]
