"""A batch of runs as Slurm jobs, through submitit: the options, submitting, watching until every job has
ended (or Ctrl-C cancels them), and each run's record settled."""

from __future__ import annotations

import datetime as dt
import math
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench import bounds, waits
from dawnbench.errors import DawnbenchError
from dawnbench.experiments.slurm.job import NODES_WAIT_S, job_main
from dawnbench.experiments.slurm.records import finished, records_in, settle
from dawnbench.experiments.slurm.scheduler import (
    ENDED,
    REQUEUED,
    SchedulerError,
    cancel,
    job_states,
)
from dawnbench.harness.signals import interruptible
from dawnbench.io import atomic_write_json, output_dir
from dawnbench.records.record import RunResult, read_result

MANIFEST = "batch.json"
SCHEDULER_PATIENCE_S = 120.0    # how long the watch loop bears a failing scontrol before it gives up


@dataclass
class SlurmOptions:
    partition: str | None = None
    gpus_per_run: int = 0                # per worker: a W-worker run asks W × this
    cpus_per_run: int | None = None      # per worker (default: the cluster's)
    workers_per_node: int | None = None  # a run of more workers spans several nodes (default: all on one)
    time_limit_min: int = 60
    account: str | None = None
    array_parallelism: int = 256
    sbatch: list[str] = field(default_factory=list)   # other sbatch options, "--key=value"
    rdzv_port: int | None = None         # a multi-node job's rendezvous port (default: from its job id)
    poll_s: float = 2.0


@dataclass
class PlannedRun:
    key: str                  # unique within the batch: what --resume matches
    argv: list[str]           # `dawnbench run …` without --out
    out: Path                 # the folder its run folder goes into
    workers: int = 1

    @property
    def task(self) -> str:
        return self.argv[1] if len(self.argv) > 1 else "?"

    @property
    def seed(self) -> int:
        """The seed its ``--seed`` names (the command's default, 0, where it names none)."""
        at = self.argv.index("--seed") + 1 if "--seed" in self.argv else len(self.argv)
        return int(self.argv[at]) if at < len(self.argv) else 0


def check(options: SlurmOptions) -> None:
    """What fails before anything is submitted: submitit or Slurm missing, options out of range."""
    try:
        import submitit  # noqa: F401 - imported only to know it is installed
    except ImportError:
        raise DawnbenchError("--executor slurm needs submitit: pip install submitit (or pip install -e '.[slurm]')."
                             ) from None
    if shutil.which("sbatch") is None:
        raise DawnbenchError("--executor slurm: no `sbatch` on PATH. Run the command on a Slurm login node, or use "
                             "--executor local.")
    bounds.check_fields(options, {"time_limit_min": "--time-limit", "array_parallelism": "--array-parallelism",
                                  "gpus_per_run": "--gpus-per-run", "cpus_per_run": "--cpus-per-run",
                                  "workers_per_node": "--workers-per-node", "rdzv_port": "--rdzv-port"})
    for item in options.sbatch:
        if not item.startswith("--") or "=" not in item:
            raise DawnbenchError(f"--sbatch {item!r}: give sbatch options as --key=value, e.g. --sbatch --qos=high.")


def _nodes(options: SlurmOptions, workers: int) -> int:
    return math.ceil(workers / (options.workers_per_node or workers))


def _executor(options: SlurmOptions, folder: Path, workers: int) -> Any:
    import submitit

    executor = submitit.SlurmExecutor(folder=folder / "%j", max_num_timeout=0)
    nodes = _nodes(options, workers)
    extra = dict(item[2:].split("=", 1) for item in options.sbatch)
    executor.update_parameters(
        job_name="dawnbench", time=options.time_limit_min, nodes=nodes, ntasks_per_node=1,
        cpus_per_task=(options.cpus_per_run or 1) * (workers // nodes) if options.cpus_per_run or workers > 1 else None,
        gpus_per_node=options.gpus_per_run * (workers // nodes) or None, partition=options.partition,
        account=options.account, array_parallelism=options.array_parallelism, signal_delay_s=10,
        srun_args=[f"--wait={NODES_WAIT_S}"] if nodes > 1 else None,
        additional_parameters=extra or None)
    return executor


def run_batch(runs: list[PlannedRun], options: SlurmOptions, out: Path, resume: bool = False,
              progress: Callable[[dict[str, int]], None] = lambda counts: None) -> dict[str, list[RunResult]]:
    """Submit the runs, wait for them, settle their records; key → the run's records."""
    check(options)
    out = output_dir(out)
    made = not (out / ".slurm").exists()          # ours to remove again if nothing could be submitted
    folder = output_dir(out / ".slurm")
    todo = _to_submit(runs, options, out, resume)
    jobs = _submitted(todo, runs, options, folder, made)
    by_key = {r.key: r for r in todo}
    states, cancelled = _watch(jobs, options, progress)
    results = {key: settle(run.out, run.task, run.seed, job.job_id, states[job.job_id], cancelled, job.paths.stderr)
               for key, job in jobs.items() for run in [by_key[key]]}
    for run in runs:  # finished before this batch (--resume): read as they are
        if run.key not in results:
            results[run.key] = [RunResult.from_dict(read_result(d)) for d in records_in(run.out)]
    if cancelled:
        raise KeyboardInterrupt
    return results


def _to_submit(runs: list[PlannedRun], options: SlurmOptions, out: Path, resume: bool) -> list[PlannedRun]:
    """The runs to submit: all of them, or with ``resume`` those without a finished record (an unfinished
    attempt's folder moved to ``OUT/.superseded/``, never deleted); each one's workers split evenly over
    its nodes."""
    todo = []
    for run in runs:
        if resume and finished(run.out):
            continue
        if resume:
            for d in records_in(run.out):  # an unfinished attempt: kept, out of the analysis's way
                shutil.move(str(d), str(output_dir(out / ".superseded") / f"{run.key.replace('/', '_')}-{d.name}"))
        todo.append(run)
    for r in todo:
        nodes = _nodes(options, r.workers)
        if r.workers % nodes:
            raise DawnbenchError(f"{r.key}: {r.workers} workers do not split evenly over {nodes} nodes "
                                 f"(--workers-per-node {options.workers_per_node}); choose a worker count that is a "
                                 "multiple of the node count.")
    return todo


def _submitted(todo: list[PlannedRun], runs: list[PlannedRun], options: SlurmOptions, folder: Path,
               made: bool) -> dict[str, Any]:
    """``todo`` submitted (key → submitit job) and the batch's manifest written; where sbatch refuses, one
    paragraph — the jobs submitted before it cancelled, the folder removed if this batch made it."""
    manifest: dict[str, Any] = {"started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    jobs: dict[str, Any] = {}
    submitted_at = time.time()         # the batch's submission began: what "submission to start" counts from
    try:
        _submit(todo, options, folder, jobs)
    except Exception as err:  # noqa: BLE001 - sbatch's refusal, in submitit's words: one paragraph, not a traceback
        if jobs:
            cancel(list(jobs.values()))
        elif made:
            shutil.rmtree(folder, ignore_errors=True)
        said = " ".join(str(err).split())[:600] or type(err).__name__
        raise DawnbenchError(f"--executor slurm: the batch could not be submitted ({type(err).__name__}: {said}). "
                             "Is this a Slurm login node whose controller answers (`sinfo`)? Are the partition, "
                             "account and --sbatch options ones this cluster has? Nothing ran"
                             + (f"; the {len(jobs)} job(s) submitted before it were cancelled." if jobs else ".")
                             ) from None
    manifest["runs"] = {r.key: {"argv": r.argv, "out": str(r.out), "workers": r.workers,
                                "job_id": jobs[r.key].job_id if r.key in jobs else None,
                                "submitted_unix_s": submitted_at if r.key in jobs else None} for r in runs}
    atomic_write_json(folder / MANIFEST, manifest, update=True)   # the batch's own manifest: --resume rewrites it
    return jobs


def _watch(jobs: dict[str, Any], options: SlurmOptions, progress: Callable[[dict[str, int]], None]
           ) -> tuple[dict[str, dict[str, Any]], bool]:
    """Poll the jobs' states until every one has ended: (their last states, whether Ctrl-C cancelled them).
    A failing ``scontrol`` is borne for ``SCHEDULER_PATIENCE_S``; a requeued job is given up (``_requeued``)."""
    states: dict[str, dict[str, Any]] = {}
    failing_since: float | None = None
    given_up: dict[str, dict[str, Any]] = {}   # job id → its state when the batch cancelled it after a requeue
    # job id → the nodes it last ran on: read while RUNNING, since a requeued job lists none and a COMPLETING one
    # only the nodes still finishing (a two-node job that lost a node was recorded on one)
    ran_on: dict[str, str] = {}
    try:
        with interruptible():
            while True:
                try:
                    states = job_states([job.job_id for job in jobs.values()])
                    failing_since = None
                except SchedulerError as err:   # a controller restarting: bear it a while, then say so
                    failing_since = failing_since or time.monotonic()
                    if time.monotonic() - failing_since > SCHEDULER_PATIENCE_S:
                        raise SchedulerError(f"{err} — for {SCHEDULER_PATIENCE_S:.0f} s. The batch's jobs "
                                             f"({', '.join(j.job_id for j in jobs.values())}) may still run and "
                                             "write their records; once the scheduler answers, `--resume` on the "
                                             "same --out submits what did not finish.") from None
                    time.sleep(waits.scaled(options.poll_s))
                    continue
                ran_on.update({j: st["nodes"] for j, st in states.items()
                               if st["state"] == "RUNNING" and st["nodes"] not in ("", "(null)")})
                _requeued(jobs, states, given_up, ran_on)
                counts = _counts(jobs, states)
                progress(counts)
                if counts["done"] + counts["failed"] == len(jobs):
                    return _ran_on(states, ran_on), False
                time.sleep(waits.scaled(options.poll_s))
    except SchedulerError:
        raise                  # nothing can be cancelled or settled without the scheduler
    except BaseException:      # Ctrl-C (or anything else): our jobs, and only ours, go
        cancel(list(jobs.values()))
        states = {**job_states([job.job_id for job in jobs.values()]), **given_up}
        if not isinstance(sys.exc_info()[1], KeyboardInterrupt):
            raise
        return _ran_on(states, ran_on), True


def _ran_on(states: dict[str, dict[str, Any]], ran_on: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The jobs' last states, each with the nodes it was seen running on (where it was seen running)."""
    return {j: {**st, "nodes": ran_on.get(j, st["nodes"])} for j, st in states.items()}


def _counts(jobs: dict[str, Any], states: dict[str, dict[str, Any]]) -> dict[str, int]:
    """How many of the jobs are queued, running, done (completed) and failed (ended otherwise)."""
    counts = {"queued": 0, "running": 0, "done": 0, "failed": 0}
    for job in jobs.values():
        state = states[job.job_id]["state"]
        counts["done" if state == "COMPLETED" else "failed" if state in ENDED else
               "running" if state in ("RUNNING", "COMPLETING") else "queued"] += 1
    return counts


def _requeued(jobs: dict[str, Any], states: dict[str, dict[str, Any]], given_up: dict[str, dict[str, Any]],
              ran_on: dict[str, str]) -> None:
    """A job the scheduler put back in the queue after it started (preemption, `scontrol requeue`, a node
    that failed under it): its attempt has ended and its run folder says how. The batch does not wait for
    a second attempt it cannot bound (a two-node job whose node is down would pend for good): it cancels
    the job, and marks its state ``REQUEUED`` in ``states``, with the nodes of the attempt that ran
    (``ran_on``) — ``--resume`` runs it again."""
    for job in jobs.values():
        state = states[job.job_id]
        if job.job_id in given_up:
            states[job.job_id] = given_up[job.job_id]
        elif state.get("restarts", 0) > 0 and state["state"] not in ENDED:
            cancel([job])
            given_up[job.job_id] = states[job.job_id] = {
                **state, "state": REQUEUED, "nodes": ran_on.get(job.job_id, state["nodes"]),
                "reason": f"requeued by the scheduler after it started (restart {state['restarts']}: preemption, "
                          "`scontrol requeue`, or a node that failed under it), then cancelled by the batch; "
                          "`--resume` on the same --out runs it again"}


def _submit(todo: list[PlannedRun], options: SlurmOptions, folder: Path, jobs: dict[str, Any]) -> None:
    """Submit ``todo`` into ``jobs`` (key → submitit job): single-worker runs as one array, each
    multi-worker run as a job of its own."""
    singles = [r for r in todo if r.workers == 1]
    if singles:
        executor = _executor(options, folder, 1)
        with executor.batch():
            submitted = [(r, executor.submit(job_main, [*r.argv, "--out", str(r.out)], 1)) for r in singles]
        jobs.update({r.key: job for r, job in submitted})
    for r in (r for r in todo if r.workers > 1):
        jobs[r.key] = _executor(options, folder, r.workers).submit(job_main, [*r.argv, "--out", str(r.out)],
                                                                   r.workers, options.rdzv_port)
