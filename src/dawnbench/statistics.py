"""Statistics over runs of one configuration (SPEC §7).

This module holds the summary printed after ``--runs N``; the fuller §7 statistics
(CV, olympic mean, confidence intervals, comparisons) build on it.
"""

from __future__ import annotations

import statistics as st
from collections.abc import Sequence
from typing import Any

from dawnbench.harness.record import RunResult


def summarize(results: Sequence[RunResult]) -> dict[str, Any]:
    ttas = [r.time_to_accuracy_s for r in results if r.succeeded]
    return {
        "runs": len(results),
        "successes": len(ttas),
        "success_fraction": len(ttas) / len(results) if results else None,
        "tta_median_s": st.median(ttas) if ttas else None,
        "tta_mean_s": st.fmean(ttas) if ttas else None,
        "tta_min_s": min(ttas) if ttas else None,
        "tta_max_s": max(ttas) if ttas else None,
        "statuses": {s: sum(r.status == s for r in results) for s in sorted({r.status for r in results})},
    }
