"""SPEC §7 statistics against hand-computed values, and the comparison of two configurations."""

from __future__ import annotations

import math
import statistics

import pytest

from dawnbench.statistics import (
    RunSample,
    compare,
    geometric_ci95,
    olympic_mean,
    summarize,
)


def runs(*ttas, epochs=None) -> list[RunSample]:
    epochs = epochs or [None] * len(ttas)
    return [RunSample(f"r{i}", t is not None, t, e, "success" if t is not None else "not_reached")
            for i, (t, e) in enumerate(zip(ttas, epochs))]


def test_summary_by_hand():
    s = summarize(runs(10.0, 20.0, 30.0, 40.0, epochs=[2, 2, 3, 4]))
    assert s["runs"] == 4 and s["successes"] == 4 and s["success_fraction"] == 1.0
    assert s["tta_mean_s"] == 25.0 and s["tta_median_s"] == 25.0
    assert s["tta_std_s"] == pytest.approx(math.sqrt(125))          # population: Σd²/n = 500/4
    assert s["tta_cov"] == pytest.approx(math.sqrt(125) / 25)       # 0.4472
    assert s["tta_std_sample_s"] == pytest.approx(math.sqrt(500 / 3))
    # on the logs: mean ln(240000)/4, geometric mean 22.134; t(0.975, 3) = 3.182446, sem = stdev(ln) / 2
    logs = [math.log(v) for v in (10, 20, 30, 40)]
    half = 3.182446 * statistics.stdev(logs) / 2
    assert s["tta_geomean_s"] == pytest.approx(240000 ** 0.25)
    assert s["tta_ci95_s"] == pytest.approx([240000 ** 0.25 * math.exp(-half), 240000 ** 0.25 * math.exp(half)],
                                            rel=1e-5)
    assert s["olympic_mean_s"] == 25.0
    # epochs [2,2,3,4]: mean 2.75, pstd sqrt(0.6875); time/epoch [5,10,10,10]: mean 8.75, pstd sqrt(4.6875)
    assert s["epochs_mean"] == 2.75 and s["epochs_std"] == pytest.approx(math.sqrt(0.6875))
    assert s["time_per_epoch_mean_s"] == 8.75 and s["time_per_epoch_std_s"] == pytest.approx(math.sqrt(4.6875))
    assert s["std_ratio"] == pytest.approx((math.sqrt(0.6875) / 2.75) / (math.sqrt(4.6875) / 8.75))  # 1.2185


def test_failed_runs_count_in_success_fraction_not_in_tta():
    s = summarize(runs(10.0, None, 30.0, 20.0))
    assert s["success_fraction"] == 0.75 and s["tta_mean_s"] == 20.0 and s["tta_max_s"] == 30.0
    assert s["statuses"] == {"not_reached": 1, "success": 3}


@pytest.mark.parametrize("ttas, expected", [
    ((10.0, 20.0, 30.0, 40.0), 25.0),          # drop 10 and 40
    ((10.0, 20.0, 30.0, None), 25.0),          # the failure is the slowest: drop 10 and it
    ((40.0, 10.0, None, 30.0, 20.0), 30.0),    # mean of 20, 30, 40
    ((10.0, None, 30.0, None), None),          # two failures: undefined
    ((10.0, 20.0), None),                      # fewer than three runs
])
def test_olympic_mean(ttas, expected):
    assert olympic_mean(runs(*ttas)) == expected


def test_ci_is_positive_and_needs_three_runs():
    assert geometric_ci95([5.0]) is None and geometric_ci95([491.0, 800.0]) is None  # two runs: no interval
    lo, hi = geometric_ci95([491.0, 800.0, 620.0])
    assert 0 < lo < (491 * 800 * 620) ** (1 / 3) < hi  # a t-interval on the times themselves went below 0


def test_compare_separated_samples():
    a, b = runs(10.0, 11.0, 12.0, 13.0, 14.0), runs(5.0, 6.0, 7.0, 8.0, 9.0)
    c = compare(a, b)
    assert c["speedup"] == pytest.approx(12 / 7)
    assert c["p_value"] == pytest.approx(2 / 252)  # exact two-sided Mann-Whitney, no overlap, 5 vs 5
    lo, hi = c["speedup_ci95"]
    assert lo <= 12 / 7 <= hi and lo > 1
    assert c["verdict"].startswith("B is 1.71× faster than A")


def test_compare_counts_failures_against_their_configuration():
    a = runs(10.0, 11.0, 12.0, 13.0, 14.0)
    clean, with_failure = compare(a, runs(5.0, 6.0, 7.0, 8.0, 9.0)), compare(a, runs(5.0, 6.0, 7.0, 8.0, None))
    assert with_failure["failures_b"] == 1 and with_failure["speedup"] == pytest.approx(12 / 7)
    assert with_failure["p_value"] > clean["p_value"]
    assert compare(a, runs(None, None, None))["speedup"] == 0.0
    assert compare(runs(None, None, 3.0), a)["speedup"] == math.inf


def test_compare_no_difference():
    c = compare(runs(10.0, 12.0, 14.0), runs(11.0, 13.0, 12.5))
    assert c["p_value"] >= 0.05 and c["verdict"].startswith("No significant difference")
