"""The CLI's pure parts: decoding bytes, record formatting, the progress line, the offsets table (the admin client's
rows)."""

from __future__ import annotations

import io
import json

import pytest

from asyncconsumer.records import ConsumerRecord
from asyncconsumer.tools.admin import partition_offsets
from asyncconsumer.tools.cli import Progress, decode_bytes, format_record, offsets_lines


def _record(key: bytes | None, value: bytes | None) -> ConsumerRecord:
    return ConsumerRecord("t", 1, 7, 1000, 0, key, value, (), -1, len(key or b""), len(value or b""))


@pytest.mark.parametrize(
    ("how", "expected"),
    [("utf8", "h\ufffd"), ("hex", "68ff"), ("base64", "aP8="), ("raw", "h\udcff")],
)
def test_decode_bytes(how: str, expected: str) -> None:
    assert decode_bytes(b"h\xff", how) == expected
    assert decode_bytes(None, how) is None


def test_format_record_text_and_json() -> None:
    record = _record(b"k", b"\x01\x02")
    assert format_record(record, "text", "utf8", "hex") == "t-1@7\tk\t0102"
    assert json.loads(format_record(record, "json", "utf8", "base64"))["value"] == "AQI="


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_rewrites_one_line_at_most_every_interval_and_clears_it() -> None:
    now = [0.0]
    stream = _Tty()
    progress = Progress(stream, interval_s=1.0, clock=lambda: now[0])
    now[0] = 2.0
    progress.update(100)
    progress.update(150)  # too soon: not shown
    now[0] = 3.5
    progress.update(300, 1000)
    progress.close()
    shown = stream.getvalue().split("\r\x1b[K")
    assert shown == ["", "  100 records  50/s  2 s", "  300/1,000 (30%) records  86/s  4 s", ""]


def test_progress_is_silent_off_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    progress.update(1, force=True)
    progress.close()
    assert stream.getvalue() == ""


def test_offsets_table_and_json() -> None:
    rows = partition_offsets("t", [1, 0], {0: 0, 1: 4}, {0: 10, 1: 4})
    assert offsets_lines(rows, "text") == [
        "TOPIC  PARTITION  BEGINNING  END  RECORDS",
        "t              0          0   10       10",
        "t              1          4    4        0",
    ]
    assert json.loads(offsets_lines(rows, "json")[0])[1] == {
        "topic": "t",
        "partition": 1,
        "beginning": 4,
        "end": 4,
        "records": 0,
    }
