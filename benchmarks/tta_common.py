"""Shared by the TTA benchmarks: run N seeds of one configuration and print the figures."""

from __future__ import annotations

import argparse
from pathlib import Path
from tempfile import mkdtemp

from rich.console import Console

from dawnbench import RunOptions, data, run_many
from dawnbench.cli.display import runs_table
from dawnbench.environment import describe_hardware
from dawnbench.statistics import summarize
from dawnbench.tasks import get_task

import bench


def main(description: str, task: str, runs: int) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--task", default=task)
    parser.add_argument("--entry", default=None, help="default: the task's reference entry")
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--out", default=None, help="folder for the run records (default: a temp dir)")
    parser.add_argument("--precision", default="fp32", help="fp32, tf32, bf16 or fp16")
    parser.add_argument("--compile", default=None, help="a torch.compile mode (default: not compiled)")
    args = parser.parse_args()

    data.ensure(get_task(args.task).dataset)
    out = Path(args.out or mkdtemp(prefix="dawnbench-bench-"))
    results = run_many(RunOptions(task=args.task, entry=args.entry, runs=args.runs, seed=args.seed, out_dir=out,
                                  precision=args.precision, compile=args.compile))
    summary = summarize(results)
    console = Console()
    console.print(runs_table(results, summary))
    console.print(f"machine: {describe_hardware(results[0].hardware)}; torch {results[0].software['torch']}; "
                  f"records in {out}")
    fmt = lambda v: "—" if v is None else f"{v:.2f} s"
    console.print(f"success fraction {summary['success_fraction']:.2f}; TTA median {fmt(summary['tta_median_s'])}, "
                  f"min {fmt(summary['tta_min_s'])}, max {fmt(summary['tta_max_s'])}")
    bench.store(args, f"{args.task}_tta", {"task": args.task, "entry": results[0].entry, "precision": args.precision,
                                        "compile": args.compile, "summary": summary,
                                        "runs": [bench.run_row(r) for r in results]})
    return 0
