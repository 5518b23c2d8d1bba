"""MNIST with small-cnn on 1 and 2 workers (torchrun, DDP, gloo): the scale table, and whether
the 2-worker time per epoch adds up from the workers' own step times and the measured
communication (``mnist_scaling.accounting`` in ``targets.json``).

    python benchmarks/mnist_scaling.py [--runs 5] [--workers 1,2] [--out scale/mnist] [--figure docs/img/scale-mnist.png]

Prints the `dawnbench scale` table and, per run with more than one worker: time per epoch
(rank 0's clock), the slowest worker's compute per epoch, the exposed communication per
epoch, their sum, and the gap to the clock. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from rich.console import Console

from dawnbench.cli.scaling import scale_table
from dawnbench.experiments.scale import ScaleOptions, run_scale
from dawnbench.reports.plots import scale_figure

import bench
import targets


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--out", default="scale/mnist")
    parser.add_argument("--figure", default="docs/img/scale-mnist.png")
    args = parser.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    doc = run_scale(ScaleOptions(task="mnist", workers=[int(w) for w in args.workers.split(",")], runs=args.runs,
                                 out=out))
    console = Console(width=180)
    console.print(scale_table(doc))
    scale_figure(doc, Path(args.figure))
    print(f"figure: {args.figure}")
    gaps = []
    print("\naccounting per run (seconds per epoch): clock | slowest compute | exposed comm | sum | gap")
    for row in doc["rows"]:
        if row["workers"] < 2:
            continue
        for run_dir in row["run_dirs"]:
            d = json.loads((Path(run_dir) / "result.json").read_text())["distributed"]
            clock, compute, comm = d["time_per_epoch_s"], d["compute_per_epoch_s"], d["comm_exposed_per_epoch_s"]
            gap = clock / (compute + comm) - 1
            gaps.append(gap)
            print(f"{row['workers']} workers {Path(run_dir).name}: {clock:.3f} | {compute:.3f} | {comm:.3f} | "
                  f"{compute + comm:.3f} | {100 * gap:+.1f} % "
                  f"(communication {d['comm_overhead_pct']:.1f} % of the epoch, {d['comm_hidden_pct']:.0f} % hidden)")
    judged = targets.judged("mnist_scaling.accounting", gaps)
    print(f"\naccounting, every run {judged['bound']}: {judged['verdict']}")
    bench.store(args, "mnist_scaling", {"scale": doc, "gaps": gaps, **judged})
    return 1 if judged["verdict"] == "missed" else 0


if __name__ == "__main__":
    sys.exit(main())
