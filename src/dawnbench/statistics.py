"""Statistics over runs of one configuration, and the comparison of two.

Runs of one configuration differ only in seed. Each run is reduced to a :class:`RunSample` — did it reach the
target, its TTA, its epochs to target — so that this project's run records and imported MLPerf logs are treated
alike. The rules where the spec leaves a choice (population standard deviations, the log-scale t-interval, the
olympic mean, one permutation test of the log TTAs' ranks giving the Hodges–Lehmann speedup, its interval and the
p-value, exact up to ``EXACT_LIMIT`` arrangements) are docs/rules.md, "Statistics over runs".
"""

from __future__ import annotations

import itertools
import math
import statistics as st
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

ALPHA = 0.05
EXACT_LIMIT = 200_000        # arrangements of the pooled runs counted exactly (10 against 10: 184,756)
PERMUTATIONS = 100_000       # beyond: this many arrangements drawn with a fixed seed


@dataclass(frozen=True)
class RunSample:
    """One run, reduced to what the statistics need."""

    name: str                           # run directory or log file
    succeeded: bool
    tta_s: float | None                 # None unless succeeded
    epochs: float | None = None         # epochs to target (or trained, if it failed)
    status: str = "success"
    samples_per_s: float | None = None  # training throughput, when known
    time_per_epoch_s: float | None = None  # timed seconds per epoch up to the last evaluation

    @classmethod
    def from_result(cls, r: Any) -> RunSample:
        """From a :class:`~dawnbench.records.record.RunResult`."""
        throughput = (r.throughput or {}).get("samples_per_s")
        epochs = r.epochs_to_target if r.succeeded else (r.evals[-1].epoch if r.evals else None)
        last = r.evals[-1] if r.evals else None
        per_epoch = last.timed_s / last.epoch if last and last.epoch > 0 else None
        return cls(r.run_dir, r.succeeded, r.time_to_accuracy_s if r.succeeded else None, epochs,
                   r.status, throughput, per_epoch)


def _pstd(values: Sequence[float]) -> float | None:
    return st.pstdev(values) if len(values) > 1 else None    # one run has no spread to tell, not a spread of 0


def _cov(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = st.fmean(values)
    return st.pstdev(values) / mean if mean else None


CI_MIN_RUNS = 3  # below this a t-interval spans orders of magnitude (t = 12.7 with two runs): none is given


def geometric_ci95(values: Sequence[float]) -> tuple[float, float] | None:
    """95 % interval of a positive quantity: Student-t on the logarithms, mapped back with exp.

    It brackets the geometric mean of the TTAs (the median, when TTA is log-normal, as times
    are) and can never reach zero or below. None with fewer than ``CI_MIN_RUNS`` values.
    """
    if len(values) < CI_MIN_RUNS or min(values) <= 0:
        return None
    from scipy import stats as sps  # loaded on first use (about a second)

    logs = [math.log(v) for v in values]
    mean, sem = st.fmean(logs), st.stdev(logs) / math.sqrt(len(logs))
    half = sps.t.ppf(1 - ALPHA / 2, len(logs) - 1) * sem
    return (math.exp(mean - half), math.exp(mean + half))


def olympic_mean(samples: Sequence[RunSample]) -> float | None:
    """Drop the fastest and slowest (a failure is the slowest); None if undefined."""
    failures = sum(not s.succeeded for s in samples)
    if len(samples) < 3 or failures > 1:
        return None
    ttas = sorted(s.tta_s for s in samples if s.succeeded)
    kept = ttas[1:] if failures else ttas[1:-1]
    return st.fmean(kept)


def first_run_ratio(samples: Sequence[RunSample]) -> float | None:
    """SPEC §12: the first run's time per epoch / the median of the later runs' (≥ 3 runs, in run order).

    Above ``FIRST_RUN_WARNING`` the first run paid one-time costs (CUDA start-up, autotuning,
    compilation) inside its timed region: the entry's warm-up missed them.
    """
    per_epoch = [s.time_per_epoch_s for s in samples]
    if len(per_epoch) < 3 or any(v is None for v in per_epoch):
        return None
    return per_epoch[0] / st.median(per_epoch[1:])


FIRST_RUN_WARNING = 1.2


def summarize(runs: Sequence[Any]) -> dict[str, Any]:
    """The §7 summary of one configuration (``RunResult`` or :class:`RunSample` items)."""
    samples = [r if isinstance(r, RunSample) else RunSample.from_result(r) for r in runs]
    ok = [s for s in samples if s.succeeded]
    ttas = [s.tta_s for s in ok]
    with_epochs = [s for s in ok if s.epochs]
    epochs = [s.epochs for s in with_epochs]
    per_epoch = [s.tta_s / s.epochs for s in with_epochs]
    cv_epochs, cv_per_epoch = _cov(epochs), _cov(per_epoch)
    ci = geometric_ci95(ttas)
    throughputs = [s.samples_per_s for s in samples if s.samples_per_s]  # failed runs trained too
    return {
        "runs": len(samples),
        "successes": len(ok),
        "success_fraction": len(ok) / len(samples) if samples else None,
        "tta_mean_s": st.fmean(ttas) if ttas else None,
        "tta_median_s": st.median(ttas) if ttas else None,
        "tta_min_s": min(ttas) if ttas else None,
        "tta_max_s": max(ttas) if ttas else None,
        "tta_std_s": _pstd(ttas),
        "tta_cov": _cov(ttas),
        "tta_std_sample_s": st.stdev(ttas) if len(ttas) > 1 else None,
        "tta_geomean_s": st.geometric_mean(ttas) if ttas and min(ttas) > 0 else None,
        "tta_ci95_s": list(ci) if ci else None,  # of the geometric mean; None below CI_MIN_RUNS successes
        "olympic_mean_s": olympic_mean(samples),
        "epochs_mean": st.fmean(epochs) if epochs else None,
        "epochs_std": _pstd(epochs),
        "epochs_cov": cv_epochs,
        "time_per_epoch_mean_s": st.fmean(per_epoch) if per_epoch else None,
        "time_per_epoch_std_s": _pstd(per_epoch),
        "time_per_epoch_cov": cv_per_epoch,
        "std_ratio": cv_epochs / cv_per_epoch if cv_epochs is not None and cv_per_epoch else None,
        "samples_per_s_mean": st.fmean(throughputs) if throughputs else None,
        "first_run_ratio": first_run_ratio(samples),
        "statuses": {s: sum(x.status == s for x in samples) for s in sorted({x.status for x in samples})},
    }


def _log_ttas(samples: Sequence[RunSample]) -> np.ndarray:
    """log TTA of each run; a failed run is +∞ (infinitely slow)."""
    return np.array([math.log(s.tta_s) if s.succeeded else math.inf for s in samples], dtype=float)


def _midranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1…N with ties sharing their mean rank (∞ ties with ∞)."""
    from scipy import stats as sps

    return sps.rankdata(np.where(np.isinf(values), np.finfo(float).max, values))


class _RankTest:
    """The two-sided permutation test of A's Mann–Whitney U, by SciPy's ``permutation_test``: the statistic is
    |U − mn/2| over every way of dealing the pooled runs' ranks into m and n (``PERMUTATIONS`` ways drawn with
    ``seed`` above ``EXACT_LIMIT``). The null distribution depends only on the pooled ranks, ties included,
    so one is computed per set of ranks met and reused for every shift that gives the same ties."""

    def __init__(self, m: int, n: int, seed: int) -> None:
        self.m, self.n, self.seed = m, n, seed
        self.exact = math.comb(m + n, m) <= EXACT_LIMIT
        self._nulls: dict[tuple[float, ...], np.ndarray] = {}

    def _distance(self, ranks_a: np.ndarray, axis: int = -1) -> np.ndarray:
        m, n = self.m, self.n
        return np.abs(ranks_a.sum(axis=axis) - m * (m + 1) / 2 - m * n / 2)

    def _null(self, ranks: np.ndarray) -> np.ndarray:
        key = tuple(np.sort(ranks))
        if key not in self._nulls and min(self.m, self.n) < 2:
            # SciPy refuses a sample of one run; its null is as small as it is plain: each rank in turn is A's
            picks = itertools.combinations(range(len(ranks)), self.m)
            self._nulls[key] = np.array([self._distance(ranks[list(p)]) for p in picks])
        if key not in self._nulls:
            from scipy import stats as sps

            found = sps.permutation_test((ranks[:self.m], ranks[self.m:]), lambda x, y, axis: self._distance(x, axis),
                                         permutation_type="independent", alternative="greater", vectorized=True,
                                         n_resamples=np.inf if self.exact else PERMUTATIONS,
                                         random_state=np.random.default_rng(self.seed))
            self._nulls[key] = found.null_distribution
        return self._nulls[key]

    def p(self, la: np.ndarray, lb: np.ndarray, shift: float = 0.0) -> float:
        """p of A against B with B's times multiplied by e^shift, as SciPy computes it: the share of arrangements
        at least as far from mn/2 (within a relative 100 ulp), plus one of one drawn where they are drawn — so a
        drawn p is never 0."""
        with np.errstate(invalid="ignore"):
            ranks = _midranks(np.concatenate([la, lb + shift]))
        null, observed = self._null(ranks), self._distance(ranks[:self.m])
        gamma = abs(observed) * np.finfo(float).eps * 100
        extra = 0 if self.exact else 1
        return float((np.sum(null >= observed - gamma) + extra) / (len(null) + extra))

    def smallest_p(self, ranks: np.ndarray) -> float:
        """The least p any arrangement of these ranks can give."""
        null = self._null(ranks)
        extra = 0 if self.exact else 1
        return float((np.sum(null >= null.max() - abs(null.max()) * np.finfo(float).eps * 100) + extra)
                     / (len(null) + extra))


def _pairs(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """log TTA(A) − log TTA(B) for every pair: +∞ where only A failed, −∞ where only B did, NaN where both."""
    with np.errstate(invalid="ignore"):
        return la[:, None] - lb[None, :]


def _interval(d: np.ndarray, test: _RankTest, la: np.ndarray, lb: np.ndarray) -> tuple[float, float] | None:
    """The shifts (log speedups) the test does not reject at ``ALPHA``: the closure of that set, ±∞ where it
    is unbounded; None where it is empty (every pair involves a failure and the test rejects). The test is
    redone at each shift with the ties that shift leaves (the null distribution is that of those ties)."""
    values = np.unique(d[np.isfinite(d)])
    if not len(values):
        return (-math.inf, math.inf) if test.p(la, lb) >= ALPHA else None
    # one candidate per region of the step function p(shift): below, at and between the pair differences, above
    points = [values[0] - 1.0]
    for a, b in zip(values, [*values[1:], None]):
        points += [a] if b is None else [a, (a + b) / 2]
    points.append(values[-1] + 1.0)
    # p between the pair differences (where no new tie is made: one null distribution serves them all), and at
    # 0 where 0 is one (the p-value itself); the interval is the closure of the accepted regions, so the pair
    # differences at its ends belong to it without being tested
    accepted = [i for i, x in enumerate(points) if (i % 2 == 0 or x == 0.0) and test.p(la, lb, x) >= ALPHA]
    if not accepted:
        return None

    def bound(i: int, side: int) -> float:
        if i in (0, len(points) - 1) and (i == 0) == (side < 0):
            return -math.inf if side < 0 else math.inf
        if i % 2 == 1:        # a pair difference itself
            return float(points[i])
        return float(points[i - 1] if side < 0 else points[i + 1])   # a gap: closed at its edge
    return bound(accepted[0], -1), bound(accepted[-1], +1)


def _hodges_lehmann(d: np.ndarray) -> float:
    """The median of the pairwise log ratios (pairs of two failures left out); NaN where none is left."""
    values = np.sort(d[~np.isnan(d)])
    if not len(values):
        return math.nan
    n = len(values)
    if n % 2:
        return float(values[n // 2])
    low, high = values[n // 2 - 1], values[n // 2]
    return float(low if math.isinf(low) and low == high else (low + high) / 2 if np.isfinite([low, high]).all()
                 else (low if math.isinf(low) else high))


def smallest_p(m: int, n: int) -> float:
    """The smallest two-sided p any m against n distinct runs can give: 2 of C(m + n, m) arrangements."""
    return min(1.0, 2 / math.comb(m + n, m))


def runs_for(alpha: float = ALPHA) -> int:
    """Runs of each configuration needed before a clean separation can reach p < ``alpha``."""
    return next(k for k in itertools.count(1) if smallest_p(k, k) < alpha)


def compare(a: Sequence[RunSample], b: Sequence[RunSample], seed: int = 0, target: str = "the target") -> dict[str, Any]:
    """Speedup of B over A, its 95 % interval and the p-value, all from one permutation test of the
    runs' ranks (see the module docstring); ``target`` names what the times are to, in the verdict."""
    if not a or not b:
        raise ValueError("both configurations need at least one run")
    la, lb = _log_ttas(a), _log_ttas(b)
    m, n = len(la), len(lb)
    # the same finite times, run for run (every run failing on both sides is no sign of the same runs twice)
    identical = sorted(la.tolist()) == sorted(lb.tolist()) and bool(np.isfinite(la).any())
    d = _pairs(la, lb)
    test = _RankTest(m, n, seed)
    p = test.p(la, lb)
    shift = _hodges_lehmann(d)
    interval = _interval(d, test, la, lb)
    least = test.smallest_p(_midranks(np.concatenate([la, lb])))
    ci = [math.exp(x) if math.isfinite(x) else (0.0 if x < 0 else math.inf) for x in interval] if interval else None
    speedup = math.nan if math.isnan(shift) else math.exp(shift) if math.isfinite(shift) else \
        (math.inf if shift > 0 else 0.0)
    how = ("exact permutation test of ranks (Mann-Whitney U, every arrangement)" if test.exact else
           f"permutation test of ranks (Mann-Whitney U) over {PERMUTATIONS:,} arrangements drawn at random")
    return {"speedup": speedup, "speedup_ci95": ci, "p_value": p, "smallest_p": least, "exact": test.exact,
            "test": f"{how}, two-sided; Hodges-Lehmann estimate and the interval that inverts the test",
            "runs_a": m, "runs_b": n, "failures_a": int(np.isinf(la).sum()), "failures_b": int(np.isinf(lb).sum()),
            "tta_median_a_s": _median_tta(la), "tta_median_b_s": _median_tta(lb),
            "identical": identical,
            "verdict": (f"The two groups are identical: the same times to {target}, run for run (the same runs "
                        "twice?). There is nothing to tell apart. " if identical else "")
                       + verdict(speedup, ci, p, least, m, n, test.exact, target)}


def _median_tta(logs: np.ndarray) -> float:
    """The median TTA, a failure counting as ∞ (exact with ∞: no ∞ − ∞ interpolation)."""
    x, n = np.sort(np.exp(logs)), len(logs)
    return float(x[n // 2] if n % 2 else x[n // 2 - 1] if math.isinf(x[n // 2 - 1]) else (x[n // 2 - 1] + x[n // 2]) / 2)


def _ratio(x: float) -> str:
    return "∞" if math.isinf(x) else "0" if x == 0 else f"{x:.2f}"


def _interval_words(ci: list[float] | None, slower: bool) -> str:
    """The 95 % interval in the units of the sentence's headline: a slowdown's (1 / the speedup's, its bounds swapped)
    where B is slower, else the speedup's."""
    if not ci:
        return "no interval (every pair involves a failure)"
    low, high = (1 / ci[1] if ci[1] else math.inf, 1 / ci[0] if ci[0] else math.inf) if slower else ci
    return f"95 % CI {_ratio(low)}–{_ratio(high)}× " + ("slower" if slower else "faster")


def verdict(speedup: float, ci: list[float] | None, p: float, least: float, n_a: int, n_b: int,
            exact: bool = True, target: str = "the target") -> str:
    """One sentence: the estimate, the interval and the test, which agree by construction; the interval in the unit
    its headline uses (a slowdown's interval beside "× slower", the speedup's beside "× faster" or "speedup")."""
    runs = f"{n_a} vs {n_b} runs"
    how = (f"p = {p:.3g}, exact permutation test, {runs}" if exact else
           f"p = {p:.2g} (at least 1 in {PERMUTATIONS + 1:,}: a permutation test over {PERMUTATIONS:,} arrangements "
           f"drawn at random), {runs}")
    if math.isnan(speedup):
        return f"Each configuration missed {target} in half or more of its runs: no median to compare ({how})."
    few = (f" With {n_a} and {n_b} runs no result can reach p < {ALPHA}: the smallest p these runs allow is "
           f"{least:.3g}; {runs_for()} runs of each could reach p < {ALPHA}.") if least >= ALPHA else ""
    if p >= ALPHA:
        interval = (f"95 % CI {_ratio(ci[0])}–{_ratio(ci[1])}×, which includes 1" if ci else
                    "no interval (every pair involves a failure)")
        if speedup == 0 or math.isinf(speedup):     # a speedup of 0× or ∞× reads as a measurement; it is a failure
            who, other = ("B", "A") if speedup == 0 else ("A", "B")
            return (f"No significant difference in the time to {target}: {who} did not reach it in half or more of "
                    f"its runs and {other} did, too few runs to tell ({interval}; {how}).{few}")
        return (f"No significant difference in the time to {target}: speedup of B over A {_ratio(speedup)}× "
                f"({interval}; {how}).{few}")
    slower = speedup < 1
    word = "slower" if slower else "faster"
    if speedup == 0 or math.isinf(speedup):
        who, other = ("B", "A") if slower else ("A", "B")
        return (f"{who} did not reach {target} in half or more of its runs and {other} did: B is {word} "
                f"({_interval_words(ci, slower)}; {how}).")
    factor = 1 / speedup if slower else speedup
    return f"B is {factor:.2f}× {word} than A to {target} ({_interval_words(ci, slower)}; {how})."
