"""Batches of runs as jobs of a Slurm cluster, through ``submitit`` (SPEC §21): no queue of our own.

    runs = [PlannedRun("seed=0", ["run", "mnist", "--seed", "0"], Path("runs/seed=0")), ...]
    results = run_batch(runs, SlurmOptions(partition="gpu", time_limit_min=30), Path("runs"))

**One run, one job.** Single-worker runs go in one submission as a job array (submitit batches
them), at most ``array_parallelism`` at a time; a run of W workers is one job of its own, on
⌈W / workers-per-node⌉ nodes with one task per node, each task starting ``dawnbench run
--nproc`` (torchrun) for its node's workers and, over several nodes, meeting the others
through torchrun's rendezvous at the job's first node (``--nnodes``, ``--node-rank``,
``--rdzv-endpoint``: the flags ``run`` already has). Every job writes its run folder into
the shared output folder with the crash safety it has on one machine, and records the
scheduler's facts about itself (job id, array task, node list, partition: ``scheduler`` in
``result.json``).

**Watching.** The command waits, showing the jobs queued, running, done and failed, and reads
each job's state with ``scontrol`` (and ``sacct``, where the cluster keeps accounting, for jobs
``scontrol`` has forgotten). A cluster without accounting — a single-node test cluster, say —
answers ``sacct`` with an error; submitit's own watcher would warn about it, so states are not
asked of it. A job neither knows is ``UNKNOWN``, which counts as ended — in the watch loop and
when cancelling alike — and settles as ``aborted`` unless its run had finished. A failing
``scontrol`` (the controller restarting) is borne for ``SCHEDULER_PATIENCE_S``; then the command
stops and says what ``scontrol`` said, and that ``--resume`` picks the batch up later.

**Endings** (:func:`settle`). When a job has ended, its record gets the scheduler's final state
and reason. A job that completed keeps its run's own status. One that timed out gives
``timeout``; one that failed, was cancelled, preempted, ran out of memory or lost its node
gives ``aborted`` — with the scheduler's state and reason in ``error`` — and a job that ended
before its run wrote anything gets a record of its own saying so. Ctrl-C on the command cancels
the jobs it submitted (and only those: ``scancel`` by job id), waits for them to go, and
records them ``interrupted``. ``--resume`` on the same output folder submits only the runs
without a finished record (``success``, ``not_reached`` or ``diverged``); the record of an
unfinished attempt is moved to ``OUT/.superseded/``, never deleted. ``OUT/.slurm/`` keeps
submitit's files and the batch's manifest.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.harness import mllog
from dawnbench.harness.record import RUNNING, RunResult, read_result
from dawnbench.harness.signals import interruptible
from dawnbench.io import atomic_write_json, output_dir

FINISHED = ("success", "not_reached", "diverged")        # a run that got to its end: not run again on --resume
TIMED_OUT = {"TIMEOUT", "DEADLINE"}
FAILED = {"FAILED", "CANCELLED", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "REVOKED",
          "UNKNOWN",                                      # UNKNOWN: neither scontrol nor sacct knows the job
          "REQUEUED"}                                     # put back in the queue: cancelled by the batch
ENDED = TIMED_OUT | FAILED | {"COMPLETED"}
MANIFEST = "batch.json"
RDZV_PORT, RDZV_PORTS = 29400, 10_000   # a job's rendezvous port: RDZV_PORT + its id modulo RDZV_PORTS
SCHEDULER_PATIENCE_S = 120.0    # how long the watch loop bears a failing scontrol before it gives up
# A multi-node job's nodes end their runs together; once one node's task has ended, the others get this
# long before srun ends them (a node left waiting at a rendezvous or a collective for a peer that is gone).
NODES_WAIT_S = 30


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


def check(options: SlurmOptions) -> None:
    """What fails before anything is submitted: submitit or Slurm missing, options out of range."""
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise DawnbenchError("--executor slurm needs submitit: pip install submitit (or pip install -e '.[slurm]')."
                             ) from None
    if shutil.which("sbatch") is None:
        raise DawnbenchError("--executor slurm: no `sbatch` on PATH. Run the command on a Slurm login node, or use "
                             "--executor local.")
    for name, value, low in (("--time-limit", options.time_limit_min, 1), ("--array-parallelism",
                             options.array_parallelism, 1), ("--gpus-per-run", options.gpus_per_run, 0),
                             ("--cpus-per-run", options.cpus_per_run, 1), ("--workers-per-node",
                             options.workers_per_node, 1)):
        if value is not None and not (isinstance(value, int) and value >= low):
            raise DawnbenchError(f"{name} {value}: must be an integer ≥ {low}.")
    if options.rdzv_port is not None and not 1024 <= options.rdzv_port <= 65535:
        raise DawnbenchError(f"--rdzv-port {options.rdzv_port}: must be a port from 1024 to 65535.")
    for item in options.sbatch:
        if not item.startswith("--") or "=" not in item:
            raise DawnbenchError(f"--sbatch {item!r}: give sbatch options as --key=value, e.g. --sbatch --qos=high.")


# --- inside a job ----------------------------------------------------------------------------

def rendezvous(port: int | None = None) -> str:
    """HOST:PORT of this job's rendezvous: its first node, at the address Slurm itself reaches it by (the
    node's ``NodeAddr``: a name the other nodes can resolve, or an address — two nodes on one test host
    share 127.0.0.1), on ``port`` or one derived from the job id (two multi-node jobs of one batch may
    share a first node; each needs a port of its own)."""
    first = subprocess.run(["scontrol", "show", "hostnames", os.environ["SLURM_JOB_NODELIST"]],
                           capture_output=True, text=True, check=True).stdout.split()[0]
    shown = subprocess.run(["scontrol", "-o", "show", "node", first], capture_output=True, text=True).stdout
    address = next((f.split("=", 1)[1] for f in shown.split() if f.startswith("NodeAddr=")), "") or first
    job = int(os.environ.get("SLURM_ARRAY_JOB_ID") or os.environ.get("SLURM_JOB_ID") or 0)
    return f"{address}:{port or RDZV_PORT + job % RDZV_PORTS}"


def job_main(argv: list[str], workers: int, rdzv_port: int | None = None) -> int:
    """What each task of a job runs: ``dawnbench run`` — with torchrun for this node's workers and, on
    several nodes, its rendezvous at the job's first node. Returns the run's exit code."""
    nodes, node = int(os.environ.get("SLURM_NNODES", "1")), int(os.environ.get("SLURM_NODEID", "0"))
    if workers > 1:
        argv = [*argv, "--nproc", str(workers // nodes)]
        if nodes > 1:
            argv += ["--nnodes", str(nodes), "--node-rank", str(node), "--rdzv-endpoint", rendezvous(rdzv_port)]
    # SIGUSR2 is Slurm's warning before the time limit (submitit asks for it). submitit's own handler in
    # this process would requeue the job — as if preempted when the limit was changed after submission —
    # and the run must not die of it either (its record would stay `running`). Ignored here and, by
    # inheritance, in the run: at the limit Slurm's SIGTERM ends the run as Ctrl-C does, and the batch
    # records `timeout`.
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    code = subprocess.call([sys.executable, "-m", "dawnbench", *argv], env=_thread_env(workers // nodes))
    # 1 on the first node: a run that ended without reaching its target (its record says so). Any other code
    # there, and any but 0 on another node (it holds no record; its workers failed), fails the task and so the
    # job. srun gives the other nodes' tasks NODES_WAIT_S more to write what they know, then ends them.
    if code not in (0, 1) or (code and node > 0):
        raise SystemExit(code)
    return code


def _thread_env(workers_here: int) -> dict[str, str]:
    """The job's environment with each worker's thread count set to its share of the CPUs Slurm allocated
    on this node (``SLURM_CPUS_ON_NODE``), unless the user set ``OMP_NUM_THREADS``. Without it every run
    starts a thread per core of the machine: two 1-CPU jobs on a 2-core node then run four busy threads
    on two cores, and a 5 s MNIST run took 87 s in this project's overhead benchmark."""
    env = dict(os.environ)
    cpus = int(os.environ.get("SLURM_CPUS_ON_NODE") or 0)
    if cpus and "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = str(max(1, cpus // max(1, workers_here)))
    return env


# --- the scheduler's view --------------------------------------------------------------------

def _task_ids(spec: str) -> list[str]:
    """An array's task ids as ``scontrol`` folds the pending ones: ``0-3``, ``1,3-5``, ``0-15%4``, ``0-6:2``."""
    ids = []
    for part in spec.split("%")[0].strip("[]").split(","):
        first, _, rest = part.partition("-")
        last, _, step = rest.partition(":")
        if first.isdigit() and (not last or last.isdigit()) and (not step or step.isdigit()):
            ids += [str(i) for i in range(int(first), int(last or first) + 1, int(step or 1))]
    return ids


def _parse_scontrol(text: str) -> dict[str, dict[str, str]]:
    states = {}
    for line in text.splitlines():
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        if "JobId" not in fields:
            continue
        state = {"state": fields.get("JobState", "UNKNOWN"), "reason": fields.get("Reason", "None"),
                 "nodes": fields.get("NodeList", "(null)"), "exit_code": fields.get("ExitCode", ""),
                 "restarts": int(fields["Restarts"]) if fields.get("Restarts", "").isdigit() else 0}
        task = fields.get("ArrayTaskId", "N/A")
        if task != "N/A" and fields.get("ArrayJobId"):
            # the tasks not yet started are one record: ArrayTaskId=1-3 stands for 1, 2 and 3
            states.update({f"{fields['ArrayJobId']}_{t}": state for t in _task_ids(task)})
        else:
            states[fields["JobId"]] = state
    return states


class SchedulerError(DawnbenchError):
    """``scontrol`` did not answer (the controller down or unreachable): nothing can be said of the jobs."""


FORGOTTEN = {"state": "UNKNOWN", "reason": "the scheduler no longer knows the job (neither scontrol nor sacct has "
             "it)", "nodes": "", "exit_code": "", "restarts": 0}
REQUEUED = "REQUEUED"   # the batch's own word for a job the scheduler put back in the queue after it started


def job_states(job_ids: list[str]) -> dict[str, dict[str, str]]:
    """Job id (``123`` or ``123_4``) → scheduler state, reason and node list, for every id asked: from
    ``scontrol``; what it has forgotten is asked of ``sacct`` where the cluster keeps accounting, and a
    job neither knows is ``UNKNOWN`` — ended, for the watch loop and for cancelling alike (a job is
    known from its submission until ``MinJobAge`` after its end). A failing ``scontrol`` raises
    :class:`SchedulerError` with what it said."""
    states: dict[str, dict[str, str]] = {}
    for base in sorted({j.split("_")[0] for j in job_ids}):
        proc = subprocess.run(["scontrol", "-o", "show", "job", base], capture_output=True, text=True)
        if proc.returncode == 0:
            states.update(_parse_scontrol(proc.stdout))
        elif "invalid job id" not in proc.stderr.lower():
            said = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()[0]
            raise SchedulerError(f"`scontrol show job {base}` failed: {said}")
    missing = [j for j in job_ids if j not in states]
    if missing and shutil.which("sacct"):
        proc = subprocess.run(["sacct", "-n", "-P", "-o", "JobID,State,Reason,NodeList", "-j",
                               ",".join(sorted({j.split("_")[0] for j in missing}))], capture_output=True, text=True)
        for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
            job, state, reason, nodes = (line.split("|") + ["", "", "", ""])[:4]
            if job in missing:
                states[job] = {"state": state.split()[0] if state else "UNKNOWN", "reason": reason, "nodes": nodes,
                               "exit_code": "", "restarts": 0}
    return {j: states.get(j, FORGOTTEN) for j in job_ids}


# --- records ---------------------------------------------------------------------------------

def _records(folder: Path) -> list[Path]:
    return sorted(d for d in folder.iterdir() if (d / "result.json").is_file()) if folder.is_dir() else []


def finished(run: PlannedRun) -> bool:
    return any(read_result(d)["status"] in FINISHED for d in _records(run.out))


def _hostnames(nodes: str) -> list[str]:
    """Slurm's compressed node list (``n[1-2]``) as names; none where the job had no node."""
    if not nodes or nodes == "(null)":
        return []
    proc = subprocess.run(["scontrol", "show", "hostnames", nodes], capture_output=True, text=True)
    return proc.stdout.split() if proc.returncode == 0 else [nodes]


def settle(run: PlannedRun, job_id: str, state: dict[str, str], cancelled: bool) -> list[RunResult]:
    """The run's records with what only the scheduler knows (see the module docstring)."""
    facts = {"name": "slurm", "job_id": job_id, "state": state["state"], "reason": state["reason"],
             "nodes": state["nodes"], "node_names": _hostnames(state["nodes"]), "restarts": state.get("restarts", 0)}
    dirs = _records(run.out)
    if not dirs:  # the job ended before the run wrote its first line
        target = run.out / f"slurm-{job_id}"
        output_dir(target)
        result = RunResult(task=run.argv[1] if len(run.argv) > 1 else "?", entry="?", seed=-1, status=RUNNING,
                           official=False, metric="", threshold=0.0, run_dir=str(target))
        dirs = [target]
        atomic_write_json(target / "result.json", result.to_dict())
    settled = []
    for d in dirs:
        result = RunResult.from_dict(read_result(d))
        result.scheduler = {**(result.scheduler or {}), **facts}
        why = f"Slurm job {job_id} ended {state['state']} (reason: {state['reason']})"
        if cancelled and result.status not in FINISHED:
            result.status, result.error = "interrupted", "the batch was interrupted: its jobs were cancelled"
        elif state["state"] == REQUEUED and result.status not in FINISHED:
            why = f"Slurm job {job_id}: {state['reason']}"
            result.status = "aborted" if result.status == "aborted" else "interrupted"
            result.error = why if not result.error else f"{why}; the run had recorded: {result.error}"
        elif state["state"] in TIMED_OUT and result.status not in FINISHED:
            result.status, result.error = "timeout", f"{why}: the run passed --time-limit"
        elif state["state"] in FAILED and result.status not in FINISHED:
            result.status = "aborted"
            result.error = why if not result.error else f"{why}; the run had recorded: {result.error}"
        elif result.status == RUNNING:
            result.status, result.error = "aborted", f"{why}, but the run left no final status"
        atomic_write_json(d / "result.json", result.to_dict())
        events = d / "events.log"
        if events.is_file() and f'"key": "{mllog.RUN_STOP}"' not in events.read_text(encoding="utf-8"):
            log = mllog.EventLog(events)
            log.end(mllog.RUN_STOP, metadata={"status": result.status, "timed_s": result.timed_s, "reason": why})
            log.close()
        settled.append(result)
    return settled


# --- a batch ---------------------------------------------------------------------------------

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
    manifest: dict[str, Any] = {"started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                "runs": {}}
    todo = []
    for run in runs:
        if resume and finished(run):
            continue
        if resume:
            for d in _records(run.out):  # an unfinished attempt: kept, out of the analysis's way
                shutil.move(str(d), str(output_dir(out / ".superseded") / f"{run.key.replace('/', '_')}-{d.name}"))
        todo.append(run)
    for r in todo:
        nodes = _nodes(options, r.workers)
        if r.workers % nodes:
            raise DawnbenchError(f"{r.key}: {r.workers} workers do not split evenly over {nodes} nodes "
                                 f"(--workers-per-node {options.workers_per_node}); choose a worker count that is a "
                                 "multiple of the node count.")
    jobs: dict[str, Any] = {}
    submitted_at = time.time()         # the batch's submission began: what "submission to start" counts from
    try:
        _submit(todo, options, folder, jobs)
    except Exception as err:  # noqa: BLE001 - sbatch's refusal, in submitit's words: one paragraph, not a traceback
        if jobs:
            _cancel(list(jobs.values()))
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
    atomic_write_json(folder / MANIFEST, manifest)
    by_key = {r.key: r for r in todo}
    cancelled = False
    states: dict[str, dict[str, str]] = {}
    failing_since: float | None = None
    given_up: dict[str, dict[str, Any]] = {}   # job id → its state when the batch cancelled it after a requeue
    ran_on: dict[str, str] = {}                # job id → the nodes it last ran on (a requeued job has none)
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
                    time.sleep(options.poll_s)
                    continue
                ran_on.update({j: st["nodes"] for j, st in states.items() if st["nodes"] not in ("", "(null)")})
                _requeued(jobs, states, given_up, ran_on)
                counts = {"queued": 0, "running": 0, "done": 0, "failed": 0}
                for job in jobs.values():
                    state = states[job.job_id]["state"]
                    counts["done" if state == "COMPLETED" else "failed" if state in ENDED else
                           "running" if state in ("RUNNING", "COMPLETING") else "queued"] += 1
                progress(counts)
                if counts["done"] + counts["failed"] == len(jobs):
                    break
                time.sleep(options.poll_s)
    except SchedulerError:
        raise                  # nothing can be cancelled or settled without the scheduler
    except BaseException:      # Ctrl-C (or anything else): our jobs, and only ours, go
        cancelled = True
        _cancel(list(jobs.values()))
        states = {**job_states([job.job_id for job in jobs.values()]), **given_up}
        if not isinstance(sys.exc_info()[1], KeyboardInterrupt):
            raise
    results: dict[str, list[RunResult]] = {}
    for key, job in jobs.items():
        results[key] = settle(by_key[key], job.job_id, states[job.job_id], cancelled)
    for run in runs:  # finished before this batch (--resume): read as they are
        if run.key not in results:
            results[run.key] = [RunResult.from_dict(read_result(d)) for d in _records(run.out)]
    if cancelled:
        raise KeyboardInterrupt
    return results


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
            _cancel([job])
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


def _cancel(jobs: list[Any], wait_s: float = 60.0) -> None:
    """``scancel`` every job of this batch by id, and wait until the scheduler has let them go."""
    bases = sorted({job.job_id.split("_")[0] for job in jobs})
    if bases:
        subprocess.run(["scancel", *bases], capture_output=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        states = job_states([job.job_id for job in jobs])
        if all(states[job.job_id]["state"] in ENDED for job in jobs):
            return
        time.sleep(1.0)
