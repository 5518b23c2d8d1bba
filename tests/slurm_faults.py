"""The faults across nodes (SPEC §22), each tried once on a two-node cluster (tests/slurm_cluster.py) —
written once here, asserted by tests/test_slurm_nodes.py and measured into evidence by
benchmarks/slurm_faults.py.

Each scenario starts ``dawnbench run mnist --nproc 2 --workers-per-node 1 --executor slurm`` (one job,
a worker on each node) with the holding entry, causes its fault and returns an :class:`Outcome`: the
batch's exit code, the run's record, how long from the fault to the batch's return (``noticed_s``),
and what it left behind — its jobs in the queue, processes naming the run's folder. A scenario looks
only at its own batch's jobs, so those of ``SIDE_BY_SIDE`` can run at once.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from slurm_cluster import SlurmCluster

HERE = Path(__file__).resolve().parent
HOLD = ["--entry", str(HERE / "holding_entry.py"), "--target", "100", "--set", "hold_mib=8"]
TWO = ["--nproc", "2", "--workers-per-node", "1", "--cpus-per-run", "1", "--executor", "slurm"]
LONG = ["--set", "seconds=120"]      # a run that is still training when the fault comes
LEFT_WAIT_S = 30                     # how long a job or a process may take to go once the batch returned


@dataclass
class Outcome:
    fault: str
    exit: int
    record: dict[str, Any]
    noticed_s: float | None          # fault → the batch returned (None: no fault timed)
    jobs_left: list[str] = field(default_factory=list)
    processes_left: list[int] = field(default_factory=list)
    resumed: dict[str, Any] | None = None   # the record after --resume, where the scenario resumes
    details: dict[str, Any] = field(default_factory=dict)   # what else the scenario knows (the port it took…)

    def summary(self) -> dict[str, Any]:
        """What the evidence keeps: the record's verdict, not its every field."""
        r = self.record
        keep = lambda rec: None if rec is None else {
            "status": rec["status"], "error": rec["error"],
            "scheduler": {k: rec["scheduler"][k] for k in ("state", "reason", "node_names", "restarts")}
            if rec.get("scheduler") else None,
            "distributed": {k: rec["distributed"][k] for k in ("world_size", "nnodes")} if rec.get("distributed")
            else None,
            "timed_s": rec["timed_s"], "evals": len(rec["evals"])}
        return {"fault": self.fault, "exit": self.exit, "noticed_s": self.noticed_s, "record": keep(r),
                "jobs_left": self.jobs_left, "processes_left": self.processes_left, "resumed": keep(self.resumed),
                **self.details}


def records(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("**/result.json")) if ".superseded" not in p.parts]


def start(argv: list[str], out: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dawnbench", *argv, "--out", str(out), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def worker_on(cluster: SlurmCluster, node: str, out: Path, timeout: float = 90) -> psutil.Process:
    """The training worker torchrun started on ``node`` for the batch writing into ``out`` (its environment
    holds LOCAL_RANK, its command line names ``out``), once it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in cluster.processes(node):
            try:
                if "LOCAL_RANK" in proc.environ() and str(out) in " ".join(proc.cmdline()):
                    return proc
            except psutil.Error:
                continue
        time.sleep(0.3)
    raise AssertionError(f"no worker started on {node} in {timeout} s")


def training(out: Path, timeout: float = 120) -> None:
    """Wait until the run's clock has started (``run_start`` in its events.log), then one second more."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any('"key": "run_start"' in log.read_text(errors="replace") for log in out.glob("**/events.log")):
            time.sleep(1)
            return
        time.sleep(0.3)
    raise AssertionError(f"the run in {out} did not start its clock in {timeout} s")


def jobs_of(cluster: SlurmCluster, out: Path) -> list[str]:
    """The jobs of the batch writing into ``out`` that the cluster still has (scenarios may run side by side:
    each looks at its own, named in its batch's manifest)."""
    manifest = out / ".slurm" / "batch.json"
    ours = {run["job_id"] for run in json.loads(manifest.read_text())["runs"].values()} if manifest.exists() else set()
    return [job for job in cluster.queue() if job in ours]


def leftovers(cluster: SlurmCluster, out: Path) -> tuple[list[str], list[int]]:
    """The batch's jobs still queued and processes naming ``out``, once they had LEFT_WAIT_S to go."""
    deadline = time.monotonic() + LEFT_WAIT_S
    while jobs_of(cluster, out) and time.monotonic() < deadline:
        time.sleep(0.5)
    procs = [p.pid for p in psutil.process_iter(["cmdline"]) if str(out) in " ".join(p.info["cmdline"] or [])]
    return jobs_of(cluster, out), procs


def finish(fault: str, cluster: SlurmCluster, batch: subprocess.Popen, out: Path, since: float | None) -> Outcome:
    _, err = batch.communicate(timeout=240)
    noticed = None if since is None else round(time.monotonic() - since, 1)
    found = records(out)
    if len(found) != 1:
        raise AssertionError(f"{fault}: {len(found)} records in {out}; the batch said: {err[-2000:]}")
    jobs, procs = leftovers(cluster, out)
    return Outcome(fault, batch.returncode, found[0], noticed, jobs, procs)


def clean_run(cluster: SlurmCluster, out: Path) -> Outcome:
    """No fault: the reference, a two-node run that ends by itself (not_reached: the target is 100 %)."""
    started = time.monotonic()
    batch = start(["run", "mnist", *HOLD, "--set", "seconds=1", *TWO], out, cluster.env)
    outcome = finish("none: a clean two-node run", cluster, batch, out, None)
    outcome.details["batch_wall_s"] = round(time.monotonic() - started, 1)
    return outcome


def worker_killed(cluster: SlurmCluster, out: Path) -> Outcome:
    """The second node's worker dies (SIGKILL) a second into the timed run."""
    batch = start(["run", "mnist", *HOLD, *LONG, *TWO], out, cluster.env)
    victim = worker_on(cluster, "n2", out)
    training(out)
    victim.send_signal(signal.SIGKILL)
    return finish("a worker on the second node killed (SIGKILL)", cluster, batch, out, time.monotonic())


def port_taken(cluster: SlurmCluster, out: Path) -> Outcome:
    """The first node's rendezvous port is held by another process before the job starts."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port, submitted = taken.getsockname()[1], time.monotonic()   # the fault is there from the start
        batch = start(["run", "mnist", *HOLD, "--set", "seconds=1", *TWO, "--rdzv-port", str(port)], out, cluster.env)
        outcome = finish(f"the first node's rendezvous port ({port}) already taken", cluster, batch, out, submitted)
    outcome.details["port"] = port
    return outcome


def requeued(cluster: SlurmCluster, out: Path) -> Outcome:
    """The scheduler requeues the running job (``scontrol requeue``, as preemption does); then ``--resume``."""
    batch = start(["run", "mnist", *HOLD, *LONG, *TWO], out, cluster.env)
    worker_on(cluster, "n2", out)
    training(out)
    [job] = jobs_of(cluster, out)
    subprocess.run(["scontrol", "requeue", job], check=True, env=cluster.env, capture_output=True)
    outcome = finish("the job requeued by the scheduler (scontrol requeue)", cluster, batch, out, time.monotonic())
    resume = subprocess.run([sys.executable, "-m", "dawnbench", "run", "mnist", *HOLD, "--set", "seconds=1", *TWO,
                             "--resume", "--out", str(out), "--json"], capture_output=True, text=True, env=cluster.env)
    [outcome.resumed] = records(out) or [None]
    outcome.details["superseded"] = sorted(p.name for p in (out / ".superseded").iterdir())
    if resume.returncode not in (0, 1):
        raise AssertionError(f"--resume failed: {resume.stderr[-2000:]}")
    return outcome


def node_lost(cluster: SlurmCluster, out: Path) -> Outcome:
    """The machine n2 dies a second into the timed run: its slurmd, the job step and the worker at once.
    The node is started again afterwards, so the cluster is whole for what comes next."""
    batch = start(["run", "mnist", *HOLD, *LONG, *TWO], out, cluster.env)
    worker_on(cluster, "n2", out)
    training(out)
    cluster.kill_node("n2")
    try:
        return finish("the second node lost (its slurmd and every process on it killed)", cluster, batch, out,
                       time.monotonic())
    finally:
        cluster.restart_node("n2")


SCENARIOS = (worker_killed, port_taken, requeued, node_lost)   # node_lost last: it restarts a node
SIDE_BY_SIDE = SCENARIOS[:3]     # independent of each other: the tests run them at once (a CPU of each node each)
