"""The figures the commands draw from the documents the engines return (the engines draw nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dawnbench import read_json
from dawnbench.reports import plots
from dawnbench.reports.profile_figures import (
    cdf_figure,
    comparison_figure,
    roofline_figure,
    workloads_roofline,
)


def profile_figures(summary: dict[str, Any]) -> list[Path]:
    """``cdf.png`` and ``roofline.png`` beside a profile's ``ops.tsv`` (and its ``without/`` variant's)."""
    from dawnbench.records.ops import read_ops

    drawn = []
    docs = [summary] + ([read_json(Path(summary["without"]["out"]) / "summary.json", "profile")]
                        if summary.get("without") else [])
    for doc in docs:
        out = Path(doc["out"])
        rows, roofs = read_ops(out), doc["roofs"]
        drawn.append(cdf_figure(rows, roofs["flops"], out / "cdf.png", doc["title"]))
        drawn.append(roofline_figure(rows, roofs["flops"], roofs["bandwidth_bytes_per_s"], doc["step"],
                                     out / "roofline.png", doc["title"]))
    return drawn


def latency_figure(run_dir: Path, inference: dict[str, Any]) -> Path:
    """The batch-1 latency histogram of ``dawnbench infer`` (``inference/latency.png``)."""
    from dawnbench.inference.measure import read_latencies

    result = read_json(Path(run_dir) / "result.json", "run record")
    latencies = read_latencies(run_dir)
    return plots.latency_histogram(latencies, inference, Path(run_dir) / inference["histogram"],
                                   title=f"{result['entry']} on {result['task']}: batch-1 latency, "
                                         f"{len(latencies):,} items")


def generalization_figures(doc: dict[str, Any], out: Path) -> list[Path]:
    """Metric against severity per corruption family, one figure per task that has a shifted suite
    (ImageNet has none: its unseen set is in the table)."""
    if not doc.get("suite"):
        return []
    tasks = sorted({r["task"] for r in doc["configurations"] if r.get("by_set")})
    return [plots.generalization_figure(doc, t, out / f"generalization-{t}.png") for t in tasks]


def similarity_figures(doc: dict[str, Any], out: Path) -> list[Path]:
    return [plots.pca_figure(doc, out / "pca.png"), plots.dendrogram_figure(doc, out / "dendrogram.png")]


def kernel_figures(doc: dict[str, Any], out: Path) -> list[Path]:
    """``roofline.png`` of the kernel rows and, when compared, ``compare.png`` (the bars per suite)."""
    from dawnbench.analysis.roofline import roofline

    drawn = []
    if any(r.get("median_s") and not r.get("skipped") and r["suite"] != "allreduce" for r in doc["rows"]) \
            and (points := roofline([out / "kernels.json"]))["points"]:   # nothing timed: nothing to draw
        drawn.append(workloads_roofline(points, out / "roofline.png",
                                        f"DeepBench kernels ({doc['set']}) on "
                                        f"{doc['hardware'].get('accelerator') or doc['hardware'].get('cpu')}"))
    if any(g["geomean_time_ratio"] for c in doc.get("comparison") or [] for g in c.get("groups", [])):
        drawn.append(comparison_figure(doc, out / "compare.png"))
    return drawn


def roofline_figure_of(doc: dict[str, Any], out: Path) -> Path:
    """``roofline.png`` of ``dawnbench roofline``: kernels and applications together."""
    kernels = sum(p["kind"] == "kernel" for p in doc["points"])
    counts = [f"{n} {what}" for n, what in ((kernels, "kernel rows"), (len(doc["points"]) - kernels, "applications"))
              if n]
    return workloads_roofline(doc, out / "roofline.png", f"{' and '.join(counts)} under this machine's roofs")


def scale_resources_figure(doc: dict[str, Any], out: Path) -> Path:
    """``scale-resources.png`` of ``dawnbench scale``: each system measure against workers."""
    return plots.system_figure(doc["rows"], "workers", "workers", out / "scale-resources.png",
                               f"what {doc['job']} asks of the machine as workers are added")


def jobs_figure(doc: dict[str, Any], out: Path) -> Path:
    """``jobs.png`` of ``dawnbench jobs``: what each job type got, and asked of the machine."""
    return plots.system_figure(doc["rows"], "type", "job type", out / "jobs.png",
                               f"{doc['task']}: {doc['slots']} slots as one distributed run, independent runs, a mix",
                               lead=[("samples_per_s", "throughput (samples/s, all runs)"),
                                     ("tta_median_s", "time to target (s, median run)")])
