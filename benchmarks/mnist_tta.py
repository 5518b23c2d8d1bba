"""MNIST time-to-accuracy of the reference entry over several seeds.

    python benchmarks/mnist_tta.py [--runs 5] [--task mnist] [--entry small-cnn]

Prints each run and the median, min and max TTA and the success fraction; the
README's "Measured results" records these figures and the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from tempfile import mkdtemp

from rich.console import Console

from dawnbench import RunOptions, data, run_many
from dawnbench.display import runs_table
from dawnbench.environment import describe_hardware
from dawnbench.statistics import summarize


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="mnist")
    parser.add_argument("--entry", default=None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=None, help="folder for the run records (default: a temp dir)")
    args = parser.parse_args()

    data.ensure(args.task if args.task != "mnist" else "mnist")
    out = Path(args.out or mkdtemp(prefix="dawnbench-bench-"))
    results = run_many(RunOptions(task=args.task, entry=args.entry, runs=args.runs, out_dir=out))
    summary = summarize(results)
    console = Console()
    console.print(runs_table(results, summary))
    console.print(f"machine: {describe_hardware(results[0].hardware)}; torch {results[0].software['torch']}")
    console.print(f"success fraction {summary['success_fraction']:.2f}; TTA median "
                  f"{summary['tta_median_s'] or float('nan'):.2f} s, min {summary['tta_min_s'] or float('nan'):.2f} s, "
                  f"max {summary['tta_max_s'] or float('nan'):.2f} s; records in {out}")
    print(json.dumps({"summary": summary, "tta_s": [r.time_to_accuracy_s for r in results],
                      "epochs_to_target": [r.epochs_to_target for r in results]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
