"""Spark's Kafka source metrics (``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest``, ``avgOffsetsBehindLatest``)
computed from a streaming query's progress, since a Python data source cannot put them there itself.

In Spark 4.3 a source's ``metrics`` in the progress come from ``ReportsSourceMetrics``, which the JVM side of Python
stream readers (``PythonMicroBatchStream*``) does not implement; what a Python reader can report is
``reportLatestOffset()``, the progress's ``latestOffset``. Spark's Kafka source computes its metrics from exactly
that and the batch's ``endOffset``; ``offsets_behind_latest`` does the same, for either source's progress.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ["offsets_behind_latest"]


def offsets_behind_latest(source: Mapping[str, Any] | Any) -> dict[str, str]:
    """Spark's Kafka source metrics for one source of a progress, as Spark writes them (strings).

    ``source`` is ``query.lastProgress["sources"][i]`` (a dict) or a listener's ``SourceProgress`` (offsets as
    JSON text). Per partition of ``latestOffset``: its latest offset less the batch's ``endOffset`` there (0 when
    the batch has not seen the partition, as Spark does). Empty, as Spark's, before both offsets are known.
    """
    end = _offsets(_field(source, "endOffset"))
    latest = _offsets(_field(source, "latestOffset"))
    if end is None or latest is None or not latest:
        return {}
    behind = [offset - end.get(tp, 0) for tp, offset in latest.items()]
    return {
        "minOffsetsBehindLatest": str(min(behind)),
        "maxOffsetsBehindLatest": str(max(behind)),
        "avgOffsetsBehindLatest": java_double(sum(behind) / len(behind)),
    }


def _field(source: Mapping[str, Any] | Any, name: str) -> Any:
    return source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)


def _offsets(value: Any) -> dict[tuple[str, int], int] | None:
    """``{"topic": {"0": 42}}`` (or its JSON text) as ``{(topic, partition): offset}``; None when absent."""
    if isinstance(value, str):  # pyspark writes a missing offset as "null" or "None"
        value = json.loads(value) if value.strip() not in ("", "null", "None") else None
    if not isinstance(value, Mapping):
        return None
    return {(topic, int(p)): int(o) for topic, parts in value.items() for p, o in parts.items()}


def java_double(value: float) -> str:
    """``value`` as Java's ``Double.toString`` writes it (``2.5``, ``0.0``, ``1.25E7``), so the metrics read as
    Spark's: plain decimals in [1e-3, 1e7), scientific notation outside."""
    if value == 0:
        return "0.0"
    if 1e-3 <= abs(value) < 1e7:
        return repr(value)  # Python writes this range in plain decimals too, always with a point
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    power = len(digits) + exponent - 1
    mantissa = "".join(map(str, digits))
    return f"{'-' if sign else ''}{mantissa[0]}.{mantissa[1:] or '0'}E{power}"
