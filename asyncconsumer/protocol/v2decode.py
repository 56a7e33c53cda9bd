"""The v2 record decoder in use: the compiled one (``_v2records_c``, built with the package) when it imports, else
the pure-Python reference (``_v2records``), which gives the same records, buffers and errors, only slower."""

from __future__ import annotations

from typing import cast

from asyncconsumer.protocol import _v2records
from asyncconsumer.protocol._v2records import RECORDS_AT, DecodeError, raw_record

ColumnSink = _v2records.ColumnSink
fill_records = _v2records.fill_records
IMPLEMENTATION = "python"
try:
    from asyncconsumer.protocol import _v2records_c
except ImportError:  # no compiler where the package was built: the reference decoder stands in
    pass
else:
    ColumnSink = cast("type[_v2records.ColumnSink]", _v2records_c.ColumnSink)
    fill_records = _v2records_c.fill_records
    IMPLEMENTATION = "c"

__all__ = ["IMPLEMENTATION", "RECORDS_AT", "ColumnSink", "DecodeError", "fill_records", "raw_record"]
