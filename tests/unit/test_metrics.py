"""The rate and latency windows behind ``consumer.metrics()``."""

from __future__ import annotations

from asyncconsumer.metrics import LatencyWindow, RateMeter


def test_rates_are_the_change_over_the_window() -> None:
    meter = RateMeter(window_s=10)
    meter.sample(0, 0, 0)
    meter.sample(1_000, 500, 50_000)
    assert meter.rates(2_000, 1_000, 100_000) == (500.0, 50_000.0)
    meter.sample(12_000, 6_000, 600_000)  # the samples older than 10 s fall out
    meter.sample(13_000, 6_100, 610_000)
    records, size = meter.rates(14_000, 6_200, 620_000)
    assert records == (6_200 - 6_000) / 2 and size == (620_000 - 600_000) / 2


def test_no_samples_means_no_rate() -> None:
    assert RateMeter().rates(5_000, 10, 10) == (0.0, 0.0)


def test_latency_window_keeps_the_last_values() -> None:
    window = LatencyWindow(size=3)
    assert window.summary() == (None, None)
    for value in (100, 1, 2, 3):
        window.add(value)
    assert window.summary() == (2.0, 3)
