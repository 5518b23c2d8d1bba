"""``dawnbench jobs``: one budget of devices used three ways (SPEC §20; the MLPerf characterisation's §5.6,
Figure 8), one way after the other, and what each asks of the machine — here, or as jobs of a Slurm
cluster (``slurm``: a type at a time, so the types do not share the cluster).

    doc = run_jobs(JobsOptions(task="mnist", slots=2))

The machine is cut into ``slots`` shares — on a GPU machine one GPU each, on a CPU its cores
dealt out in equal, disjoint sets — and the same budget runs as

* ``distributed``  one run of ``slots`` workers (``run --nproc``, launched as ``scale`` launches
  it: torchrun, DDP), each worker pinned to its share;
* ``multiple``     ``slots`` independent runs of the same configuration, seeds seed … seed + slots − 1,
  one process each, side by side, each pinned to its share;
* ``mixed``        ``slots`` runs of different configurations side by side (``--mix task[:entry],…``;
  by default the task's built-in entries in turn), each pinned to its share.

A CPU share is set with the process's CPU affinity and its thread count (``OMP_NUM_THREADS``);
a GPU share with ``CUDA_VISIBLE_DEVICES``. Every run writes its own record under
``OUT/<type>/``; the table compares the types on throughput (training samples per second of
all the type's runs together), TTA (the median of its runs'), CPU and accelerator utilisation
(each run's mean weighted by how long it ran, over the type's wall time: the machine's average
load while the type ran), host and accelerator memory (each run's peak, summed: what the machine
carried at most at once), and the type's wall time. Ctrl-C stops every run of the type in progress (each records
``interrupted``) and waits for them: no process is left behind; a run that dies does not stop
the others.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from dawnbench import waits
from dawnbench.analysis.workloads import SYSTEM, sampled_seconds, system_measures
from dawnbench.distributed.launch import LaunchOptions
from dawnbench.distributed.world import PIN_CPUS_ENV
from dawnbench.entries import BUILTIN, load_entry_class
from dawnbench.errors import DawnbenchError
from dawnbench.experiments.launch import launch
from dawnbench.experiments.slurm import PlannedRun, SlurmOptions, run_batch
from dawnbench.harness.signals import interruptible
from dawnbench.io import atomic_write_json, output_dir
from dawnbench.records.record import RunResult, read_result
from dawnbench.tasks import TASKS

TYPES = ("distributed", "multiple", "mixed")
JOBS_FILE = "jobs.json"
STOP_GRACE_S = 30.0                 # after Ctrl-C, a run has this long to write its record before SIGKILL


@dataclass
class JobsOptions:
    task: str
    slots: int
    types: tuple[str, ...] = TYPES
    mix: tuple[str, ...] = ()                        # "task[:entry]" per slot (mixed); default: the task's entries
    run_args: list[str] = field(default_factory=list)  # every `dawnbench run` gets these (--target, --set, ...)
    entry: str | None = None
    seed: int = 0
    gpus: int = 0                                    # GPUs on this machine (0: a CPU machine)
    out: Path = Path("jobs")


def shares(slots: int, gpus: int, cores: list[int] | None = None) -> list[dict[str, Any]]:
    """Each slot's share of the machine: one GPU, or an equal, disjoint set of ``cores`` (by default this
    process's); cores that do not divide evenly are left idle rather than given to one slot."""
    if gpus:
        return [{"gpu": i} for i in range(slots)]
    cores = sorted(os.sched_getaffinity(0) if cores is None else cores)
    per = len(cores) // slots
    return [{"cpus": cores[i * per:(i + 1) * per]} for i in range(slots)]


def mix_configs(options: JobsOptions) -> list[tuple[str, str | None]]:
    """(task, entry) of each mixed slot: ``--mix`` in turn, or the task's built-in entries in turn."""
    if options.mix:
        configs = [(item.partition(":")[0], item.partition(":")[2] or None) for item in options.mix]
    else:
        made_for = [name for name in sorted(BUILTIN) if options.task in load_entry_class(name).tasks]
        configs = [(options.task, name) for name in made_for] or [(options.task, None)]
    return [configs[i % len(configs)] for i in range(options.slots)]


def check(options: JobsOptions, here: bool = True) -> None:
    """Bad input before anything runs: one paragraph each (``here``: the slots are this machine's)."""
    limit = (options.gpus or len(os.sched_getaffinity(0))) if here else 1_000_000
    if not 1 <= options.slots <= limit:
        raise DawnbenchError(f"--slots {options.slots}: must be from 1 to {limit}, the "
                             f"{'GPUs' if options.gpus else 'cores'} of this machine (one share per slot).")
    unknown = [t for t in options.types if t not in TYPES]
    if unknown or not options.types:
        raise DawnbenchError(f"--types {','.join(unknown) or '(none)'}: use one or more of {', '.join(TYPES)}.")
    for item in options.mix:
        task, _, entry = item.partition(":")
        if not task:
            raise DawnbenchError(f"--mix {','.join(options.mix)!r}: an empty configuration; give TASK[:ENTRY] items "
                                 "separated by commas, e.g. --mix mnist:small-cnn,fashion-mnist.")
        if task not in TASKS:
            raise DawnbenchError(f"--mix {item}: unknown task '{task}'. Known tasks: {', '.join(TASKS)}.")
        if entry:
            cls = load_entry_class(entry)
            if cls.tasks and task not in cls.tasks:
                raise DawnbenchError(f"--mix {item}: entry '{entry}' is made for {', '.join(cls.tasks)}, not '{task}'.")


def _pinned_env(share: dict[str, Any]) -> dict[str, str]:
    if "gpu" in share:
        return {"CUDA_VISIBLE_DEVICES": str(share["gpu"])}
    return {"OMP_NUM_THREADS": str(len(share["cpus"]))}


def _start(argv: list[str], share: dict[str, Any], log: Path) -> subprocess.Popen:
    """One independent run in its own process group, pinned to its share."""
    cpus = share.get("cpus")

    def pin() -> None:
        os.setpgrp()  # its own group: a Ctrl-C here reaches it through us, once, not twice
        if cpus:
            os.sched_setaffinity(0, cpus)

    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as sink:
        return subprocess.Popen([sys.executable, "-m", "dawnbench", *argv], stdout=sink, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env={**os.environ, **_pinned_env(share)}, preexec_fn=pin)


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGINT to every run (each records `interrupted`), then SIGKILL to what is still there after the grace."""
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
    deadline = time.monotonic() + waits.scaled(STOP_GRACE_S)
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            family = [proc.pid, *(c.pid for c in psutil.Process(proc.pid).children(recursive=True))]
            for pid in family:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()


def _independent(argvs: list[list[str]], slots: list[dict[str, Any]], folder: Path,
                 progress: Callable[[str], None]) -> list[RunResult]:
    procs = [_start(argv, share, folder / f"slot-{i}.log") for i, (argv, share) in enumerate(zip(argvs, slots))]
    try:
        with interruptible():
            while any(p.poll() is None for p in procs):
                running = sum(p.poll() is None for p in procs)
                progress(f"{running} of {len(procs)} runs going")
                time.sleep(0.5)
    except BaseException:
        _stop(procs)
        raise
    results = []
    for i in range(len(procs)):
        dirs = sorted(d for d in (folder / f"slot-{i}").iterdir() if d.is_dir()) if (folder / f"slot-{i}").is_dir() else []
        results += [RunResult.from_dict(read_result(d)) for d in dirs]
    return results


def _row(kind: str, results: list[RunResult], wall_s: float, configs: list[str],
         slots: list[dict[str, Any]]) -> dict[str, Any]:
    measures = [(system_measures(r.resources), sampled_seconds(r.resources)) for r in results]

    def total(name: str) -> float | None:
        """A mean (CPU, utilisation, traffic): each run's, weighted by how long it ran, over the type's wall
        time — the machine's average load while the type ran (two runs of 116 s and 10 s side by side are
        not two busy cores for 116 s). A peak (memory): summed, what the machine carried at most at once."""
        values = [(m[name], seconds) for m, seconds in measures if m[name] is not None]
        if not values:
            return None
        if SYSTEM[name][1] == "mean" and wall_s > 0 and all(seconds for _, seconds in values):
            return sum(value * min(seconds, wall_s) for value, seconds in values) / wall_s
        return sum(value for value, _ in values)

    rates = [(r.throughput or {}).get("samples_per_s") for r in results]
    ttas = [r.time_to_accuracy_s for r in results if r.time_to_accuracy_s is not None]
    return {"type": kind, "runs": len(results), "successes": sum(r.succeeded for r in results),
            "statuses": [r.status for r in results], "configurations": configs, "shares": slots,
            "samples_per_s": sum(v for v in rates if v) or None,
            "tta_median_s": statistics.median(ttas) if ttas else None, "wall_s": wall_s,
            **{name: total(name) for name in SYSTEM},
            "run_dirs": [r.run_dir for r in results]}


def _argvs(options: JobsOptions, kind: str) -> tuple[list[list[str]], list[str]]:
    """(``dawnbench run`` arguments, configuration names) of an independent type's slots."""
    pairs = [(options.task, options.entry)] * options.slots if kind == "multiple" else mix_configs(options)
    argvs = [["run", task, *(["--entry", e] if e else []), *options.run_args,
              "--seed", str(options.seed + (i if kind == "multiple" else 0))] for i, (task, e) in enumerate(pairs)]
    return argvs, [f"{task}/{e or 'default'}" for task, e in pairs]


def _on_slurm(options: JobsOptions, kind: str, folder: Path, slurm: SlurmOptions, resume: bool,
              progress: Callable[[str], None]) -> tuple[list[RunResult], list[str]]:
    """One type as Slurm jobs: the distributed run one job of ``slots`` workers, the others one job each."""
    if kind == "distributed":
        entry = ["--entry", options.entry] if options.entry else []
        planned = [PlannedRun("distributed", ["run", options.task, *entry, *options.run_args, "--seed",
                                              str(options.seed)], folder, workers=options.slots)]
        configs = [f"{options.task}/{options.entry or 'default'} ×{options.slots}"]
    else:
        argvs, configs = _argvs(options, kind)
        planned = [PlannedRun(f"{kind}/slot-{i}", argv, folder / f"slot-{i}") for i, argv in enumerate(argvs)]
    results = run_batch(planned, slurm, folder.parent, resume, lambda counts: progress(
        f"{kind}: " + ", ".join(f"{n} {k}" for k, n in counts.items())))
    return [r for run in planned for r in results[run.key]], configs


def run_jobs(options: JobsOptions, progress: Callable[[str], None] = lambda msg: None,
             slurm: SlurmOptions | None = None, resume: bool = False) -> dict[str, Any]:
    """Run every asked job type in turn — here, or with ``slurm`` as jobs of that cluster, a type at a
    time — and write ``jobs.json`` in ``options.out``; returns it."""
    check(options, here=slurm is None)
    out = output_dir(options.out)
    slots = shares(options.slots, options.gpus) if slurm is None else \
        [{"slurm_job": True, "cpus": slurm.cpus_per_run, "gpus": slurm.gpus_per_run}] * options.slots
    entry = ["--entry", options.entry] if options.entry else []
    rows = []
    for kind in options.types:
        start = time.perf_counter()
        folder = out / kind
        progress(f"{kind}: starting")
        if slurm is not None:
            results, configs = _on_slurm(options, kind, folder, slurm, resume, progress)
        elif kind == "distributed":
            cpus = ";".join(",".join(map(str, s["cpus"])) for s in slots) if not options.gpus else ""
            os.environ[PIN_CPUS_ENV] = cpus
            try:
                outcome = launch(["run", options.task, *entry, *options.run_args, "--seed", str(options.seed),
                                  "--out", str(folder)],
                                 LaunchOptions(nproc=options.slots, threads=None if options.gpus else len(slots[0]["cpus"])))
            finally:
                os.environ.pop(PIN_CPUS_ENV, None)
            if outcome.signal:
                raise KeyboardInterrupt
            results, configs = outcome.results, [f"{options.task}/{options.entry or 'default'} ×{options.slots}"]
        else:
            argvs, configs = _argvs(options, kind)
            argvs = [[*argv, "--out", str(folder / f"slot-{i}")] for i, argv in enumerate(argvs)]
            results = _independent(argvs, slots, folder, lambda msg, k=kind: progress(f"{k}: {msg}"))
        if results and all(r.entry for r in results):   # the entries the runs resolved, not "default"
            configs = [f"{r.task}/{r.entry}" + (f" ×{options.slots}" if kind == "distributed" else "") for r in results]
        rows.append(_row(kind, results, time.perf_counter() - start, configs, slots))
        progress(f"{kind}: done")
    doc = {"task": options.task, "entry": options.entry, "slots": options.slots,
           "machine": "gpus" if options.gpus else "cpus", "shares": slots, "rows": rows}
    atomic_write_json(out / JOBS_FILE, doc)
    return doc
