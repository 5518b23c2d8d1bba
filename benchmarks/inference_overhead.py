"""Inference measurement overhead: the latency loop against a bare loop of the same calls.

    python benchmarks/inference_overhead.py [--run RUN_DIR] [--task mnist] [--threads 1] [--pairs 5]

Both loops call the entry's ``predict`` on every item of the scored split, one at a
time, under ``torch.inference_mode()``. The measurement loop
(``dawnbench.inference.loops.single_item_latencies``) also reads the clock twice per
item and keeps every latency and output; the bare loop is timed once as a whole.
With ``--run`` the saved model of that run is measured, otherwise the task's default
entry with freshly initialised weights (the cost of a call does not depend on the
weights). Pairs alternate to cancel drift. Prints the ratio of median seconds
(measurement / bare); the target is ≤ 1.03.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import evidence
import torch

from dawnbench import data
from dawnbench.entries import load_entry_class
from dawnbench.entries.saved import load_saved_entry
from dawnbench.inference.loops import single_item_latencies
from dawnbench.tasks import get_task


def load_entry(run: str | None, task_name: str):
    if run:
        entry, _ = load_saved_entry(Path(run), torch.device("cpu"))
        task = entry.task
    else:
        task = get_task(task_name)
        entry = load_entry_class(task.default_entry)(task, torch.device("cpu"))
        entry.model = entry.make_model().eval()
    return entry, task


def bare_seconds(predict, inputs: torch.Tensor) -> float:
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(len(inputs)):
            predict(inputs[i:i + 1])
    return time.perf_counter() - start


def measured_seconds(predict, inputs: torch.Tensor) -> float:
    start = time.perf_counter()
    single_item_latencies(predict, inputs, warmup_items=0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", help="a run directory with a saved model")
    parser.add_argument("--task", default="mnist")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    entry, task = load_entry(args.run, args.task)
    data.ensure(task.dataset)
    inputs = torch.from_numpy(data.load_split(task.dataset, task.scored_split)[0])
    bare_seconds(entry.predict, inputs[:500])  # warm up both paths
    measured_seconds(entry.predict, inputs[:500])
    bare, measured = [], []
    for i in range(args.pairs):
        bare.append(bare_seconds(entry.predict, inputs))
        measured.append(measured_seconds(entry.predict, inputs))
        print(f"pair {i + 1}: bare {bare[-1]:.3f} s, measured {measured[-1]:.3f} s, "
              f"ratio {measured[-1] / bare[-1]:.4f}", flush=True)
    ratio = statistics.median(measured) / statistics.median(bare)
    print(f"{entry.name} on {task.name}, {len(inputs):,} items, {args.threads} thread(s): "
          f"median bare {statistics.median(bare):.3f} s, median measured {statistics.median(measured):.3f} s, "
          f"ratio {ratio:.4f} (target <= 1.03)")
    evidence.write("inference_overhead", {
        "entry": entry.name, "task": task.name, "run": args.run, "items": len(inputs), "threads": args.threads,
        "pairs": args.pairs, "bare_s": bare, "measured_s": measured, "ratio_of_medians": ratio,
        "target": 1.03, "met": ratio <= 1.03})


if __name__ == "__main__":
    main()
