"""A real single-node Slurm cluster for the tests (SPEC §21): Debian's ``slurm-wlm`` and ``munge``,
started as root with every file — key, socket, state, spool, logs — in a folder of its own, on
ports nobody else uses, and stopped by the pids it started.

    with SingleNodeCluster(tmp) as cluster:          # SLURM_CONF points at it while it lives
        subprocess.run(["sbatch", "--wrap", "hostname"], env=cluster.env)

The node offers this machine's CPUs (or as many as asked: ``SlurmdParameters=config_overrides``)
and no memory limit; there is no accounting (``sacct`` says
so), as on many small clusters. ``DAWNBENCH_REQUIRE_SLURM=1`` (CI sets it) makes a cluster that
does not come up a failure instead of a skip.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


class ClusterUnavailable(RuntimeError):
    pass


class SingleNodeCluster:
    def __init__(self, root: Path, cpus: int | None = None) -> None:
        self.root = root
        self.cpus = cpus or os.cpu_count() or 1   # more than the machine has: slurmd is told to believe it
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def why_not(self) -> str | None:
        """Why this machine cannot start one (None: it can)."""
        missing = [d for d in (*DAEMONS, "sbatch", "scontrol", "scancel", "squeue") if shutil.which(d) is None]
        if missing:
            return f"no {', '.join(missing)} on PATH (apt-get install slurm-wlm munge)"
        if os.geteuid() != 0:
            return "starting slurmctld and slurmd needs root"
        return None

    def __enter__(self) -> SingleNodeCluster:
        if (reason := self.why_not()) is not None:
            raise ClusterUnavailable(reason)
        root, host = self.root, socket.gethostname().split(".")[0]
        for d in ("state", "spool"):
            (root / d).mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)                                   # munged wants its socket's folder reachable
        key = root / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o600)
        self.conf.write_text("\n".join([
            "ClusterName=dawnbench-test", f"SlurmctldHost={host}", "SlurmUser=root", "SlurmdUser=root",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge", f"AuthInfo=socket={root / 'munge.sock'}", "CredType=cred/munge",
            f"StateSaveLocation={root / 'state'}", f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}", f"SlurmdPidFile={root / 'slurmd.pid'}",
            f"SlurmctldLogFile={root / 'slurmctld.log'}", f"SlurmdLogFile={root / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU", "SchedulerType=sched/backfill",
            "ReturnToService=2", "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
            "JobAcctGatherType=jobacct_gather/none", "KillWait=5", "MinJobAge=600",
            *(["SlurmdParameters=config_overrides"] if self.cpus > (os.cpu_count() or 1) else []),
            f"NodeName={host} CPUs={self.cpus} State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))
        self._start(["munged", "-f", f"--socket={root / 'munge.sock'}", f"--key-file={key}",
                     f"--pid-file={root / 'munged.pid'}", f"--log-file={root / 'munged.log'}",
                     f"--seed-file={root / 'munged.seed'}"])
        self._start(["slurmctld", "-i"])
        self._start(["slurmd"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env=self.env)
            if state.stdout.strip() == "idle":
                return self
            time.sleep(0.5)
        self.__exit__()
        raise ClusterUnavailable(f"the node did not come up idle in 30 s; see the logs in {root}")

    def _start(self, argv: list[str]) -> None:
        proc = subprocess.run(argv, capture_output=True, text=True, env=self.env)
        if proc.returncode != 0:
            self.__exit__()
            raise ClusterUnavailable(f"{argv[0]} did not start: {proc.stderr.strip() or proc.stdout.strip()}")

    def queue(self) -> list[str]:
        """Job ids the cluster still has pending or running."""
        proc = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=self.env, check=True)
        return proc.stdout.split()

    def __exit__(self, *exc: object) -> None:
        for name in reversed(DAEMONS):
            pid_file = self.root / f"{name}.pid"
            if not pid_file.is_file():
                continue
            pid = int(pid_file.read_text().split()[0])
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):                 # the next daemon's shutdown may need this one alive
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
