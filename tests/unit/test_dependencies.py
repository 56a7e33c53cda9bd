"""What a consumer's process loads of the package's dependencies: nothing of aiokafka, on the import path or the
record path, and nothing patched in ``sys.modules``. aiokafka serves the demo's producer and the tests' second
reading of record batches only (``tests.support.batches``), so the probe runs in a fresh interpreter that gets the
batches, built here with aiokafka's builders, as bytes on its stdin."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.batches import GZIP, LZ4, SNAPPY, ZSTD, build_batch, build_legacy

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent(
    """
    import json, sys
    import asyncconsumer
    from asyncconsumer._caller.fetch_collector import FetchCollector
    from asyncconsumer._state.fetch_buffer import FetchBuffer
    from asyncconsumer._state.signal import CallerSignal
    from asyncconsumer._state.subscription import SubscriptionState
    from asyncconsumer.config import ConsumerConfig
    from tests.support.fetch_buffer import TP, add

    asyncconsumer.Consumer("127.0.0.1:1", group_id="g").close()
    asyncconsumer.AsyncConsumer("127.0.0.1:1", group_id="g")
    if sys.argv[1] == "spark":
        import asyncconsumer.spark.source
    read = []
    for first, hex_records in json.load(sys.stdin):
        subs = SubscriptionState("earliest")
        subs.assign([TP])
        subs.seek(TP, first)
        buffer = FetchBuffer(1 << 20, CallerSignal())
        add(buffer, subs, bytes.fromhex(hex_records), first)
        collector = FetchCollector(ConsumerConfig.from_kwargs("h:1", check_crcs=True), subs, buffer)
        read.append([[r.offset, r.value.decode()] for r in collector.collect(1000)[TP]])
    print(json.dumps(read))
    print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "aiokafka")))
    """
)


def test_a_consumer_imports_and_decodes_every_record_format_without_aiokafka() -> None:
    """v2 batches uncompressed and with each codec, and magic 0/1 message sets (a Kafka 4 broker still serves
    them from segments written before it), through the fetch collector; with the Spark source imported too when
    the ``[spark]`` extra is installed. Takes 1-2 s (a fresh interpreter)."""
    values = [b"a", b"b", b"c"]
    sets = [build_batch(10, values, compression=codec) for codec in (0, GZIP, SNAPPY, LZ4, ZSTD)]
    sets += [build_legacy(10, 0, values, compression=codec) for codec in (0, GZIP, SNAPPY)]
    sets += [build_legacy(10, 1, values, compression=codec) for codec in (0, GZIP, SNAPPY, LZ4)]
    spark = "spark" if importlib.util.find_spec("pyspark") is not None else "no-spark"
    child = subprocess.run(
        [sys.executable, "-c", PROBE, spark],
        input=json.dumps([[10, records.hex()] for records in sets]),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert child.returncode == 0, child.stderr
    read, aiokafka = (json.loads(line) for line in child.stdout.splitlines())
    assert read == [[[10, "a"], [11, "b"], [12, "c"]]] * len(sets)
    assert aiokafka == []


def test_nothing_in_the_package_patches_sys_modules() -> None:
    """Importing the consumer must not register, replace or defer anyone's modules in the user's process."""
    writes = re.compile(r"sys\.modules(\[[^\]]+\]\s*=|\.(setdefault|update|pop)\()|del sys\.modules|module_from_spec")
    patching = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "asyncconsumer").rglob("*.py"))
        if writes.search(path.read_text())
    ]
    assert patching == []
