"""Inference measurement overhead: the latency loop against a bare loop of the same calls.

    python benchmarks/inference_overhead.py [--run RUN_DIR [--trust-entry]] [--task mnist] [--threads 1] [--pairs 5]

Both loops call the entry's ``predict`` on every item of the scored split, one at a
time, under ``torch.inference_mode()``, reading the items the same way. The measurement
loop (``dawnbench.inference.loops.single_item_latencies``) also reads the clock twice per
item, keeps every latency and scores the answers; the bare loop is timed once as a whole.
With ``--run`` the saved model of that run is measured, otherwise the task's default
entry with freshly initialised weights (the cost of a call does not depend on the
weights). Pairs alternate to cancel drift. Prints the ratio of median seconds
(measurement / bare), judged against ``inference_overhead.ratio`` in ``targets.json``.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import torch

from dawnbench import data
from dawnbench.data.splits import Split
from dawnbench.entries import load_entry_class
from dawnbench.entries.saved import load_saved_entry
from dawnbench.inference.loops import single_item_latencies
from dawnbench.tasks import Metric, get_task

import bench
import targets


def load_entry(run: str | None, task_name: str, trust: bool = False):
    if run:
        entry, _ = load_saved_entry(Path(run), torch.device("cpu"), trust=trust)
        task = entry.task
    else:
        task = get_task(task_name)
        entry = load_entry_class(task.default_entry)(task, torch.device("cpu"))
        entry.model = entry.make_model().eval()
    return entry, task


def bare_seconds(predict, split: Split) -> float:
    start = time.perf_counter()
    with torch.inference_mode():
        for inputs, _ in split.batches(1):
            predict(inputs)
    return time.perf_counter() - start


def measured_seconds(predict, split: Split, metric: Metric) -> float:
    start = time.perf_counter()
    single_item_latencies(predict, split, metric, warmup_items=0)
    return time.perf_counter() - start


def main() -> None:
    parser = bench.parser(__doc__)
    parser.add_argument("--run", help="a run directory with a saved model")
    parser.add_argument("--trust-entry", action="store_true", help="import the entry file the run names (not built in)")
    parser.add_argument("--task", default="mnist")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    entry, task = load_entry(args.run, args.task, args.trust_entry)
    data.ensure(task.dataset)
    split = data.open_split(task.dataset, task.scored_split)
    bare_seconds(entry.predict, split.head(500))  # warm up both paths
    measured_seconds(entry.predict, split.head(500), task.metric)
    bare, measured = [], []
    for i in range(args.pairs):
        bare.append(bare_seconds(entry.predict, split))
        measured.append(measured_seconds(entry.predict, split, task.metric))
        print(f"pair {i + 1}: bare {bare[-1]:.3f} s, measured {measured[-1]:.3f} s, "
              f"ratio {measured[-1] / bare[-1]:.4f}", flush=True)
    ratio = statistics.median(measured) / statistics.median(bare)
    print(f"{entry.name} on {task.name}, {split.count:,} items, {args.threads} thread(s): "
          f"median bare {statistics.median(bare):.3f} s, median measured {statistics.median(measured):.3f} s, "
          f"ratio {ratio:.4f} (target {targets.get('inference_overhead.ratio').text}: "
          f"{targets.verdict('inference_overhead.ratio', ratio)})")
    bench.store(args, "inference_overhead", {
        "entry": entry.name, "task": task.name, "run": args.run, "items": split.count, "threads": args.threads,
        "pairs": args.pairs, "bare_s": bare, "measured_s": measured, "ratio_of_medians": ratio,
        **targets.judged("inference_overhead.ratio", ratio)})


if __name__ == "__main__":
    main()
