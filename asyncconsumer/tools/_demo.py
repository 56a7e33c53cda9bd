"""``asyncconsumer demo``: starts an embedded Tansu broker, produces a topic, consumes it in a group and reports
the speed; and the sample producer ``asyncconsumer broker --records`` uses too."""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import time
from typing import Any, cast

from asyncconsumer.consumer import AsyncConsumer
from asyncconsumer.records import TopicPartition
from asyncconsumer.tools._common import err, out


class ProducerMissingError(Exception):
    """The sample producer is aiokafka's, which comes with the ``[demo]`` extra (the consumer never needs it)."""


def producer_type() -> type[Any]:
    """aiokafka's ``AIOKafkaProducer``; ``ProducerMissingError`` saying which extra brings it when it is missing."""
    try:
        from aiokafka import AIOKafkaProducer
    except ImportError as exc:
        raise ProducerMissingError('the sample producer needs aiokafka: pip install "asyncconsumer[demo]"') from exc
    return cast("type[Any]", AIOKafkaProducer)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def produce(
    bootstrap: str, topic: str, count: int, size: int, partitions: int, *, readable: bool = False
) -> float:
    """Produces ``count`` records, record i to partition ``i % partitions`` (key ``i``; value ``record i`` when
    ``readable``, else ``size`` random bytes), and returns the seconds it took.

    Each partition's last record goes alone, in a batch of its own, after everything before it is acknowledged:
    Tansu 0.6 answers ListOffsets LATEST with the base offset of a partition's last batch + 1, so only a one-record
    last batch makes LATEST (what ``auto_offset_reset="latest"`` and ``consume`` without ``--from-beginning`` start
    at) the partition's end.
    """
    producer = producer_type()(
        bootstrap_servers=bootstrap, linger_ms=20, max_batch_size=1 << 20, acks=1, enable_idempotence=False
    )
    await producer.start()
    started = time.perf_counter()
    try:
        value = os.urandom(size)
        sealing = max(count - partitions, 0)  # records sealing..count-1 are the last of their partitions
        pending: list[asyncio.Future[Any]] = []
        for i in range(count):
            if i == sealing:  # everything before the partitions' last records is acknowledged first
                await asyncio.gather(*pending)
                pending.clear()
            if readable:  # a sample topic people read: "record 7" rather than random bytes
                value = f"record {i}".encode()
            pending.append(await producer.send(topic, value=value, key=str(i).encode(), partition=i % partitions))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return time.perf_counter() - started


async def run_demo(args: argparse.Namespace) -> int:
    from asyncconsumer.tools.embedded_broker import BrokerStartError, EmbeddedBroker

    out("asyncconsumer demo")
    try:
        producer_type()
    except ProducerMissingError as exc:
        err(f"error: {exc}")
        return 1
    try:
        broker = EmbeddedBroker.start()
    except BrokerStartError as exc:
        err(f"error: the embedded broker could not start: {exc}")
        return 1
    try:
        topic = "demo"
        broker.create_topic(topic, args.partitions)
        out(
            f"  broker      Tansu at {broker.bootstrap_servers} (pid {broker.pid}), topic {topic!r} with "
            f"{args.partitions} partitions"
        )
        produce_s = await produce(broker.bootstrap_servers, topic, args.records, args.size, args.partitions)
        out(f"  produced    {args.records:,} records of {args.size} B in {produce_s:.2f} s (aiokafka producer)")

        cpu_before = _cpu_s()
        group_id = "asyncconsumer-demo"
        async with AsyncConsumer(
            broker.bootstrap_servers,
            group_id=group_id,
            auto_offset_reset="earliest",
            session_timeout_ms=6_000,
            heartbeat_interval_ms=500,
        ) as consumer:
            partitions = [TopicPartition(topic, p) for p in range(args.partitions)]
            started = time.perf_counter()
            await consumer.subscribe([topic])
            first_record_s: float | None = None
            flow_started = started
            first_batch = 0
            count = 0
            total_bytes = 0
            per_partition = dict.fromkeys(partitions, 0)
            while count < args.records:
                records = await consumer.poll(timeout_ms=15_000, max_records=10_000)
                if not records:
                    err(f"error: no records for 15 s after {count:,} of {args.records:,}")
                    return 1
                if first_record_s is None:
                    first_record_s = time.perf_counter() - started
                    flow_started = time.perf_counter()
                    first_batch = records.count()
                for tp, batch in records.items():
                    per_partition[tp] += len(batch)
                    count += len(batch)
                    total_bytes += sum(r.serialized_value_size for r in batch)
            elapsed = time.perf_counter() - flow_started
            await consumer.commit()
            committed = await consumer.committed(partitions)
            member = consumer.group_metadata()
        cpu = _cpu_s() - cpu_before
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out(
            f"  group       {group_id!r}: joined as {member.member_id} (generation {member.generation_id}), "
            f"first record {1000 * (first_record_s or 0):.0f} ms after subscribe (the broker holds a new group's "
            "first join for half the session timeout)"
        )
        out(f"  consumed    {count:,} records, {total_bytes / 1e6:.1f} MB of values")
        out(
            f"  speed       {(count - first_batch) / elapsed:,.0f} records/s, "
            f"{total_bytes * (count - first_batch) / count / 1e6 / elapsed:.1f} MB/s after the first poll, "
            f"{cpu:.2f} CPU-s for the consumer process, peak RSS {peak_rss_mb:.0f} MB"
        )
        for tp in partitions:
            offset = committed.get(tp)
            shown = f"{offset.offset:,}" if offset is not None else "none"
            out(f"  {tp!s:<11} {per_partition[tp]:>9,} records, committed offset {shown}")
        return 0
    finally:
        broker.stop()
