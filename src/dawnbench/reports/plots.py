"""Plots as PNG files (matplotlib, no display needed)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
# Labels come from run records and file names: a "$" in one must be a dollar sign, never
# the start of a TeX expression that fails to parse when the figure is saved.
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402 - after matplotlib.use("Agg") and the setting above
from matplotlib.figure import Figure  # noqa: E402 - as above
from matplotlib.text import Text  # noqa: E402 - as above
from matplotlib.ticker import EngFormatter, FixedFormatter, FuncFormatter, NullFormatter  # noqa: E402 - as above

from dawnbench.errors import printable  # noqa: E402 - as above
from dawnbench.io import atomic_write_with  # noqa: E402 - as above


@contextlib.contextmanager
def figure(path: Path, *grid: int, save_dpi: int | None = None, rect: tuple[float, ...] | None = None,
           **subplots: Any) -> Iterator[tuple[Figure, Any]]:
    """``plt.subplots(*grid, **subplots)`` for the block to draw on; laid out and saved to ``path`` (at
    ``save_dpi``, else the figure's own) when the block ends, and closed however it ends: a figure left
    open by a drawing that raised would stay in pyplot's memory for the rest of the process."""
    fig, axes = plt.subplots(*grid, **subplots)
    try:
        yield fig, axes
        _printable_text(fig)
        fig.tight_layout(**({"rect": rect} if rect else {}))
        atomic_write_with(Path(path), lambda f: fig.savefig(f, format=Path(path).suffix.lstrip(".") or "png",
                                                            dpi=save_dpi or "figure"))
    finally:
        plt.close(fig)


def _printable_text(fig: Figure) -> None:
    """Every label, title, legend entry and fixed tick label with its control characters written out: a name from a
    record drawn with ESC in it is a missing glyph and a warning that prints the character to the terminal."""
    for text in fig.findobj(Text):
        text.set_text(printable(text.get_text()))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatter = axis.get_major_formatter()     # tick labels given as a list (a dendrogram's names)
            if isinstance(formatter, (FixedFormatter, FuncFormatter)):
                axis.set_major_formatter(FuncFormatter(lambda x, pos, of=formatter: printable(of(x, pos))))


def log_scale(ax: Any, *axes: str, si: bool = False) -> None:
    """Log scale on ``axes`` ("x", "y") with plain-text tick labels — "0.1", "1e+03", or with ``si``
    "100 G": matplotlib's default log labels are TeX, which the setting above would print as source."""
    for name in axes:
        getattr(ax, f"set_{name}scale")("log")
        axis = getattr(ax, f"{name}axis")
        axis.set_major_formatter(EngFormatter(sep=" ") if si else FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def latency_histogram(latencies_ms: Sequence[float], figures: dict[str, Any], path: Path, title: str) -> Path:
    """Histogram of batch-1 latencies with the mean and p50/p90/p99 marked."""
    with figure(path, figsize=(7, 3.8), dpi=110) as (fig, ax):
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
    return Path(path)


def _step_curve(times: list[float], values: list[float], grid: np.ndarray) -> np.ndarray:
    """Accuracy known at each grid time: the last evaluation at or before it (NaN before the first)."""
    idx = np.searchsorted(np.asarray(times), grid, side="right") - 1
    out = np.asarray(values, dtype=float)[np.clip(idx, 0, None)]
    out[idx < 0] = np.nan
    return out


def accuracy_curves(groups: Sequence[Any], path: Path, threshold: float | None = None,
                    metric: str = "accuracy") -> Path:
    """Metric against timed seconds: every run faint; per group the median curve and the min–max band.

    A run's curve holds its last evaluated value after it stops, so runs that ended
    at the target keep counting toward the median.
    """
    with figure(path, figsize=(7.5, 4.2), dpi=110) as (fig, ax):
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, group in enumerate(g for g in groups if g.results):
            color = colors[i % len(colors)]
            runs = [r for r in group.results if r.evals]
            if not runs:               # records with no evaluation (a run that never got to one): no curve
                continue
            end = max(r.evals[-1].timed_s for r in runs)
            grid = np.linspace(0, end, 300)
            curves = np.array([_step_curve([e.timed_s for e in r.evals], [e.value for e in r.evals], grid)
                               for r in runs])
            for r in runs:
                ax.plot([e.timed_s for e in r.evals], [e.value for e in r.evals], color=color, alpha=0.25, lw=0.8)
            with warnings.catch_warnings():  # all-NaN columns before the first evaluation
                warnings.simplefilter("ignore", RuntimeWarning)
                median = np.nanmedian(curves, axis=0)
                low, high = np.nanmin(curves, axis=0), np.nanmax(curves, axis=0)
            ax.fill_between(grid, low, high, color=color, alpha=0.15)
            ax.plot(grid, median, color=color, lw=2, label=f"{group.name} (median of {len(runs)})")
        if threshold is not None:
            ax.axhline(threshold, color="black", lw=1, ls="--", label=f"target {threshold:g}")
            ax.set_ylim(bottom=max(0.0, ax.get_ylim()[0]), top=min(100.5, max(ax.get_ylim()[1], threshold + 0.5)))
        ax.set_xlabel("timed seconds")
        ax.set_ylabel(metric)
        ax.set_title("accuracy against training time: median and min–max band", fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
    return Path(path)


def epoch_curves(groups: Sequence[Any], path: Path) -> Path:
    """The metric against epochs, one panel per configuration side by side (shared y axis): every run's
    evaluations, so convergence can be compared apart from speed."""
    with figure(path, 1, len(groups), figsize=(3.6 * len(groups), 3.4), dpi=110, sharey=True,
                squeeze=False) as (fig, axes):
        for ax, group in zip(axes[0], groups):
            for r in group.results:
                ax.plot([e.epoch for e in r.evals], [e.value for e in r.evals], marker=".", lw=1, alpha=0.7)
            threshold = group.results[0].threshold if group.results else None
            if threshold is not None:
                ax.axhline(threshold, color="black", lw=1, ls="--")
            ax.set_title(group.name, fontsize=8)
            ax.set_xlabel("epochs")
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("metric")
    return Path(path)


def tta_distribution(groups: Sequence[Any], path: Path) -> Path:
    """Every run's TTA per group (median marked); runs that failed drawn as ✕ right of the axis."""
    with figure(path, figsize=(7.5, 0.6 + 0.55 * max(1, len(groups))), dpi=110) as (fig, ax):
        rng = np.random.default_rng(0)
        finite = [s.tta_s for g in groups for s in g.samples if s.succeeded]
        right = max(finite) * 1.08 if finite else 1.0
        for y, group in enumerate(groups):
            ttas = [s.tta_s for s in group.samples if s.succeeded]
            jitter = rng.uniform(-0.15, 0.15, len(ttas))
            ax.scatter(ttas, y + jitter, s=18, alpha=0.8)
            if ttas:
                ax.plot([np.median(ttas)] * 2, [y - 0.3, y + 0.3], color="black", lw=2)
            failed = sum(not s.succeeded for s in group.samples)
            if failed:
                ax.scatter([right] * failed, y + rng.uniform(-0.15, 0.15, failed), marker="x", color="#c44e52")
        ax.set_yticks(range(len(groups)), [g.name for g in groups], fontsize=8)
        ax.set_xlabel("time to accuracy (s); ✕ = did not reach the target; bar = median")
        ax.set_xlim(left=0)
    return Path(path)


def sweep_figure(rows: Sequence[dict[str, Any]], x_values: Sequence[Any], x_label: str, path: Path) -> Path:
    """The DAWNBench paper's three panels: epochs to target, throughput and TTA against the swept value."""
    numeric = all(isinstance(v, (int, float)) for v in x_values)
    xs = list(x_values) if numeric else list(range(len(rows)))
    with figure(path, 1, 3, figsize=(12, 3.6), dpi=110) as (fig, axes):
        panels = [("epochs to target", "epochs_mean", "epochs_std"),
                  ("throughput (samples/s)", "samples_per_s_mean", None),
                  ("time to accuracy (s), median and range", "tta_median_s", None)]
        for ax, (title, key, err) in zip(axes, panels):
            pts = [(x, r[key], (r[err] if err else None), r) for x, r in zip(xs, rows) if r[key] is not None]
            if pts:
                px, py = [p[0] for p in pts], [p[1] for p in pts]
                ax.plot(px, py, marker="o")
                if err:
                    ax.errorbar(px, py, yerr=[p[2] or 0 for p in pts], fmt="none", capsize=3)
                if key == "tta_median_s":
                    lo = [p[1] - p[3]["tta_min_s"] for p in pts]
                    hi = [p[3]["tta_max_s"] - p[1] for p in pts]
                    ax.errorbar(px, py, yerr=[lo, hi], fmt="none", capsize=3)
            for x, r in zip(xs, rows):
                if r["successes"] < r["runs"] and key != "samples_per_s_mean":
                    ax.annotate(f"{r['successes']}/{r['runs']} reached", (x, ax.get_ylim()[0]), fontsize=7,
                                ha="center", va="bottom", color="#c44e52")
            ax.set_title(title, fontsize=10)
            ax.set_xlabel(x_label)
            if numeric:
                if min(xs) > 0:  # batch sizes, learning rates: a log axis; a 0 in the grid cannot be on one
                    ax.set_xscale("log", base=2)
                ax.set_xticks(xs, [str(v) for v in x_values])
            else:
                ax.set_xticks(xs, [r["name"] for r in rows], rotation=30, ha="right", fontsize=7)
        fig.suptitle("effect of the swept setting on convergence, throughput and end-to-end time", fontsize=11)
    return Path(path)


KIND_MARKERS = {"run": "o", "profile": "s", "kernels": "^"}   # applications and kernels, told apart


def pca_figure(doc: dict[str, Any], path: Path) -> Path:
    """Configurations on PC1–PC2 and PC3–PC4 (where a fourth component explains anything), coloured by cluster,
    shaped by kind (runs ●, profiles ■, kernel suites ▲)."""
    scores = np.array(doc["scores"])
    var = doc["explained_variance"]
    pairs = [(0, 1)] + ([(2, 3)] if scores.shape[1] >= 4 else [])
    with figure(path, 1, len(pairs), figsize=(6.2 * len(pairs), 5), squeeze=False, save_dpi=120) as (fig, axes):
        colours = np.array(doc.get("clusters") or [0] * len(scores))
        kinds = np.array(doc.get("kinds") or ["run"] * len(scores))
        picks = set(doc.get("picks") or [])
        for ax, (i, j) in zip(axes[0], pairs):
            for kind, marker in KIND_MARKERS.items():
                mine = kinds == kind
                if mine.any():
                    ax.scatter(scores[mine, i], scores[mine, j], c=colours[mine], cmap="tab10", vmin=0, vmax=9, s=60,
                               marker=marker, edgecolor="black", linewidth=0.5, label=kind)
            if len(set(kinds)) > 1:
                ax.legend(fontsize=8, loc="best")
            for k, name in enumerate(doc["configurations"]):
                ax.annotate(name + (" ★" if name in picks else ""), (scores[k, i], scores[k, j]), fontsize=7,
                            xytext=(4, 3), textcoords="offset points")
            ax.set_xlabel(f"PC{i + 1} ({100 * var[i]:.0f} % of variance)")
            ax.set_ylabel(f"PC{j + 1} ({100 * var[j]:.0f} % of variance)")
            ax.axhline(0, color="grey", lw=0.5)
            ax.axvline(0, color="grey", lw=0.5)
            ax.grid(alpha=0.3)
        fig.suptitle("workload similarity: principal components of the standardised characteristics"
                     + (" (★ picked)" if picks else ""), fontsize=10)
    return path


def dendrogram_figure(doc: dict[str, Any], path: Path) -> Path:
    from scipy.cluster.hierarchy import dendrogram

    with figure(path, figsize=(8, 0.45 * len(doc["configurations"]) + 1.5), save_dpi=120) as (fig, ax):
        dendrogram(np.array(doc["linkage"]), labels=doc["configurations"], orientation="right", ax=ax,
                   color_threshold=None)
        ax.set_xlabel("Ward distance between standardised characteristic vectors")
        ax.set_title("workload similarity: hierarchical clustering", fontsize=10)
        ax.tick_params(axis="y", labelsize=8)
    return path


def generalization_figure(doc: dict[str, Any], task: str, path: Path) -> Path:
    """Metric against severity per corruption family (severity 0 = the scored split), one line per
    configuration (mean over its runs)."""
    rows = [r for r in doc["configurations"] if r["task"] == task and r.get("by_set")]
    families = doc["suite"]["families"]
    severities = doc["suite"]["severities"]
    cols = min(5, len(families))
    nrows = -(-len(families) // cols)
    legend_rows = (max(1, len(rows)) - 1) // 3     # the legend below: three configurations a line
    with figure(path, nrows, cols, figsize=(3.2 * cols, 2.8 * nrows), squeeze=False, sharey=True, save_dpi=110,
                rect=(0, 0.06 + 0.02 * legend_rows, 1, 0.96)) as (fig, axes):
        for ax, family in zip(axes.flat, families):
            for r in rows:
                ys = [r["scored"]["mean"]] + [r["by_set"][f"{family}/{s}"] for s in severities]
                ax.plot([0, *severities], ys, marker="o", ms=3, label=f"{r['entry']} ({r['variant']})")
            ax.set_title(family.replace("_", " "), fontsize=9)
            ax.set_xticks([0, *severities])
            ax.grid(alpha=0.3)
        for ax in axes.flat[len(families):]:
            ax.axis("off")
        for ax in axes[:, 0]:
            ax.set_ylabel("metric")
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), fontsize=8, frameon=False)
        fig.suptitle(f"{task}: metric against corruption severity (0 = the scored split; mean over runs)", fontsize=10)
    return path


def scale_figure(doc: dict[str, Any], path: Path) -> Path:
    """Speedup against workers for time per epoch and for TTA beside the ideal line; and the
    communication overhead against workers (the DAWNBench analysis paper's scaling plots)."""
    rows = doc["rows"]
    workers = [r["workers"] for r in rows]
    base = doc["baseline_workers"]
    with figure(path, 1, 2, figsize=(10, 3.8), dpi=110) as (fig, (left, right)):
        left.plot(workers, [w / base for w in workers], color="grey", linestyle="--", label="ideal (linear)")
        for key, label, marker in (("speedup_epoch", "time per epoch", "o"), ("speedup_tta", "time to accuracy", "s")):
            pts = [(r["workers"], r[key]) for r in rows if r[key] is not None]
            if pts:
                left.plot(*zip(*pts), marker=marker, label=label)
        left.set_xlabel("workers")
        left.set_ylabel(f"speedup against {base} worker{'s' if base > 1 else ''}")
        left.set_xticks(workers)
        left.legend(fontsize=8)
        left.set_title(f"{doc['job']} · {doc['scaling']} scaling · median of {doc['runs']} run(s)", fontsize=10)
        pts = [(r["workers"], r["comm_overhead_pct"]) for r in rows if r["comm_overhead_pct"] is not None]
        if pts:
            right.bar([str(w) for w, _ in pts], [v for _, v in pts], color="#c44e52")
        right.set_xlabel("workers")
        right.set_ylabel("exposed communication, % of time per epoch")
        right.set_title("communication overhead", fontsize=10)
    return Path(path)


SYSTEM_PANELS = (("cpu_util_pct", "CPU (% of one core, summed)"), ("host_mem_mib", "host memory (MiB, summed RSS)"),
                 ("accel_util_pct", "accelerators busy (%, summed)"), ("accel_mem_mib", "accelerator memory (MiB)"),
                 ("pcie_mbps", "PCIe (MB/s)"), ("nvlink_mbps", "NVLink (MB/s)"))


def system_figure(rows: Sequence[dict[str, Any]], x_key: str, x_label: str, path: Path, title: str,
                  lead: Sequence[tuple[str, str]] = ()) -> Path:
    """What a workload asks of the machine against ``x_key`` (workers, or job type): one panel per
    measure the rows have (the MLPerf characterisation's Table 6, drawn; its Figure 8 for job types),
    after the ``lead`` panels ((key, label) pairs: what the workload got for it)."""
    panels = [(key, label) for key, label in (*lead, *SYSTEM_PANELS) if any(r.get(key) is not None for r in rows)]
    with figure(path, 1, len(panels), figsize=(3.4 * len(panels), 3.2), dpi=110, squeeze=False) as (fig, axes):
        xs = [r[x_key] for r in rows]
        numeric = all(isinstance(x, (int, float)) for x in xs)
        for ax, (key, label) in zip(axes[0], panels):
            ys = [r.get(key) for r in rows]
            if numeric:
                ax.plot(xs, [np.nan if y is None else y for y in ys], marker="o")
                ax.set_xticks(xs)
            else:
                ax.bar(range(len(xs)), [0 if y is None else y for y in ys], tick_label=xs)
            ax.set_title(label, fontsize=9)
            ax.set_xlabel(x_label)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        fig.suptitle(title, fontsize=10)
    return path


def gantt_figure(doc: dict[str, Any], path: Path) -> Path:
    """The naive and the best schedule of a job mix, one row per accelerator."""
    names = list(doc["jobs"])
    colours = {n: plt.get_cmap("tab10")(i % 10) for i, n in enumerate(names)}
    g = doc["accelerators"]
    with figure(path, 2, 1, figsize=(10, min(1.2 + 0.9 * g, 30)), dpi=110, sharex=True) as (fig, axes):
        for ax, key in zip(axes, ("naive", "best")):
            plan = doc[key]
            for p in plan["placements"]:
                for a in p["accelerators"]:
                    ax.broken_barh([(p["start_s"], p["end_s"] - p["start_s"])], (a - 0.4, 0.8),
                                   facecolors=colours[p["job"]], edgecolor="white")
                middle = p["accelerators"][len(p["accelerators"]) // 2]
                ax.text((p["start_s"] + p["end_s"]) / 2, middle, f"{p['job']}\n×{p['workers']}",
                        ha="center", va="center", fontsize=7)
            ticks = range(0, g, max(1, g // 16))
            ax.set_yticks(ticks, [f"acc {a}" for a in ticks])
            ax.set_title(f"{key}: makespan {plan['makespan_s']:.1f} s", fontsize=10)
        axes[-1].set_xlabel("seconds")
    return Path(path)
