"""The v2 record decoder in use: the compiled one (``_v2records_c``, built with the package) when it imports, else
the pure-Python reference (``_v2records``), which gives the same records, buffers and errors, only slower."""

from __future__ import annotations

from asyncconsumer.protocol._v2records import RECORDS_AT, DecodeError

try:
    from asyncconsumer.protocol._v2records_c import ColumnSink, fill_records

    IMPLEMENTATION = "c"
except ImportError:  # no compiler where the package was built: the reference decoder stands in
    from asyncconsumer.protocol._v2records import ColumnSink, fill_records

    IMPLEMENTATION = "python"

__all__ = ["IMPLEMENTATION", "RECORDS_AT", "ColumnSink", "DecodeError", "fill_records"]
