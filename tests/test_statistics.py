"""SPEC §7 statistics against hand-computed values, and the comparison of two configurations."""

from __future__ import annotations

import math
import re
import statistics

import numpy as np
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


def _bounds(sentence: str) -> tuple[float, float, str]:
    """The 95 % interval a verdict states, and its unit's word."""
    low, high, word = re.search(r"95 % CI ([\d.]+|0|∞)–([\d.]+|∞)× (faster|slower)", sentence).groups()
    return (*(math.inf if x == "∞" else float(x) for x in (low, high)), word)


def test_a_slowdown_states_its_interval_as_a_slowdown_and_a_speedup_as_a_speedup():
    """The newcomer's sentence was "B is 2.87× slower than A (95 % CI 0.15–0.59; ...)": a headline in × slower beside
    an interval in speedup units. Now each sentence keeps one unit; the JSON's speedup fields stay speedups."""
    a, b = runs(5.0, 6.0, 7.0, 8.0, 9.0), runs(10.0, 11.0, 12.0, 13.0, 14.0)
    slower, faster = compare(a, b), compare(b, a)
    assert slower["verdict"].startswith("B is 1.71× slower than A to the target (95 % CI ")
    lo, hi, word = _bounds(slower["verdict"])
    assert word == "slower" and 1 < lo < hi
    # the slowdown's bounds are the reciprocals of the speedup's, swapped
    assert (lo, hi) == (pytest.approx(1 / slower["speedup_ci95"][1], abs=0.005),
                        pytest.approx(1 / slower["speedup_ci95"][0], abs=0.005))
    assert slower["speedup"] == pytest.approx(7 / 12) and slower["speedup_ci95"][1] < 1   # the machine fields unchanged
    assert faster["verdict"].startswith("B is 1.71× faster than A to the target (95 % CI ")
    lo, hi, word = _bounds(faster["verdict"])
    assert word == "faster" and (lo, hi) == (pytest.approx(faster["speedup_ci95"][0], abs=0.005),
                                             pytest.approx(faster["speedup_ci95"][1], abs=0.005))
    # no significant difference: the headline is a speedup, and so is its interval
    same = compare(runs(10.0, 11.0, 12.0, 13.0, 14.0), runs(9.5, 10.5, 11.5, 12.5, 13.5))
    lo, hi = same["speedup_ci95"]
    assert 0 < lo < 1 < hi < math.inf and same["p_value"] >= 0.05
    assert f"speedup of B over A {same['speedup']:.2f}× (95 % CI {lo:.2f}–{hi:.2f}×, which includes 1;" in same["verdict"]
    # B failing most runs is slower without bound: the interval's open end is ∞× slower (its speedup's is 0)
    failed = compare(runs(5.0, 6.0, 7.0, 8.0), runs(None, None, None, 20.0))
    assert failed["speedup"] == 0 and failed["speedup_ci95"] == [0.0, pytest.approx(0.4)]
    assert failed["verdict"].startswith("B did not reach the target in half or more of its runs and A did: B is slower (95 % CI "
                                        "2.50–∞× slower; ")


def test_compare_counts_failures_against_their_configuration():
    a = runs(10.0, 11.0, 12.0, 13.0, 14.0)
    clean, with_failure = compare(a, runs(5.0, 6.0, 7.0, 8.0, 9.0)), compare(a, runs(5.0, 6.0, 7.0, 8.0, None))
    assert with_failure["failures_b"] == 1 and with_failure["speedup"] == pytest.approx(12 / 7)
    assert with_failure["p_value"] > clean["p_value"]
    assert compare(a, runs(None, None, None))["speedup"] == 0.0
    assert compare(runs(None, None, 3.0), a)["speedup"] == math.inf


def test_a_side_that_failed_is_said_to_have_failed_never_given_a_speedup_of_0_or_infinity():
    """The attack's case: one success against one failure read "speedup of B over A 0×", as if 0 were measured."""
    for a, b, who in ((runs(3.0), runs(None), "B did not reach"), (runs(None), runs(3.0), "A did not reach")):
        said = compare(a, b, target="mnist ≥ 99")["verdict"]
        assert said.startswith(f"No significant difference in the time to mnist ≥ 99: {who} it in half or more of its runs")
        assert "speedup of B over A" not in said        # no "0×" or "∞×" as if measured


def test_a_summary_says_its_times_are_the_successes_when_a_run_failed():
    """`compare` counts a failure as infinitely slow; the summary's median is over the successes, and says so."""
    from dawnbench.cli.display import summary_line

    assert summary_line(summarize(runs(10.0, 12.0, None))).startswith("success 2/3 · TTA of the 2 successes: median ")
    assert summary_line(summarize(runs(10.0, 12.0))).startswith("success 2/2 · TTA median ")


def test_compare_no_difference():
    c = compare(runs(10.0, 12.0, 14.0), runs(11.0, 13.0, 12.5))
    assert c["p_value"] >= 0.05 and c["verdict"].startswith("No significant difference")


def test_three_against_three_cannot_be_significant_and_the_interval_says_so_too():
    """The entrant's case: 10.0/10.5/11.0 s against 5.0/5.2/5.5 s. Before, a bootstrap interval of
    1.82–2.20 sat beside 'no significant difference'; now the interval comes from the same test."""
    c = compare(runs(10.0, 10.5, 11.0), runs(5.0, 5.2, 5.5))
    assert c["p_value"] == pytest.approx(0.1) and c["smallest_p"] == pytest.approx(0.1)   # 2 of C(6, 3) = 20
    lo, hi = c["speedup_ci95"]
    assert lo <= 1 <= hi
    assert c["verdict"].startswith("No significant difference") and "which includes 1" in c["verdict"]
    assert "the smallest p these runs allow is 0.1; 4 runs of each could reach p < 0.05" in c["verdict"]
    four = compare(runs(10.0, 10.5, 11.0, 11.5), runs(5.0, 5.2, 5.5, 5.8))
    assert four["p_value"] == pytest.approx(2 / 70) and four["speedup_ci95"][0] > 1
    assert four["verdict"].startswith("B is")


@pytest.mark.parametrize("seed", range(12))
def test_the_p_value_is_scipys_exact_mann_whitney_when_no_runs_tie(seed):
    from scipy import stats as sps

    rng = np.random.default_rng(seed)
    m, n = rng.integers(3, 8, 2)
    a, b = rng.lognormal(2.0, 0.3, m), rng.lognormal(2.0 + rng.normal(0, 0.3), 0.3, n)
    c = compare(runs(*a), runs(*b))
    assert c["p_value"] == pytest.approx(sps.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)
    # the interval is the set of speedups scipy's test does not reject: inside accepted, just outside rejected
    lo, hi = c["speedup_ci95"]
    for s, accepted in ((math.sqrt(lo * hi) if lo > 0 and math.isfinite(hi) else None, True),
                        (lo * 0.98 if lo > 0 else None, False), (hi * 1.02 if math.isfinite(hi) else None, False)):
        if s is not None:
            p = sps.mannwhitneyu(a, b * s, alternative="two-sided", method="exact").pvalue
            assert (p >= 0.05) == accepted, (s, p, lo, hi)


@pytest.mark.parametrize("seed", range(8))
def test_with_failures_the_p_value_is_a_permutation_test_of_the_ranks(seed):
    """Failures tie for last; scipy's own permutation test of the same statistic is the reference."""
    from scipy import stats as sps

    rng = np.random.default_rng(100 + seed)
    a = [float(x) if rng.random() > 0.25 else None for x in rng.lognormal(2.0, 0.3, 5)]
    b = [float(x) if rng.random() > 0.25 else None for x in rng.lognormal(1.8, 0.3, 4)]
    x = np.array([math.inf if t is None else t for t in a])
    y = np.array([math.inf if t is None else t for t in b])
    big = np.finfo(float).max

    def distance(u: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
        stat = sps.mannwhitneyu(np.where(np.isinf(u), big, u), np.where(np.isinf(v), big, v), axis=axis).statistic
        return np.abs(stat - u.shape[axis] * v.shape[axis] / 2)

    reference = sps.permutation_test((x, y), distance, permutation_type="independent", alternative="greater",
                                     n_resamples=np.inf, vectorized=True).pvalue
    assert compare(runs(*a), runs(*b))["p_value"] == pytest.approx(reference)


def test_the_interval_and_the_verdict_never_disagree():
    rng = np.random.default_rng(7)
    for _ in range(200):
        m, n = rng.integers(3, 9, 2)
        a = [float(t) if rng.random() > 0.1 else None for t in rng.lognormal(2.0, 0.25, m)]
        b = [float(t) if rng.random() > 0.1 else None for t in rng.lognormal(2.0 + rng.normal(0, 0.4), 0.25, n)]
        c = compare(runs(*a), runs(*b))
        if c["speedup_ci95"] is None or math.isnan(c["speedup"]):
            continue
        lo, hi = c["speedup_ci95"]
        excludes_one = not lo <= 1 <= hi
        assert not (excludes_one and c["p_value"] >= 0.05), c
        assert not (excludes_one and c["verdict"].startswith("No significant")), c


def test_identical_groups_are_said_to_be_identical_and_a_drawn_p_value_is_never_zero():
    same = compare(runs(3.0, 4.0, 5.0), runs(5.0, 3.0, 4.0))
    assert same["identical"] and same["verdict"].startswith("The two groups are identical")
    far = compare(runs(*[10.0 + i for i in range(20)]), runs(*[1.0 + i / 100 for i in range(20)]))
    assert not far["exact"] and far["p_value"] > 0 and "at least 1 in" in far["verdict"]


def test_one_run_against_one_or_more_is_compared_without_scipys_refusal():
    """SciPy's permutation_test wants two runs a side; a single run's null is each rank in turn."""
    assert compare(runs(3.0), runs(4.0))["p_value"] == 1.0
    assert compare(runs(3.0, 2.0, 5.0), runs(4.0))["p_value"] == 1.0
