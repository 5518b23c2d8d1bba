"""What runs inside a Slurm job (one per run): ``dawnbench run`` with torchrun for this node's workers and,
over several nodes, the rendezvous at the job's first node."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

RDZV_PORT, RDZV_PORTS = 29400, 10_000   # a job's rendezvous port: RDZV_PORT + its id modulo RDZV_PORTS
# A multi-node job's nodes end their runs together; once one node's task has ended, the others get this
# long before srun ends them (a node left waiting at a rendezvous or a collective for a peer that is gone).
# Not shortened by waits.py's setting: it is also what lets the scheduler see a lost node (its
# SlurmdTimeout) before the job ends, and a job ended sooner would be COMPLETED with its node gone.
NODES_WAIT_S = 30


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
