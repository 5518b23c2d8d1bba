"""Harness overhead: the same entry and seed, under the harness and as a bare loop.

    python benchmarks/harness_overhead.py [--task mnist] [--epochs 1] [--pairs 5]

Under the harness the run evaluates at every yield (untimed), draws its live
progress (the terminal display, redrawn every second, into /dev/null) and its timed
seconds are read from the result; the bare loop drives the identical generator (same
seed, same steps) with no evaluation, no record and no display, timed from its first
to its last step. Both get the same untimed warm-up first (the entry's ``warmup`` on
the same synthetic context), so neither carries one-time costs the other does not.
Pairs alternate to cancel drift, and the figure is the median of the pairs' ratios
(harness / bare), each pair measured back to back: on a shared machine whose speed
drifts by tens of percent over minutes, a ratio of the two medians would compare
runs taken at different speeds. Prints each pair, that median with the spread of the
pairs (min-max), and the ratio of the medians for reference; the target is ≤ 1.02.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from tempfile import mkdtemp

import evidence
import torch
from rich.console import Console

from dawnbench import RunOptions, data, run_many
from dawnbench.cli.display import LiveProgress
from dawnbench.entries import TrainContext, load_entry_class
from dawnbench.harness.options import seed_everything
from dawnbench.harness.warmup import synthetic_context
from dawnbench.tasks import get_task


def bare_seconds(task_name: str, entry_name: str | None, seed: int, epochs: float) -> float:
    task = get_task(task_name)
    entry = load_entry_class(entry_name or task.default_entry)(task, torch.device("cpu"), {"epochs": epochs})
    ctx = TrainContext(task, seed, torch.device("cpu"), entry.hp,
                       lambda: data.load_train(task.dataset, task.train_split))
    seed_everything(seed)
    entry.warmup(synthetic_context(ctx, data.open_split(task.dataset, task.scored_split, mmap=True)))  # as the harness
    seed_everything(seed)
    start = time.perf_counter()
    for _ in entry.train(ctx):
        pass
    return time.perf_counter() - start


def harness_seconds(task_name: str, entry_name: str | None, seed: int, epochs: float, out: str) -> tuple[float, int]:
    display = LiveProgress(Console(file=open(os.devnull, "w"), force_terminal=True))  # redrawn every second
    [result] = run_many(RunOptions(task=task_name, entry=entry_name, seed=seed, target=100.0,
                                   overrides={"epochs": epochs}, out_dir=out), observer=display)
    display.close()
    assert result.status == "not_reached", result.status  # the whole schedule ran
    return result.timed_s, len(result.evals)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="mnist")
    parser.add_argument("--entry", default=None)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--pairs", type=int, default=7)
    args = parser.parse_args()
    data.ensure(get_task(args.task).dataset)
    out = mkdtemp(prefix="dawnbench-overhead-")
    bare, harnessed = [], []
    for pair in range(args.pairs):
        b = bare_seconds(args.task, args.entry, 0, args.epochs)
        h, evals = harness_seconds(args.task, args.entry, 0, args.epochs, out)
        bare.append(b)
        harnessed.append(h)
        print(f"pair {pair + 1}: bare {b:.2f} s, harness {h:.2f} s timed ({evals} evaluations), ratio {h / b:.4f}",
              flush=True)
    pairs = [h / b for h, b in zip(harnessed, bare)]
    ratio = statistics.median(pairs)
    print(f"median of {len(pairs)} pair ratios (harness / bare): {ratio:.4f} (target <= 1.02) "
          f"[{'PASS' if ratio <= 1.02 else 'FAIL'}]; spread {min(pairs):.4f}-{max(pairs):.4f}; "
          f"ratio of medians {statistics.median(harnessed) / statistics.median(bare):.4f} "
          f"(bare {statistics.median(bare):.2f} s, harness {statistics.median(harnessed):.2f} s)")
    evidence.write("harness_overhead", {
        "task": args.task, "entry": args.entry or get_task(args.task).default_entry, "epochs": args.epochs,
        "pairs": args.pairs, "bare_s": bare, "harness_timed_s": harnessed, "pair_ratios": pairs,
        "median_pair_ratio": ratio, "ratio_of_medians": statistics.median(harnessed) / statistics.median(bare),
        "target": 1.02, "met": ratio <= 1.02})
    return 0


if __name__ == "__main__":
    sys.exit(main())
