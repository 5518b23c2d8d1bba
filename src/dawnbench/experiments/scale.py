"""``dawnbench scale``: launch every worker count in turn and tabulate them.

The table's columns and their meaning: :mod:`dawnbench.analysis.scale`. Every count runs
with the same ``run`` options, and every worker with the same number of CPU threads at
every count (the cores / the largest count, unless told), so that on a CPU a worker is
what an accelerator is on a GPU machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from dawnbench import bounds
from dawnbench.analysis.scale import add_speedups, scale_row
from dawnbench.distributed.launch import LaunchOptions
from dawnbench.errors import DawnbenchError
from dawnbench.experiments.launch import Launched, launch
from dawnbench.experiments.slurm import PlannedRun, SlurmOptions, run_batch
from dawnbench.io import atomic_write_json, output_dir

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
    seed: int = 0                         # the first seed (a Slurm batch gives every seed a job of its own)


def run_scale(options: ScaleOptions,
              launched: Callable[[int, Launched], None] = lambda w, outcome: None,
              slurm: SlurmOptions | None = None, resume: bool = False,
              progress: Callable[[dict[str, int]], None] = lambda counts: None) -> dict[str, Any]:
    """Launch every worker count in turn — or, with ``slurm``, submit one job per count and seed —
    and tabulate them; writes ``scale.json`` in ``options.out``."""
    counts = sorted(set(options.workers))
    if not counts:
        raise DawnbenchError(f"--workers {options.workers}: give worker counts, e.g. --workers 1,2.")
    bounds.check_fields(options, bounds.fields_of("--workers", "--runs", "--threads-per-worker"))
    if slurm is None and counts[-1] > bounds.CORES:   # a cluster's workers are its own: only here are cores a bound
        raise DawnbenchError(f"--workers {counts[-1]}: this machine has {bounds.CORES} cores, one worker each at "
                             "most (--executor slurm spreads more over a cluster's nodes).")
    out = output_dir(options.out)
    threads = options.threads_per_worker or max(1, (psutil.cpu_count() or 1) // counts[-1])
    rows, results_by_count = [], {}
    if slurm is not None:
        planned = [PlannedRun(f"workers={w}/seed={seed}", ["run", options.task, "--scaling", options.scaling,
                                                           *options.run_args, "--seed", str(seed)],
                              out / f"workers-{w}" / f"seed-{seed}", workers=w)
                   for w in counts for seed in range(options.seed, options.seed + options.runs)]
        results = run_batch(planned, slurm, out, resume, progress)
        for w in counts:
            results_by_count[w] = [r for run in planned if run.workers == w for r in results[run.key]]
            rows.append(scale_row(w, results_by_count[w]))
    for workers in counts if slurm is None else ():
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
        rows.append(scale_row(workers, outcome.results))
    add_speedups(rows)
    first = results_by_count[counts[0]][0]
    doc = {"job": f"{first.task}/{first.entry}", "task": first.task, "entry": first.entry,
           "scaling": options.scaling, "runs": options.runs, "baseline_workers": counts[0],
           "threads_per_worker": threads,
           "hardware": first.hardware, "rows": rows}
    atomic_write_json(out / SCALE_FILE, doc)
    return doc
