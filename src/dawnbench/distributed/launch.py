"""Starting workers with PyTorch's own launcher: ``torch.distributed.run``, what the
``torchrun`` command runs, called in this process — never a launcher of our own.

    outcome = torchrun(["run", "mnist"], LaunchOptions(nproc=2))   # dawnbench run mnist, on 2 workers

Each worker runs ``python -m dawnbench <argv>`` and finds itself under torchrun
(:meth:`~dawnbench.distributed.world.World.launched`). One machine uses torchrun's
``--standalone`` rendezvous; several the ``static`` rendezvous at ``--rdzv-endpoint`` with
``--node-rank``. torchrun runs with no restarts: when a worker dies it stops the others
(SIGTERM, then SIGKILL after ``SHUTDOWN_TIMEOUT_S``) and reports the failure; when this
process receives SIGINT or SIGTERM, torchrun forwards it to every worker and waits for them,
so no process is left behind. What the workers did is the caller's to read (run records,
kernel rows); :class:`Outcome` says how the launch ended.
"""

from __future__ import annotations

import math
import os
import signal
from dataclasses import dataclass, field

import psutil

from dawnbench import bounds, waits
from dawnbench.errors import DawnbenchError, printable

# Seconds a worker has to write its record after SIGTERM before torchrun sends SIGKILL
# (a stopped or hung worker only yields to SIGKILL); scaled by waits.py's setting.
SHUTDOWN_TIMEOUT_S = 15
# The signals torchrun forwards to the workers (its --signals-to-handle default).
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
# How long the machines of a multi-node launch wait for each other at the rendezvous (torchrun's static
# rendezvous waits 600 s by default: a node whose peer never comes would sit out ten minutes).
RDZV_TIMEOUT_S = 120


@dataclass
class LaunchOptions:
    nproc: int                          # workers on this machine
    nnodes: int = 1                     # machines
    node_rank: int = 0                  # this machine's index, 0 .. nnodes-1
    rdzv_endpoint: str | None = None    # HOST:PORT of node 0, needed for nnodes > 1
    threads: int | None = None          # per worker on a CPU; None: the cores shared out equally

    def check(self) -> None:
        """The ranges (bounds.py), then what one value says of another: the workers here share this
        machine's cores (one each at most), a node's rank is below the node count, and several nodes
        meet at HOST:PORT."""
        bounds.check_fields(self, {"nproc": "--nproc", "threads": "--threads-per-worker", "nnodes": "--nnodes",
                                   "node_rank": "--node-rank"})
        if self.nproc > bounds.CORES:
            raise DawnbenchError(f"--nproc {self.nproc}: this machine has {bounds.CORES} cores, one worker each at "
                                 "most (several machines: --nnodes; a cluster: --executor slurm).")
        if not 0 <= self.node_rank < self.nnodes:
            raise DawnbenchError(f"--node-rank {self.node_rank}: with --nnodes {self.nnodes} it must be "
                                 f"between 0 and {self.nnodes - 1}.")
        if self.nnodes > 1 or self.rdzv_endpoint is not None:
            from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint

            host, sep, port = (self.rdzv_endpoint or "").rpartition(":")
            ipv6_bare = ":" in host and not (host.startswith("[") and host.endswith("]"))
            try:   # torch's own reading too: what it refuses would end the launch with a traceback
                ok = (host and sep and port.isascii() and port.isdigit() and 1 <= int(port) <= 65535
                      and not ipv6_bare and parse_rendezvous_endpoint(self.rdzv_endpoint, default_port=29400))
            except ValueError:
                ok = False
            if not ok:
                raise DawnbenchError(f"--rdzv-endpoint {printable(repr(self.rdzv_endpoint))}: node 0's address as "
                                     "HOST:PORT, the same on every machine, a host name or address (an IPv6 one in "
                                     "brackets) and a port from 1 to 65535, e.g. --rdzv-endpoint 10.0.0.1:29400 or "
                                     "[fd00::1]:29400.")

    def torchrun_args(self) -> list[str]:
        args = ["--nproc-per-node", str(self.nproc), "--nnodes", str(self.nnodes), "--max-restarts", "0",
                "--monitor-interval", "0.2"]
        if torchrun_takes("--shutdown-timeout"):  # torch 2.11's torchrun has none: its own grace (30 s) applies
            args += ["--shutdown-timeout", str(math.ceil(waits.scaled(SHUTDOWN_TIMEOUT_S)))]
        if self.nnodes == 1:
            # the workers meet on this machine: at its loopback address, not at its host name, which need not
            # resolve (a container, a Slurm node known by another name): torchrun would wait 300 s for it
            return [*args, "--standalone", "--local-addr", "127.0.0.1"]
        return [*args, "--rdzv-backend", "static", "--rdzv-endpoint", str(self.rdzv_endpoint),
                "--node-rank", str(self.node_rank), "--rdzv-conf", f"timeout={RDZV_TIMEOUT_S}"]


def torchrun_takes(option: str) -> bool:
    """Whether this torch's torchrun knows ``option`` exactly (its options grow from one release to the next).
    Its parser's actions are read, not run: parsing would match prefixes, check values and read PET_* variables."""
    from torch.distributed.run import get_args_parser

    return any(option in action.option_strings for action in get_args_parser()._actions)


@dataclass
class Outcome:
    """How a launch ended: the signal this launcher received, and the workers that failed."""

    signal: str | None = None
    failures: list[str] = field(default_factory=list)  # workers that failed, in words
    faults: list[str] = field(default_factory=list)    # the same, less rank 0 exiting 1 on purpose


def torchrun(argv: list[str], options: LaunchOptions, env: dict[str, str] | None = None) -> Outcome:
    """Run ``dawnbench <argv>`` on ``options.nproc`` workers under torchrun, with ``env`` added to
    their environment; wait for every worker."""
    from torch.distributed import DistError
    from torch.distributed.elastic.multiprocessing import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous import RendezvousError
    from torch.distributed.run import get_args_parser
    from torch.distributed.run import run as run_torchrun

    options.check()
    outcome = Outcome()
    extra = dict(env or {})
    # Each worker's threads, set here so torchrun does not impose 1: as asked, else what the
    # environment says, else an equal share of the cores.
    if options.threads or "OMP_NUM_THREADS" not in os.environ:
        extra["OMP_NUM_THREADS"] = str(options.threads or max(1, (psutil.cpu_count() or 1) // options.nproc))
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    # torchrun installs handlers that forward these signals to its workers and leaves them
    # installed: put ours back afterwards, so Ctrl-C between launches is a KeyboardInterrupt.
    handlers = {s: signal.getsignal(s) for s in FORWARDED_SIGNALS}
    try:
        args = get_args_parser().parse_args([*options.torchrun_args(), "-m", "dawnbench"])
        args.training_script_args = list(argv)  # set, not parsed: torchrun's parser would read our flags
        run_torchrun(args)
    except ChildFailedError as err:
        failed = sorted(err.failures.items())
        outcome.failures = [_describe(rank, failure) for rank, failure in failed]
        # Rank 0 exits 1 on purpose after recording `aborted` (so torchrun stops the others):
        # not a fault of its own to report.
        outcome.faults = [_describe(rank, failure) for rank, failure in failed
                          if not (rank == 0 and failure.exitcode == 1)]
    except SignalException as err:
        outcome.signal = signal.Signals(err.sigval).name
    except (RendezvousError, DistError) as err:   # the machines never met: no worker started
        said = (str(err).strip().splitlines() or [type(err).__name__])[0]
        said = said.split("message: ", 1)[-1] if "EADDRINUSE" in said else said
        outcome.failures = outcome.faults = [
            f"the rendezvous at {options.rdzv_endpoint or 'this machine (standalone)'} failed on node "
            f"{options.node_rank}: {said}"
            + (" (another process holds that port: choose another, --rdzv-port with --executor slurm)"
               if "address already in use" in said.lower() else "")]
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
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
