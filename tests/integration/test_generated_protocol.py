"""The committed ``asyncconsumer/protocol/messages/`` are what ``scripts/gen_protocol.py`` generates from the
kafka-clients jar of the Kafka the tests run (fetched with Maven like the broker's jars): an edit by hand, a changed
generator or a new Kafka without a regeneration fails here, naming the files that differ.

Part of the Kafka leg, with its policy: skipped, naming what is missing, where Maven cannot fetch the jars, and
failing instead when the ``CI`` environment variable is set. It needs no broker, so it runs once.
"""

from __future__ import annotations

import os

import pytest

from scripts import gen_protocol
from tests.support.kafka_broker import KafkaUnavailable, fetch_jars


def test_the_generated_messages_are_what_the_jar_generates() -> None:
    try:
        libs = fetch_jars()
    except KafkaUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{exc}\n(CI is set: the Kafka leg fails instead of being skipped)", pytrace=False)
        pytest.skip(f"Apache Kafka's jars cannot be fetched here: {exc}")
    (jar,) = sorted(libs.glob("kafka-clients-*.jar"))[-1:]
    files = gen_protocol.render_all(gen_protocol.Definitions.from_jar(jar))
    stale = list(gen_protocol.differences(files))
    assert not stale, f"regenerate with `python scripts/gen_protocol.py`; these differ from {jar.name}: {stale}"
    assert len(files) == len(gen_protocol.APIS) + 2  # every API, ApiKey and the package's table
