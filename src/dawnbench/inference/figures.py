"""The arithmetic of the inference figures: percentiles and costs.

Percentiles use the nearest-rank rule: the p-th percentile of n latencies is the
smallest measured latency such that at least p % of all latencies are no larger,
i.e. ``sorted[ceil(p/100 · n) − 1]``. It is always a latency that was observed,
and it is the rule MLPerf LoadGen applies to its per-query latencies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MS_PER_HOUR = 3_600_000.0
PERCENTILES = (50, 90, 99)


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        raise ValueError("percentile of no values")
    if not 0 < p <= 100:
        raise ValueError(f"percentile must be in (0, 100], not {p}")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def latency_summary(latencies_ms: Sequence[float]) -> dict[str, float]:
    """``latency_mean_ms`` (the DAWNBench figure) and the p50/p90/p99 latencies."""
    summary = {"latency_mean_ms": sum(latencies_ms) / len(latencies_ms)}
    for p in PERCENTILES:
        summary[f"latency_p{p}_ms"] = percentile(latencies_ms, p)
    summary["latency_min_ms"] = min(latencies_ms)
    summary["latency_max_ms"] = max(latencies_ms)
    return summary


def cost_per_item_usd(latency_ms: float, usd_per_hour: float | None) -> float | None:
    """DAWNBench's inference ``cost``: $/h × latency in hours; None without a price."""
    return None if usd_per_hour is None else latency_ms / MS_PER_HOUR * usd_per_hour


def cost_per_10k_usd(latency_ms: float, usd_per_hour: float | None) -> float | None:
    """Inference cost per 10,000 items = mean latency in hours × 10,000 × $/h."""
    per_item = cost_per_item_usd(latency_ms, usd_per_hour)
    return None if per_item is None else per_item * 10_000
