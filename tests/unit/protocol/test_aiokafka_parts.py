"""aiokafka's package ``__init__`` (its whole client) is deferred until something asks for it; each probe runs in a
fresh interpreter, since the test process has imported aiokafka long ago."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_consumer_decodes_records_without_aiokafkas_client() -> None:
    out = run(
        """
        import sys
        import asyncconsumer
        from asyncconsumer.protocol import aiokafka_parts
        from asyncconsumer.protocol.records import iter_batches
        from tests.support.batches import build_batch

        batch = next(iter_batches(memoryview(build_batch(5, [b"a", b"b"]))))
        print([r.value for r in batch.decode(check_crc=True)])
        print(sorted(m for m in ("aiokafka.client", "aiokafka.consumer", "aiokafka.producer", "aiokafka.conn")
                     if m in sys.modules))
        print(type(sys.modules["aiokafka"]).__name__, sys.modules["aiokafka"].__version__)
        """
    )
    values, loaded, module = out.splitlines()
    assert values == "[b'a', b'b']"
    assert loaded == "[]"
    import aiokafka

    assert module == f"_InitDeferred {aiokafka.__version__}"


def test_a_consumer_and_the_spark_source_import_no_aiokafka() -> None:
    """aiokafka's reader is imported when a batch is first decoded with it, not before: its import is ~40 ms of
    every Spark streaming query's start (a fresh Python process for the driver-side source)."""
    pytest.importorskip("pyspark", reason="needs the [spark] extra: pip install 'asyncconsumer[spark]'")
    out = run(
        """
        import sys
        import asyncconsumer, asyncconsumer.spark.source
        from asyncconsumer.protocol.records import iter_batches

        print(sorted(m for m in sys.modules if m.split(".")[0] == "aiokafka"))
        from tests.support.batches import build_batch  # aiokafka's builders

        batch = next(iter_batches(memoryview(build_batch(5, [b"a"]))))
        print([r.value for r in batch.decode(check_crc=True)])
        """
    )
    assert out.splitlines() == ["[]", "[b'a']"]


@pytest.mark.parametrize(
    "use",
    [
        "from aiokafka import AIOKafkaProducer, AIOKafkaConsumer, __version__",
        "import aiokafka; aiokafka.AIOKafkaConsumer; aiokafka.structs.TopicPartition",
        "from aiokafka import *; AIOKafkaClient",
        "from aiokafka.consumer import AIOKafkaConsumer; from aiokafka import AIOKafkaConsumer as again; "
        "assert again is AIOKafkaConsumer",
        "from aiokafka.client import AIOKafkaClient; import aiokafka; assert aiokafka.AIOKafkaClient is AIOKafkaClient",
        "from aiokafka.admin import AIOKafkaAdminClient; from aiokafka import AIOKafkaProducer",
    ],
)
def test_an_application_using_aiokafka_after_us_gets_all_of_it(use: str) -> None:
    out = run(
        f"""
        import sys, types
        from asyncconsumer.protocol import aiokafka_parts
        {use}
        import aiokafka
        print(type(aiokafka) is types.ModuleType, sorted(aiokafka.__all__)[:2], "aiokafka.producer" in sys.modules)
        """
    )
    assert out == "True ['AIOKafkaClient', 'AIOKafkaConsumer'] True"


def test_aiokafka_imported_first_is_used_as_it_is() -> None:
    out = run(
        """
        import sys, types
        import aiokafka
        import asyncconsumer
        from asyncconsumer.protocol import aiokafka_parts
        print(sys.modules["aiokafka"] is aiokafka, type(aiokafka) is types.ModuleType)
        """
    )
    assert out == "True True"


def test_many_threads_asking_for_aiokafka_at_once_all_get_it() -> None:
    out = run(
        """
        import threading
        from asyncconsumer.protocol import aiokafka_parts
        start = threading.Barrier(8)
        got = []

        def use():
            start.wait()
            from aiokafka import AIOKafkaProducer
            got.append(AIOKafkaProducer)

        threads = [threading.Thread(target=use) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(len(got), len(set(got)))
        """
    )
    assert out == "8 1"
