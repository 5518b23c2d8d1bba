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
pairs (min-max), and the ratio of the medians for reference; the median is judged, with that spread, against
``harness_overhead.pair_ratio`` in ``targets.json``.

**Accounted directly** (SPEC §22): each harnessed run's ``result.json`` holds the harness's
own shares of its timed interval (``harness``: its threads' CPU, the training thread's time
in harness code; harness/cost.py) — read from the OS's counters, not from the noisy pairs.
They are stored per run with their median and maximum; the maximum is judged against
``harness_overhead.direct_share``. ``--workers-runs N``
adds N runs of ``dawnbench run TASK --nproc 2`` (torchrun: two workers, the launcher's CPU
counted too) after the pairs, for the same shares with several workers.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from tempfile import mkdtemp

import torch
from rich.console import Console

from dawnbench import RunOptions, data, run_many
from dawnbench.cli.display import LiveProgress
from dawnbench.entries import TrainContext, load_entry_class
from dawnbench.harness.core import seed_everything, synthetic_context
from dawnbench.records.record import RunResult
from dawnbench.tasks import get_task

import bench
import targets

NEVER_REACHED = 100.0   # an accuracy no run reaches: every harnessed run trains its whole schedule


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


def harness_run(task_name: str, entry_name: str | None, seed: int, epochs: float, out: str) -> RunResult:
    display = LiveProgress(Console(file=open(os.devnull, "w"), force_terminal=True))  # redrawn every second
    [result] = run_many(RunOptions(task=task_name, entry=entry_name, seed=seed, target=NEVER_REACHED,
                                   overrides={"epochs": epochs}, out_dir=out), observer=display)
    display.close()
    assert result.status == "not_reached", result.status  # the whole schedule ran
    return result


def workers_run(task_name: str, entry_name: str | None, epochs: float, out: str) -> dict:
    """The harness's shares of a two-worker run under torchrun (the launcher's CPU included)."""
    proc = subprocess.run([sys.executable, "-m", "dawnbench", "run", task_name, *(["--entry", entry_name] if entry_name
                           else []), "--nproc", "2", "--target", f"{NEVER_REACHED:g}", "--set", f"epochs={epochs:g}",
                           "--out", out, "--json"], capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    [record] = doc["runs"]
    return json.loads((Path(record["run_dir"]) / "result.json").read_text())["harness"]


def shares(runs: list[dict]) -> dict:
    """Median and largest of each share over ``runs`` (each a result's ``harness``)."""
    keys = [k for k in runs[0] if k.endswith("share") and runs[0][k] is not None]
    return {k: {"median": statistics.median(r[k] for r in runs), "max": max(r[k] for r in runs)} for k in keys}


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--task", default="mnist")
    parser.add_argument("--entry", default=None)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--workers-runs", type=int, default=3)
    args = parser.parse_args()
    data.ensure(get_task(args.task).dataset)
    out = mkdtemp(prefix="dawnbench-overhead-")
    bare, harnessed, direct = [], [], []
    for pair in range(args.pairs):
        b = bare_seconds(args.task, args.entry, 0, args.epochs)
        result = harness_run(args.task, args.entry, 0, args.epochs, out)
        h = result.timed_s
        bare.append(b)
        harnessed.append(h)
        direct.append(result.harness)
        print(f"pair {pair + 1}: bare {b:.2f} s, harness {h:.2f} s timed ({len(result.evals)} evaluations), ratio "
              f"{h / b:.4f}; accounted directly: {100 * result.harness['share']:.3f} % of the timed interval",
              flush=True)
    workers = []
    for run in range(args.workers_runs):
        workers.append(workers_run(args.task, args.entry, args.epochs, out))
        print(f"two workers, run {run + 1}: accounted directly {100 * workers[-1]['share']:.3f} %", flush=True)
    pairs = [h / b for h, b in zip(harnessed, bare)]
    ratio = statistics.median(pairs)
    worst = max(r["share"] for r in direct)
    judged_direct = targets.judged("harness_overhead.direct_share", worst)
    judged_pairs = targets.judged("harness_overhead.pair_ratio", ratio, min(pairs), max(pairs))
    print(f"accounted directly: median {100 * statistics.median(r['share'] for r in direct):.3f} %, largest "
          f"{100 * worst:.3f} % of the timed interval (target {judged_direct['bound']}: {judged_direct['verdict']})")
    print(f"median of {len(pairs)} pair ratios (harness / bare): {ratio:.4f} (target {judged_pairs['bound']}: "
          f"{judged_pairs['verdict']}); spread {min(pairs):.4f}-{max(pairs):.4f}; "
          f"ratio of medians {statistics.median(harnessed) / statistics.median(bare):.4f} "
          f"(bare {statistics.median(bare):.2f} s, harness {statistics.median(harnessed):.2f} s)")
    bench.store(args, "harness_overhead", {
        "task": args.task, "entry": args.entry or get_task(args.task).default_entry, "epochs": args.epochs,
        "pairs": args.pairs, "bare_s": bare, "harness_timed_s": harnessed, "pair_ratios": pairs,
        "median_pair_ratio": ratio, "ratio_of_medians": statistics.median(harnessed) / statistics.median(bare),
        **judged_pairs,
        "direct": {"runs": direct, "shares": shares(direct), **judged_direct},
        "direct_workers": {"workers": 2, "runs": workers, "shares": shares(workers) if workers else None,
                           **targets.judged("harness_overhead.direct_share",
                                            max(r["share"] for r in workers) if workers else None)}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
