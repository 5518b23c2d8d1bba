"""Statistics over runs of one configuration, and the comparison of two (SPEC §7).

Runs of one configuration differ only in seed. Each run is reduced to a
:class:`RunSample` — did it reach the target, its TTA, its epochs to target — so
that this project's run records and imported MLPerf logs are treated alike.

Rules, where the spec leaves a choice:

* **Standard deviations** are population (ddof = 0) everywhere except
  ``tta_std_sample_s`` (ddof = 1): the DAWNBench analysis defines the coefficient
  of variation with the population figure. ``std_ratio`` = CV(epochs) /
  CV(time per epoch) does not depend on that choice.
* **Confidence interval** of TTA: Student's t, 95 %, on the logarithms of the
  successful runs' TTAs, mapped back (``tta_ci95_s``, around ``tta_geomean_s``), so it
  respects a positive quantity; none with fewer than three successes, where a
  t-interval spans orders of magnitude.
* **Olympic mean**: drop the fastest and the slowest run and average the rest; a
  failed run counts as the slowest; with more than one failure, or fewer than
  three runs, it is undefined (``None``).
* **Comparison** (:func:`compare`): speedup of B over A = median TTA(A) / median
  TTA(B), so > 1 means B is faster. A failed run counts as an infinitely slow run
  of its configuration: it ranks last in the two-sided Mann–Whitney U test that
  gives the p-value, and it is resampled as ∞ by the bootstrap (10,000
  resamples, fixed seed) that gives the 95 % interval of the speedup; a median
  that is ∞ makes the speedup 0 or ∞. B is called faster or slower only when
  p < 0.05.
"""

from __future__ import annotations

import math
import statistics as st
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 10_000


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
        """From a :class:`~dawnbench.harness.record.RunResult`."""
        throughput = (r.throughput or {}).get("samples_per_s")
        epochs = r.epochs_to_target if r.succeeded else (r.evals[-1].epoch if r.evals else None)
        last = r.evals[-1] if r.evals else None
        per_epoch = last.timed_s / last.epoch if last and last.epoch > 0 else None
        return cls(r.run_dir, r.succeeded, r.time_to_accuracy_s if r.succeeded else None, epochs,
                   r.status, throughput, per_epoch)


def _pstd(values: Sequence[float]) -> float | None:
    return st.pstdev(values) if values else None


def _cov(values: Sequence[float]) -> float | None:
    if not values:
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
        "tta_geomean_s": math.exp(st.fmean(math.log(t) for t in ttas)) if ttas and min(ttas) > 0 else None,
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


def _ttas_with_failures(samples: Sequence[RunSample]) -> np.ndarray:
    return np.array([s.tta_s if s.succeeded else math.inf for s in samples], dtype=float)


def _median(x: np.ndarray) -> np.ndarray:
    """Median along the last axis, exact with ∞ (np.median interpolates ∞ − ∞ into NaN)."""
    x = np.sort(x, axis=-1)
    n = x.shape[-1]
    return x[..., n // 2] if n % 2 else (x[..., n // 2 - 1] + x[..., n // 2]) / 2


def _speedup(a_median: float, b_median: float) -> float:
    if math.isinf(a_median) and math.isinf(b_median):
        return math.nan
    if math.isinf(b_median):
        return 0.0
    return math.inf if math.isinf(a_median) else a_median / b_median


def compare(a: Sequence[RunSample], b: Sequence[RunSample], seed: int = 0) -> dict[str, Any]:
    """Speedup of B over A with a bootstrap 95 % interval and a Mann–Whitney p-value."""
    if not a or not b:
        raise ValueError("both configurations need at least one run")
    ta, tb = _ttas_with_failures(a), _ttas_with_failures(b)
    speedup = _speedup(float(_median(ta)), float(_median(tb)))
    rng = np.random.default_rng(seed)
    ra = _median(rng.choice(ta, (BOOTSTRAP_RESAMPLES, len(ta))))
    rb = _median(rng.choice(tb, (BOOTSTRAP_RESAMPLES, len(tb))))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = np.where(np.isinf(rb), np.where(np.isinf(ra), np.nan, 0.0), ra / rb)
    ratios = ratios[~np.isnan(ratios)]
    # inverted_cdf picks observed ratios: interpolating between ∞ and ∞ would give NaN
    ci = ([float(np.quantile(ratios, q, method="inverted_cdf")) for q in (0.025, 0.975)]
          if len(ratios) else None)
    # Ranks only: ∞ is replaced by one finite value above every TTA, so failures tie for last.
    finite = np.concatenate([ta[np.isfinite(ta)], tb[np.isfinite(tb)], [1.0]])
    worst = float(finite.max()) * 2 + 1
    p = None
    if len(ta) > 1 or len(tb) > 1:
        from scipy import stats as sps

        p = float(sps.mannwhitneyu(np.where(np.isinf(ta), worst, ta), np.where(np.isinf(tb), worst, tb),
                                   alternative="two-sided").pvalue)
    return {"speedup": speedup, "speedup_ci95": ci, "p_value": p, "test": "Mann-Whitney U, two-sided",
            "runs_a": len(a), "runs_b": len(b),
            "failures_a": int(np.isinf(ta).sum()), "failures_b": int(np.isinf(tb).sum()),
            "tta_median_a_s": float(_median(ta)), "tta_median_b_s": float(_median(tb)),
            "verdict": verdict(speedup, ci, p, len(a), len(b))}


def verdict(speedup: float, ci: list[float] | None, p: float | None, n_a: int, n_b: int) -> str:
    runs = f"{n_a} vs {n_b} runs"
    interval = f", 95 % CI {ci[0]:.2f}–{ci[1]:.2f}" if ci and all(map(math.isfinite, ci)) else ""
    if p is None:
        return f"B/A speedup {speedup:.2f}× from {runs}: too few runs for a significance test."
    if math.isnan(speedup):
        return f"Neither configuration reached the target in most runs ({runs}, p = {p:.3g})."
    if speedup == 0 or math.isinf(speedup):
        who, other = ("B", "A") if speedup == 0 else ("A", "B")
        tail = "" if p < ALPHA else f", but the difference is not significant (p ≥ {ALPHA})"
        return (f"{who} did not reach the target in most of its runs and {other} did{tail} "
                f"(p = {p:.3g}, Mann–Whitney U, {runs}).")
    if p >= ALPHA:
        return (f"No significant difference: speedup of B over A {speedup:.2f}×{interval} "
                f"(p = {p:.3g} ≥ {ALPHA}, Mann–Whitney U, {runs}).")
    word = "faster" if speedup > 1 else "slower"
    factor = speedup if speedup > 1 else (1 / speedup if speedup else math.inf)
    return f"B is {factor:.2f}× {word} than A to the target{interval} (p = {p:.3g}, Mann–Whitney U, {runs})."
