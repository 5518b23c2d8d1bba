"""The profile's figures: the throughput CDF and the roofline; kernels and applications on one
roofline."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dawnbench.reports.plots import figure, log_scale  # configured there: Agg, no TeX parsing of labels

COLOURS = {"fp32": "tab:blue", "tf32": "tab:cyan", "bf16": "tab:orange", "fp16": "tab:red"}


def throughput_cdf(rows: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """(FLOP/s, cumulative share of op time in ops at or below it), ascending; ends at 1.

    Ops with no FLOPs (elementwise, copies, bookkeeping) sit at 0 FLOP/s: the share of
    time they take is the curve's value at its left end.
    """
    rates = np.array([r["flops_per_s"] or 0.0 for r in rows], dtype=float)
    times = np.array([r["time_s"] for r in rows], dtype=float)
    order = np.argsort(rates, kind="stable")
    total = times.sum()
    share = np.cumsum(times[order]) / total if total > 0 else np.zeros(len(rows))
    return rates[order], share


def cdf_figure(rows: Sequence[dict[str, Any]], roofs: dict[str, float], path: Path, title: str) -> Path:
    rates, share = throughput_cdf(rows)
    with figure(path, figsize=(7, 4.2), save_dpi=120) as (fig, ax):
        floor = max(rates[rates > 0].min() / 3 if (rates > 0).any() else 1e6, 1e6)
        x = np.maximum(rates, floor)
        ax.step(np.concatenate([[floor], x]), np.concatenate([[0.0], share]), where="post", color="black")
        for precision, roof in roofs.items():
            ax.axvline(roof, ls="--", color=COLOURS.get(precision, "grey"),
                       label=f"{precision} roof {roof / 1e9:.0f} GFLOP/s")
        log_scale(ax, "x", si=True)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("achieved FLOP/s of the op (ops without FLOPs at the left edge)")
        ax.set_ylabel("share of op time in ops ≤ x")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
        ax.grid(alpha=0.3)
    return path


@contextlib.contextmanager
def roofline(path: Path, roofs: dict[str, float], bandwidth: float, intensities: Sequence[float], title: str,
             xlabel: str = "arithmetic intensity (FLOP / byte read + written)",
             figsize: tuple[float, float] = (11, 5)) -> Iterator[Any]:
    """The one roofline every figure draws: a line per precision's roof under the bandwidth's slope over the
    intensities given (and the ridges), log–log, the legend beside it. The block draws its points on the
    axes it is handed; the figure is saved to ``path`` when it ends."""
    with figure(path, figsize=figsize, save_dpi=120) as (fig, ax):
        span = [*intensities, *(roof / bandwidth for roof in roofs.values())]
        xs = np.geomspace(min(span) / 4, max(span) * 4, 200)
        for precision, roof in roofs.items():
            ax.plot(xs, np.minimum(roof, bandwidth * xs), color=COLOURS.get(precision, "grey"),
                    label=f"{precision} roof: {roof / 1e9:.0f} GFLOP/s, ridge {roof / bandwidth:.1f} FLOP/B")
        ax.plot([], [], " ", label=f"bandwidth {bandwidth / 1e9:.1f} GB/s")
        yield ax
        log_scale(ax, "x")
        log_scale(ax, "y", si=True)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("FLOP/s")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        ax.grid(alpha=0.3, which="both")


def roofline_figure(rows: Sequence[dict[str, Any]], roofs: dict[str, float], bandwidth: float,
                    step: dict[str, Any], path: Path, title: str, top: int = 8) -> Path:
    """A profile's ops (the ``top`` by time, numbered) and its whole step under the machine's roofs."""
    points = [r for r in rows if r["flops"] > 0 and r["intensity"]]
    with roofline(path, roofs, bandwidth, [r["intensity"] for r in points] + [step.get("intensity") or 1.0],
                  title) as ax:
        for rank, r in enumerate(points[:top], 1):  # numbered by time: 1 = the op that takes most
            ax.scatter(r["intensity"], r["flops_per_s"], s=20 + 400 * r["share"],
                       color=COLOURS.get(r["precision"], "grey"), alpha=0.6, edgecolor="black", linewidth=0.5,
                       label=f"{rank}: {r['op'].removeprefix('aten::')} {r['shapes'][:34]} "
                             f"({100 * r['share']:.0f} %)")
            ax.annotate(str(rank), (r["intensity"], r["flops_per_s"]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        if step.get("intensity") and step.get("flops_per_s"):
            ax.scatter(step["intensity"], step["flops_per_s"], marker="*", s=250, color="black", zorder=5,
                       label=f"whole step: {step['flops_per_s'] / 1e9:.0f} GFLOP/s")
    return path


SUITE_COLOURS = {"gemm": "tab:blue", "conv": "tab:green", "rnn": "tab:purple", "allreduce": "tab:grey"}


def workloads_roofline(doc: dict[str, Any], path: Path, title: str) -> Path:
    """Kernel rows (dots, one colour per suite) and applications' whole steps (stars, labelled) under
    the machine's roofs: the MLPerf characterisation's Figure 3 for this machine."""
    roofs, bandwidth, points = doc["roofs"]["flops"], doc["roofs"]["bandwidth"], doc["points"]
    with roofline(path, roofs, bandwidth, [p["intensity"] for p in points], title, figsize=(11, 5.5),
                  xlabel="arithmetic intensity (FLOP / byte read + written; a lower bound for kernels)") as ax:
        for suite in dict.fromkeys(p["group"] for p in points if p["kind"] == "kernel"):
            mine = [p for p in points if p["kind"] == "kernel" and p["group"] == suite]
            ax.scatter([p["intensity"] for p in mine], [p["flops_per_s"] for p in mine], s=14, alpha=0.55,
                       color=SUITE_COLOURS.get(suite, "black"), label=f"kernels: {suite} ({len(mine)})")
        apps = [p for p in points if p["kind"] == "application"]
        for p in apps:
            ax.scatter(p["intensity"], p["flops_per_s"], marker="*", s=220,
                       color=COLOURS.get(p["precision"], "black"), edgecolor="black", linewidth=0.6, zorder=5)
            ax.annotate(p["label"], (p["intensity"], p["flops_per_s"]), fontsize=7, xytext=(6, 4),
                        textcoords="offset points")
        if apps:
            ax.scatter([], [], marker="*", s=120, color="white", edgecolor="black",
                       label="applications: whole training step")
    return path


def comparison_figure(doc: dict[str, Any], path: Path) -> Path:
    """Per suite (and precision), this machine's time / each compared device's, geometric mean: a bar
    per device, on a log axis; below 1 this machine is faster."""
    comparisons = doc.get("comparison") or []
    groups = sorted({(g["suite"], g["precision"]) for c in comparisons for g in c.get("groups", [])
                     if g["geomean_time_ratio"]})
    with figure(path, figsize=(max(7, 1.6 * len(groups) + 3), 4.5), save_dpi=120) as (fig, ax):
        width = 0.8 / max(1, len(comparisons))
        for k, comparison in enumerate(comparisons):
            heights, xs = [], []
            for i, (suite, precision) in enumerate(groups):
                mine = next((g for g in comparison.get("groups", [])
                             if (g["suite"], g["precision"]) == (suite, precision) and g["geomean_time_ratio"]), None)
                if mine:
                    heights.append(mine["geomean_time_ratio"])
                    xs.append(i - 0.4 + width * (k + 0.5))
            ax.bar(xs, heights, width=width, label=comparison["against"])
        ax.axhline(1.0, color="black", lw=0.8)
        log_scale(ax, "y")
        ax.set_xticks(range(len(groups)), [f"{s}\n{p}" for s, p in groups])
        ax.set_ylabel("time here / time there (geometric mean)")
        ax.set_title(f"{doc['hardware'].get('accelerator') or doc['hardware'].get('cpu')} against DeepBench's devices "
                     "(below 1: faster here)", fontsize=10)
        ax.legend(fontsize=7, ncol=2)
        ax.grid(alpha=0.3, axis="y", which="both")
    return path
