"""Plots as PNG files (matplotlib, no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def latency_histogram(latencies_ms: Sequence[float], figures: dict[str, Any], path: Path, title: str) -> Path:
    """Histogram of batch-1 latencies with the mean and p50/p90/p99 marked."""
    fig, ax = plt.subplots(figsize=(7, 3.8), dpi=110)
    ordered = sorted(latencies_ms)
    upper = ordered[min(len(ordered) - 1, int(0.999 * len(ordered)))]  # keep rare outliers off the axis
    ax.hist([v for v in ordered if v <= upper], bins=80, color="#4c72b0", alpha=0.85)
    for key, label, color in [("latency_p50_ms", "p50", "#55a868"), ("latency_p90_ms", "p90", "#dd8452"),
                              ("latency_p99_ms", "p99", "#c44e52"), ("latency_mean_ms", "mean", "black")]:
        ax.axvline(figures[key], color=color, linestyle="--" if label == "mean" else "-", linewidth=1.4,
                   label=f"{label} {figures[key]:.3f} ms")
    ax.set_xlabel("latency per item (ms)")
    ax.set_ylabel("items")
    ax.set_title(title, fontsize=10)
    shown = sum(v <= upper for v in ordered)
    if shown < len(ordered):
        ax.text(0.99, 0.6, f"{len(ordered) - shown} slowest items beyond the axis", ha="right",
                transform=ax.transAxes, fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)
