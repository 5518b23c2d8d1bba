"""How time per epoch and time-to-accuracy scale with workers (SPEC §13).

    dawnbench scale mnist --workers 1,2 --runs 3

For each worker count, ``dawnbench run --nproc W`` is launched (torchrun, DDP), R seeds
in a row, and the table reports per count the medians over runs of

* time per epoch (timed seconds / epochs, to the last evaluation), epochs to target, TTA;
* speedup of each against the smallest count (one worker, normally) and scaling
  efficiency = speedup / workers × baseline workers;
* communication overhead: exposed gradient communication / time per epoch, from the
  run's own DDP hook (:mod:`dawnbench.distributed.comm`);
* accounted: (slowest worker's own compute + exposed communication) / time per epoch;
* CPU utilisation: the machine's busy share while the run's monitor sampled.

``scale.json`` is also what ``dawnbench schedule`` reads: a job's TTA per worker count.
Every count runs with the same ``run`` options, and every worker with the same number of
CPU threads at every count — the cores / the largest count, unless told — so that on a
CPU a worker is what an accelerator is on a GPU machine, and a speedup measures what
adding workers (hardware) buys, not how threads compare with processes. Under weak
scaling (the default) the global batch grows with the workers, so epochs to target
may change too — which is exactly why TTA can scale worse than time per epoch.
"""

from __future__ import annotations

import json
import statistics as st
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from dawnbench.distributed.launch import Launched, LaunchOptions, launch
from dawnbench.errors import DawnbenchError
from dawnbench.harness.record import RunResult, atomic_write_text, json_safe
from dawnbench.statistics import RunSample

SCALE_FILE = "scale.json"


@dataclass
class ScaleOptions:
    task: str
    workers: list[int]
    runs: int = 3
    scaling: str = "weak"
    out: Path = Path("scale")
    run_args: list[str] = field(default_factory=list)  # passed to every `dawnbench run` (--entry, --set, ...)
    threads_per_worker: int | None = None  # None: the cores / the largest worker count, at every count


def _median(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return st.median(kept) if kept else None


def _row(workers: int, results: list[RunResult]) -> dict[str, Any]:
    samples = [RunSample.from_result(r) for r in results]
    reached = [s for s in samples if s.succeeded]
    dist = [r.distributed or {} for r in results]
    cpu = [(r.resources or {}).get("sys_cpu_pct", {}).get("mean") for r in results]
    cores = [(r.resources or {}).get("cpu_count") for r in results]
    return {
        "workers": workers, "runs": len(results), "successes": len(reached),
        "statuses": [r.status for r in results],
        "global_batch_size": _median([d.get("global_batch_size") for d in dist]),
        "time_per_epoch_s": _median([s.time_per_epoch_s for s in samples]),
        "epochs_to_target": _median([s.epochs for s in reached]),
        "tta_s": _median([s.tta_s for s in reached]),
        "comm_overhead_pct": _median([d.get("comm_overhead_pct") for d in dist]),
        "accounted_pct": _median([d.get("accounted_pct") for d in dist]),
        "cpu_util_pct": _median([c / n for c, n in zip(cpu, cores) if c is not None and n]),
        "run_dirs": [r.run_dir for r in results],
    }


def add_speedups(rows: list[dict[str, Any]]) -> None:
    """Speedup and efficiency of every row against the first (the fewest workers)."""
    base = rows[0]
    for row in rows:
        ratio = row["workers"] / base["workers"]
        for key, name in (("time_per_epoch_s", "epoch"), ("tta_s", "tta")):
            speedup = (base[key] / row[key]) if base[key] and row[key] else None
            row[f"speedup_{name}"] = speedup
            row[f"efficiency_{name}"] = speedup / ratio if speedup is not None else None


def run_scale(options: ScaleOptions,
              launched: Callable[[int, Launched], None] = lambda w, outcome: None) -> dict[str, Any]:
    """Launch every worker count in turn and tabulate them; writes ``scale.json`` in ``options.out``."""
    counts = sorted(set(options.workers))
    if not counts or counts[0] < 1:
        raise DawnbenchError(f"--workers {options.workers}: give positive worker counts, e.g. --workers 1,2.")
    if options.runs < 1:
        raise DawnbenchError(f"--runs must be at least 1, not {options.runs}.")
    out = Path(options.out)
    threads = options.threads_per_worker or max(1, (psutil.cpu_count() or 1) // counts[-1])
    rows, results_by_count = [], {}
    for workers in counts:
        argv = ["run", options.task, "--runs", str(options.runs), "--scaling", options.scaling,
                "--out", str(out / f"workers-{workers}"), *options.run_args]
        outcome = launch(argv, LaunchOptions(nproc=workers, threads=threads))
        launched(workers, outcome)
        if outcome.signal:
            raise KeyboardInterrupt  # the user stopped the sweep: what was recorded stays on disk
        if not outcome.results:
            raise DawnbenchError(f"{workers} worker(s): the launch wrote no run record "
                                 f"({'; '.join(outcome.failures) or 'no reason given'}).")
        results_by_count[workers] = outcome.results
        rows.append(_row(workers, outcome.results))
    add_speedups(rows)
    first = results_by_count[counts[0]][0]
    doc = {"job": f"{first.task}/{first.entry}", "task": first.task, "entry": first.entry,
           "scaling": options.scaling, "runs": options.runs, "baseline_workers": counts[0],
           "threads_per_worker": threads,
           "hardware": first.hardware, "rows": rows}
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / SCALE_FILE, json.dumps(json_safe(doc), indent=2) + "\n")
    return doc
