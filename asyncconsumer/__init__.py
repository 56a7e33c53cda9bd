"""asyncconsumer: an asyncio-first Kafka consumer with one background I/O thread and sans-I/O request managers."""

from asyncconsumer.config import ConsumerConfig
from asyncconsumer.consumer import AsyncConsumer
from asyncconsumer.errors import (
    ClientClosedError,
    ConfigError,
    CorruptRecordError,
    IllegalStateError,
    InvalidOffsetError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    RecordDeserializationError,
    UnknownTopicOrPartitionError,
)
from asyncconsumer.records import (
    ConsumerRecord,
    ConsumerRecords,
    OffsetAndTimestamp,
    PartitionInfo,
    TopicPartition,
)
from asyncconsumer.sync import Consumer

__version__ = "0.1.0"

__all__ = [
    "AsyncConsumer",
    "ClientClosedError",
    "ConfigError",
    "Consumer",
    "ConsumerConfig",
    "ConsumerRecord",
    "ConsumerRecords",
    "CorruptRecordError",
    "IllegalStateError",
    "InvalidOffsetError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaTimeoutError",
    "NoOffsetForPartitionError",
    "OffsetAndTimestamp",
    "OffsetOutOfRangeError",
    "PartitionInfo",
    "RecordDeserializationError",
    "TopicPartition",
    "UnknownTopicOrPartitionError",
    "__version__",
]
