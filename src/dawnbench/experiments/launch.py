"""Launching a run on many workers: the command re-runs itself under torchrun (SPEC §13).

    dawnbench run mnist --nproc 2                       # one machine, two workers
    dawnbench run mnist --nproc 8 --nnodes 2 --node-rank 0 --rdzv-endpoint host0:29400
    dawnbench run mnist --nproc 8 --nnodes 2 --node-rank 1 --rdzv-endpoint host0:29400

:func:`launch` calls PyTorch's own ``torch.distributed.run`` (what the ``torchrun``
command runs) in this process with ``-m dawnbench <the same arguments>``, so each
worker is an ordinary ``dawnbench run`` that finds itself under torchrun
(:meth:`World.launched`) and trains instead of launching again. One machine uses
torchrun's ``--standalone`` rendezvous; several use the ``static`` rendezvous at
``--rdzv-endpoint`` with ``--node-rank`` (rank 0 lives on node 0 and writes the
record there). Launching and the rendezvous happen before ``run_start``: untimed, and
recorded as ``distributed.launch_s`` (from this launcher's start until the workers have
joined the process group; time.time on one machine, so on several only as good as
their clocks agree).

Faults. torchrun runs with no restarts: when a worker dies, it stops the others
(SIGTERM, then SIGKILL after ``SHUTDOWN_TIMEOUT_S``) and reports the failure here; a worker that hangs
makes its peers' next collective fail after ``--collective-timeout`` seconds. When
this process receives SIGINT or SIGTERM, torchrun forwards it to every worker. Rank 0
writes what it measured either way; afterwards :func:`launch` corrects the record's
status from what only the launcher knows — ``aborted`` with the failed worker's exit
code or signal when a worker failed, ``interrupted`` when the launcher was signalled —
and appends the matching ``run_stop`` to ``events.log``. torchrun waits for every
worker before it returns, so no process is left behind.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from dawnbench import bounds
from dawnbench.distributed.world import LAUNCHED_AT_ENV, RUN_DIRS_ENV
from dawnbench.errors import DawnbenchError
from dawnbench.harness import mllog
from dawnbench.harness.record import RUNNING, RunResult, read_result
from dawnbench.io import atomic_write_json

# Seconds a worker has to write its record after SIGTERM before torchrun sends SIGKILL
# (a stopped or hung worker only yields to SIGKILL).
SHUTDOWN_TIMEOUT_S = 15
# The signals torchrun forwards to the workers (its --signals-to-handle default).
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
@dataclass
class LaunchOptions:
    nproc: int                          # workers on this machine
    nnodes: int = 1                     # machines
    node_rank: int = 0                  # this machine's index, 0 .. nnodes-1
    rdzv_endpoint: str | None = None    # HOST:PORT of node 0, needed for nnodes > 1
    threads: int | None = None          # per worker on a CPU; None: the cores shared out equally

    def check(self) -> None:
        bounds.WORKERS["nproc"].check("--nproc", self.nproc)
        bounds.WORKERS["threads"].check("--threads-per-worker", self.threads)
        bounds.WORKERS["nnodes"].check("--nnodes", self.nnodes)
        if not 0 <= self.node_rank < self.nnodes:
            raise DawnbenchError(f"--node-rank {self.node_rank}: with --nnodes {self.nnodes} it must be "
                                 f"between 0 and {self.nnodes - 1}.")
        if self.nnodes > 1:
            host, sep, port = (self.rdzv_endpoint or "").rpartition(":")
            if not (host and sep and port.isdigit()):
                raise DawnbenchError(f"--rdzv-endpoint {self.rdzv_endpoint!r}: several machines need node 0's "
                                     "address as HOST:PORT (the same on every machine), e.g. "
                                     "--rdzv-endpoint 10.0.0.1:29400.")

    def torchrun_args(self) -> list[str]:
        args = ["--nproc-per-node", str(self.nproc), "--nnodes", str(self.nnodes), "--max-restarts", "0",
                "--monitor-interval", "0.2", "--shutdown-timeout", str(SHUTDOWN_TIMEOUT_S)]
        if self.nnodes == 1:
            return [*args, "--standalone"]
        return [*args, "--rdzv-backend", "static", "--rdzv-endpoint", str(self.rdzv_endpoint),
                "--node-rank", str(self.node_rank)]


@dataclass
class Launched:
    """What a launch left: rank 0's records on this machine, and what went wrong."""

    results: list[RunResult] = field(default_factory=list)
    signal: str | None = None           # the signal this launcher received
    failures: list[str] = field(default_factory=list)  # workers that failed, in words
    faults: list[str] = field(default_factory=list)    # the same, less rank 0 exiting 1 after it aborted


def launch(argv: list[str], options: LaunchOptions) -> Launched:
    """Run ``dawnbench <argv>`` on ``options.nproc`` workers under torchrun; return rank 0's results."""
    from torch.distributed.elastic.multiprocessing import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser
    from torch.distributed.run import run as torchrun

    options.check()
    outcome = Launched()
    fd, run_dirs = tempfile.mkstemp(prefix="dawnbench-launch-", suffix=".txt")
    os.close(fd)
    saved = {k: os.environ.get(k) for k in (RUN_DIRS_ENV, "OMP_NUM_THREADS", LAUNCHED_AT_ENV)}
    os.environ[RUN_DIRS_ENV] = run_dirs
    os.environ[LAUNCHED_AT_ENV] = repr(time.time())  # workers record how long starting them took
    # Each worker's threads, set here so torchrun does not impose 1: as asked, else what the
    # environment says, else an equal share of the cores.
    if options.threads or "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = str(options.threads or max(1, (psutil.cpu_count() or 1) // options.nproc))
    # torchrun installs handlers that forward these signals to its workers and leaves them
    # installed: put ours back afterwards, so Ctrl-C between launches is a KeyboardInterrupt.
    handlers = {s: signal.getsignal(s) for s in FORWARDED_SIGNALS}
    try:
        args = get_args_parser().parse_args([*options.torchrun_args(), "-m", "dawnbench"])
        args.training_script_args = list(argv)  # set, not parsed: torchrun's parser would read our flags
        torchrun(args)
    except ChildFailedError as err:
        failed = sorted(err.failures.items())
        outcome.failures = [_describe(rank, failure) for rank, failure in failed]
        # Rank 0 exits 1 on purpose after recording `aborted` (so torchrun stops the others):
        # not a fault of its own to report.
        outcome.faults = [_describe(rank, failure) for rank, failure in failed
                          if not (rank == 0 and failure.exitcode == 1)]
    except SignalException as err:
        outcome.signal = signal.Signals(err.sigval).name
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        dirs = [Path(line) for line in Path(run_dirs).read_text().splitlines() if line]
        os.unlink(run_dirs)
    outcome.results = [_settle(d, outcome) for d in dirs]
    return outcome


def _describe(rank: int, failure: object) -> str:
    exitcode = getattr(failure, "exitcode", None)
    how = (f"was killed by {failure.signal_name()}" if exitcode is not None and exitcode < 0
           else f"exited with code {exitcode}")
    message = getattr(failure, "message", "") or ""
    if isinstance(message, dict):  # from the worker's error file: the exception's own words
        message = message.get("message", "")
    message = str(message)
    detail = "" if not message or "enable traceback" in message else f" ({message.strip()})"
    return f"worker {rank} {how}{detail}"


def _settle(run_dir: Path, outcome: Launched) -> RunResult:
    """Rank 0's record, with the status only the launcher can know."""
    result = RunResult.from_dict(read_result(run_dir))
    # Rank 0's own abort (a collective timed out) is the cause; torchrun's killing then follows.
    cause_first = result.status == "aborted" and bool(result.error)
    if outcome.signal and result.status in (RUNNING, "aborted"):
        result.status, why = "interrupted", f"the launcher received {outcome.signal}"
    elif outcome.faults and result.status in (RUNNING, "interrupted", "aborted"):
        result.status, why = "aborted", "; ".join(outcome.faults)
    elif outcome.failures and result.status == RUNNING:  # rank 0 died before it could write its end
        result.status, why = "aborted", "; ".join(outcome.failures)
    else:
        return result
    if cause_first and result.status == "aborted":
        result.error = f"{result.error}; then, says the launcher: {why}"
    else:
        result.error = f"{why}; rank 0 had recorded: {result.error}" if result.error else why
    atomic_write_json(run_dir / "result.json", result.to_dict())
    events = run_dir / "events.log"
    stopped = f'"key": "{mllog.RUN_STOP}"' in events.read_text(encoding="utf-8")
    log = mllog.EventLog(events)
    if stopped:  # rank 0 logged its own run_stop: one run_stop per log, so the correction is a fact of its own
        log.event(mllog.STATUS_CORRECTED, result.status, {"reason": why})
    else:
        log.end(mllog.RUN_STOP, metadata={"status": result.status, "timed_s": result.timed_s, "reason": why})
    log.close()
    return result
