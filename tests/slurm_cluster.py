"""A real Slurm cluster for the tests (SPEC §21, §22): Debian's ``slurm-wlm`` and ``munge``, started as
root with every file — key, socket, state, spool, logs — in a folder of its own, on ports nobody else
uses, and stopped by the pids it started.

    with SlurmCluster(tmp) as cluster:                # one node: this host, under its own name
        subprocess.run(["sbatch", "--wrap", "hostname"], env=cluster.env)
    with SlurmCluster(tmp, nodes=2) as cluster:       # two nodes on this host: n1 and n2
        cluster.kill_node("n2")                       # the machine n2 dies: every process of it
        cluster.restart_node("n2")

**Several nodes on one host.** Each ``slurmd`` runs in a UTS namespace of its own (``unshare --uts``)
whose hostname is its node name, so it registers as that node; the nodes are declared with
``NodeAddr=127.0.0.1`` and a ``Port`` each, and their spool, pid and log files carry ``%n``. Nothing of
the host changes: no ``/etc/hosts`` line is added, because the only place a node's name must resolve
— a multi-node run's rendezvous — takes the first node's ``NodeAddr`` from Slurm
(``dawnbench.experiments.slurm.job.rendezvous``), as it must on any cluster whose nodes are not known by
name. A node's processes (its ``slurmd``, the job steps it started, their workers) are those in its
namespace, which is how :meth:`kill_node` finds them all. ``SlurmdTimeout`` is 10 s, so a node that
dies is noticed within about 20 s rather than Slurm's default five minutes.

The node(s) offer this machine's CPUs (or as many as asked: ``SlurmdParameters=config_overrides``)
and no memory limit; there is no accounting (``sacct`` says so), as on many small clusters.
``DAWNBENCH_REQUIRE_SLURM=1`` (CI sets it as root) makes a cluster that does not come up a failure
instead of a skip.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil

DAEMONS = ("munged", "slurmctld", "slurmd")
STARTUP_NOISE = ("state file", "NOTE: Trying backup", "MailProg", "pmix", "MPI:")  # every fresh cluster logs these


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


class ClusterUnavailable(RuntimeError):
    pass


class SlurmCluster:
    def __init__(self, root: Path, cpus: int | None = None, nodes: int = 1) -> None:
        self.root = root
        self.cpus = cpus or os.cpu_count() or 1   # more than the machine has: slurmd is told to believe it
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.nodes = [socket.gethostname().split(".")[0]] if nodes == 1 else [f"n{i + 1}" for i in range(nodes)]

    def why_not(self) -> str | None:
        """Why this machine cannot start one (None: it can)."""
        tools = (*DAEMONS, "sbatch", "scontrol", "scancel", "squeue", *(["unshare"] if len(self.nodes) > 1 else []))
        missing = [d for d in tools if shutil.which(d) is None]
        if missing:
            return f"no {', '.join(missing)} on PATH (apt-get install slurm-wlm munge)"
        if os.geteuid() != 0:
            return "starting slurmctld and slurmd needs root"
        return None

    def __enter__(self) -> SlurmCluster:
        if (reason := self.why_not()) is not None:
            raise ClusterUnavailable(reason)
        root, host = self.root, socket.gethostname().split(".")[0]
        (root / "state").mkdir(parents=True, exist_ok=True)
        for node in self.nodes:
            (root / f"spool-{node}").mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)                                   # munged wants its socket's folder reachable
        key = root / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o600)
        several = len(self.nodes) > 1
        declared = [f"NodeName={node} CPUs={self.cpus} State=UNKNOWN"
                    + (f" NodeAddr=127.0.0.1 Port={_free_port()}" if several else "") for node in self.nodes]
        self.conf.write_text("\n".join([
            "ClusterName=dawnbench-test", f"SlurmctldHost={host}(127.0.0.1)", "SlurmUser=root", "SlurmdUser=root",
            f"SlurmctldPort={_free_port()}", *([] if several else [f"SlurmdPort={_free_port()}"]),
            "AuthType=auth/munge", f"AuthInfo=socket={root / 'munge.sock'}", "CredType=cred/munge",
            f"StateSaveLocation={root / 'state'}", f"SlurmdSpoolDir={root / 'spool-%n'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}", f"SlurmdPidFile={root / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={root / 'slurmctld.log'}", f"SlurmdLogFile={root / 'slurmd-%n.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU", "SchedulerType=sched/backfill",
            "ReturnToService=2", "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
            "JobAcctGatherType=jobacct_gather/none", "KillWait=5", "MinJobAge=600", "SlurmdTimeout=10",
            *(["SlurmdParameters=config_overrides"] if self.cpus > (os.cpu_count() or 1) else []),
            *declared, "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))
        self._start(["munged", "-f", f"--socket={root / 'munge.sock'}", f"--key-file={key}",
                     f"--pid-file={root / 'munged.pid'}", f"--log-file={root / 'munged.log'}",
                     f"--seed-file={root / 'munged.seed'}"])
        self._start(["slurmctld", "-i"])
        for node in self.nodes:
            self._start(self._slurmd(node))
        self.wait_idle(30)
        return self

    def _slurmd(self, node: str) -> list[str]:
        """The command that starts a node's slurmd (several nodes: in a UTS namespace named after it)."""
        if len(self.nodes) == 1:
            return ["slurmd"]
        return ["unshare", "--uts", "--", "sh", "-c", f"hostname {node} && exec slurmd"]

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], capture_output=True, text=True, env=self.env)
            if state.stdout.split() == ["idle"] * len(self.nodes):
                return
            time.sleep(0.5)
        self.__exit__()
        raise ClusterUnavailable(f"the nodes did not come up idle in {timeout:g} s; see the logs in {self.root}")

    def unwell(self) -> dict[str, str]:
        """Node → its state and Slurm's reason, for each node that is neither idle nor running jobs (a node
        drained or down stalls every job that needs it: one test's trouble would become every next test's)."""
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%N|%t|%E"], capture_output=True, text=True, env=self.env)
        rows = [line.split("|", 2) for line in proc.stdout.splitlines() if line.count("|") == 2]
        return {node: f"{state} ({reason})" for node, state, reason in rows
                if state.rstrip("*") not in ("idle", "alloc", "mix", "comp")}

    def diagnosis(self, lines: int = 12) -> str:
        """What the daemons logged last of errors, drains and downs: for a failure message."""
        said = []
        for log in sorted(self.root.glob("slurm*.log")):
            text = log.read_text(errors="replace").splitlines()
            picked = [line for line in text if any(w in line.lower() for w in ("error", "drain", "down", "fail"))
                      and not any(w in line for w in STARTUP_NOISE)]
            said.append(f"{log.name}: " + " / ".join(picked[-lines:]))
        return "\n".join(said)

    def heal(self, timeout: float = 60) -> None:
        """Every node back in service (jobs may run on): a dead slurmd started again, a drained or down node
        resumed."""
        for node in self.unwell():
            if len(self.nodes) > 1 and self._namespace(node) is None:
                self._start(self._slurmd(node))
            subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], capture_output=True,
                           env=self.env)
        deadline = time.monotonic() + timeout
        while (unwell := self.unwell()) and time.monotonic() < deadline:
            time.sleep(0.5)
        if unwell:
            raise ClusterUnavailable(f"nodes still out of service after {timeout:g} s: {unwell}")

    def _start(self, argv: list[str]) -> None:
        proc = subprocess.run(argv, capture_output=True, text=True, env=self.env)
        if proc.returncode != 0:
            self.__exit__()
            raise ClusterUnavailable(f"{argv[0]} did not start: {proc.stderr.strip() or proc.stdout.strip()}")

    def queue(self) -> list[str]:
        """Job ids the cluster still has pending or running."""
        proc = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=self.env, check=True)
        return proc.stdout.split()

    # --- a node's processes ------------------------------------------------------------------
    def _namespace(self, node: str) -> str | None:
        pid_file = self.root / f"slurmd-{node}.pid"
        with contextlib.suppress(OSError, ValueError):
            return os.readlink(f"/proc/{int(pid_file.read_text().split()[0])}/ns/uts")
        return None

    def processes(self, node: str) -> list[psutil.Process]:
        """Every process of a node (of a cluster of several): those in its slurmd's UTS namespace."""
        namespace, found = self._namespace(node), []
        for proc in psutil.process_iter():
            with contextlib.suppress(OSError, psutil.Error):
                if namespace and os.readlink(f"/proc/{proc.pid}/ns/uts") == namespace:
                    found.append(proc)
        return found

    def kill_node(self, node: str) -> None:
        """The machine ``node`` dies: SIGKILL to its slurmd, its job steps and their workers at once."""
        for proc in self.processes(node):
            with contextlib.suppress(psutil.Error):
                proc.kill()

    def restart_node(self, node: str, timeout: float = 60) -> None:
        """Its slurmd again, and the node back in service (a node marked down is resumed)."""
        self._start(self._slurmd(node))
        subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], capture_output=True, env=self.env)
        self.wait_idle(timeout)

    def __exit__(self, *exc: object) -> None:
        if len(self.nodes) > 1:
            for node in self.nodes:   # a node's job steps and workers go with it
                self.kill_node(node)
        for name in reversed(DAEMONS):
            for pid_file in sorted(self.root.glob(f"{name}*.pid")):
                self._stop(int(pid_file.read_text().split()[0]))

    @staticmethod
    def _stop(pid: int) -> None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        for _ in range(100):                 # the next daemon's shutdown may need this one alive
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def cluster_left_in_service(cluster: SlurmCluster) -> None:
    """After a test: no node drained or down — if one is, it is put back in service (so the next test does
    not inherit the trouble) and the test fails with Slurm's reason and what the daemons logged."""
    unwell = cluster.unwell()
    if unwell:
        said = cluster.diagnosis()
        cluster.heal()
        raise AssertionError(f"the test left nodes out of service: {unwell}\n{said}")
