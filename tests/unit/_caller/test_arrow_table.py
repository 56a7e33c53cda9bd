"""``poll_arrow``'s tables: the schema, zero-copy wrapping of the sink's buffers, chunks, and pyarrow as an extra."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from asyncconsumer import Consumer, TopicPartition
from asyncconsumer._caller import arrow_table
from asyncconsumer.protocol.v2decode import ColumnSink
from tests.support.batches import build_batch
from tests.support.extras import requires_extra

pa = requires_extra("arrow", "pyarrow")

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_a_table_has_the_issue_s_columns_and_keeps_nulls() -> None:
    sink = ColumnSink(True)
    batch = build_batch(5, [b"v0", None, b""], keys=[None, b"k1", b"k2"], headers=[("h", None), ("é", b"x")])
    sink.fill(batch, -1, 0, 0, 10, 0, 3)
    table = arrow_table.to_table([sink.finish()], ["events"], include_headers=True)
    table.validate(full=True)
    assert table.schema == arrow_table.schema(True)
    assert table.column("topic").to_pylist() == ["events"] * 3
    assert table.column("partition").to_pylist() == [3, 3, 3]
    assert table.column("offset").to_pylist() == [5, 6, 7]
    assert table.column("key").to_pylist() == [None, b"k1", b"k2"]
    assert table.column("value").to_pylist() == [b"v0", None, b""]
    assert table.column("headers").to_pylist()[0] == [{"key": "h", "value": None}, {"key": "é", "value": b"x"}]
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [1_700_000_000_000 + i for i in range(3)]


def test_chunks_become_record_batches_of_one_table_with_one_topic_dictionary() -> None:
    sink = ColumnSink(False)
    sink.fill(build_batch(0, [b"a", b"b"]), -1, 0, 0, 10, 0, 0)
    first = sink.finish()
    sink.fill(build_batch(2, [b"c"]), -1, 0, 0, 10, 1, 0)
    table = arrow_table.to_table([first, sink.finish()], ["t0", "t1"], include_headers=False)
    assert table.num_rows == 3 and len(table.to_batches()) == 2
    assert table.column("topic").to_pylist() == ["t0", "t0", "t1"]


def test_the_value_column_wraps_the_sink_s_buffer_without_a_copy() -> None:
    sink = ColumnSink(False)
    sink.fill(build_batch(0, [b"x" * 1000] * 4), -1, 0, 0, 10, 0, 0)
    parts = sink.finish()
    table = arrow_table.to_table([parts], ["t"], include_headers=False)
    data = table.column("value").chunk(0).buffers()[2]
    assert data.address == pa.py_buffer(parts["value"][2]).address


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed: nothing to import")
def test_a_table_does_not_import_pandas() -> None:
    # A fresh interpreter: the test session may have imported pandas already. pyarrow's pa.array(list) imports it.
    code = (
        "import sys\n"
        "from asyncconsumer._caller import arrow_table\n"
        "from asyncconsumer.protocol.v2decode import ColumnSink\n"
        "from tests.support.batches import build_batch\n"
        "sink = ColumnSink(False)\n"
        "sink.fill(build_batch(0, [b'a', b'b']), -1, 0, 0, 10, 1, 0)\n"
        "table = arrow_table.to_table([sink.finish()], ['t0', 'événements'], include_headers=False)\n"
        "table.validate(full=True)\n"
        "print(table.column('topic').to_pylist(), 'pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert done.stdout.split("\n")[0] == "['événements', 'événements'] False"


def test_an_empty_poll_is_a_table_with_the_columns_and_no_rows() -> None:
    table = arrow_table.to_table([ColumnSink(False).finish()], [], include_headers=False)
    assert table.num_rows == 0 and table.schema == arrow_table.schema(False)


def test_without_pyarrow_poll_arrow_names_the_extra_and_consumes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what an import of a package that is not installed meets
    consumer = Consumer("127.0.0.1:9", auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("t", 0)])
        with pytest.raises(ImportError, match=r"asyncconsumer\[arrow\]") as info:
            consumer.poll_arrow(timeout_ms=0)
        assert info.value.name == "pyarrow"
    finally:
        consumer.close()
