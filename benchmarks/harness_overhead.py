"""Harness overhead: the same entry and seed, under the harness and as a bare loop.

    python benchmarks/harness_overhead.py [--task mnist] [--epochs 1] [--pairs 3]

Under the harness the run evaluates at every yield (untimed) and its timed seconds
are read from the result; the bare loop drives the identical generator (same
seed, same steps) with no evaluation and no record, timed from its first to its
last step. Pairs alternate to cancel drift. Prints the ratio of median training
seconds (harness / bare); the target is ≤ 1.02.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from tempfile import mkdtemp

import torch

from dawnbench import RunOptions, data, run_many
from dawnbench.entries import TrainContext, load_entry_class
from dawnbench.harness.runner import seed_everything
from dawnbench.tasks import get_task


def bare_seconds(task_name: str, entry_name: str | None, seed: int, epochs: float) -> float:
    task = get_task(task_name)
    entry = load_entry_class(entry_name or task.default_entry)(task, torch.device("cpu"), {"epochs": epochs})
    ctx = TrainContext(task, seed, torch.device("cpu"), entry.hp,
                       lambda: data.load_split(task.dataset, task.train_split))
    seed_everything(seed)
    start = time.perf_counter()
    for _ in entry.train(ctx):
        pass
    return time.perf_counter() - start


def harness_seconds(task_name: str, entry_name: str | None, seed: int, epochs: float, out: str) -> tuple[float, int]:
    [result] = run_many(RunOptions(task=task_name, entry=entry_name, seed=seed, target=100.0,
                                   overrides={"epochs": epochs}, out_dir=out))
    assert result.status == "not_reached", result.status  # the whole schedule ran
    return result.timed_s, len(result.evals)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="mnist")
    parser.add_argument("--entry", default=None)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    data.ensure(get_task(args.task).dataset)
    out = mkdtemp(prefix="dawnbench-overhead-")
    bare_seconds(args.task, args.entry, 0, 0.1)  # untimed warm-up: first-use kernel setup
    bare, harnessed = [], []
    for pair in range(args.pairs):
        b = bare_seconds(args.task, args.entry, 0, args.epochs)
        h, evals = harness_seconds(args.task, args.entry, 0, args.epochs, out)
        bare.append(b)
        harnessed.append(h)
        print(f"pair {pair + 1}: bare {b:.2f} s, harness {h:.2f} s timed ({evals} evaluations), ratio {h / b:.4f}",
              flush=True)
    ratio = statistics.median(harnessed) / statistics.median(bare)
    print(f"median training seconds: bare {statistics.median(bare):.2f} s, harness "
          f"{statistics.median(harnessed):.2f} s; ratio {ratio:.4f} (target <= 1.02) "
          f"[{'PASS' if ratio <= 1.02 else 'FAIL'}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
