"""Launching a run on many workers: the command re-runs itself under torchrun.

    dawnbench run mnist --nproc 2                       # one machine, two workers
    dawnbench run mnist --nproc 8 --nnodes 2 --node-rank 0 --rdzv-endpoint host0:29400
    dawnbench run mnist --nproc 8 --nnodes 2 --node-rank 1 --rdzv-endpoint host0:29400

:func:`launch` starts the workers with :func:`dawnbench.distributed.launch.torchrun`
(PyTorch's own ``torch.distributed.run``) and ``-m dawnbench <the same arguments>``, so
each worker is an ordinary ``dawnbench run`` that finds itself under torchrun
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

import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dawnbench.distributed.launch import LaunchOptions, torchrun
from dawnbench.distributed.world import LAUNCHED_AT_ENV, RUN_DIRS_ENV
from dawnbench.io import atomic_write_json
from dawnbench.records import mllog
from dawnbench.records.record import RUNNING, RunResult, Status, read_result

if TYPE_CHECKING:
    from dawnbench.harness.options import RunOptions


@dataclass
class Launched:
    """What a launch left: rank 0's records on this machine, and what went wrong."""

    results: list[RunResult] = field(default_factory=list)
    signal: str | None = None           # the signal this launcher received
    failures: list[str] = field(default_factory=list)  # workers that failed, in words
    faults: list[str] = field(default_factory=list)    # the same, less rank 0 exiting 1 after it aborted


def launch(argv: list[str], options: LaunchOptions) -> Launched:
    """Run ``dawnbench <argv>`` on ``options.nproc`` workers under torchrun; return rank 0's results."""
    fd, run_dirs = tempfile.mkstemp(prefix="dawnbench-launch-", suffix=".txt")
    os.close(fd)
    try:
        done = torchrun(argv, options, {RUN_DIRS_ENV: run_dirs, LAUNCHED_AT_ENV: repr(time.time())})
        dirs = [Path(json.loads(line)) for line in Path(run_dirs).read_text(encoding="utf-8").splitlines() if line]
    finally:
        os.unlink(run_dirs)
    outcome = Launched(signal=done.signal, failures=done.failures, faults=done.faults)
    outcome.results = [_settle(d, outcome) for d in dirs]
    return outcome


def launch_run(options: RunOptions, argv: list[str], workers: LaunchOptions, world_size: int,
               ensure_data: Callable[[str], None] = lambda name: None) -> Launched:
    """``run --nproc N``: everything the workers would refuse refused here (a ``--scaling strong`` batch that
    ``world_size`` workers cannot share), the task's data prepared (``ensure_data``), then ``dawnbench <argv>`` under
    torchrun. Where no worker started (the machines never met), node 0's results are one record saying so."""
    from dawnbench.distributed.world import World, per_worker_overrides
    from dawnbench.harness.options import prepare
    from dawnbench.harness.runner import record_unstarted

    prep = prepare(options)
    per_worker_overrides(options, prep.entry_cls, prep.task, World(world_size=world_size, backend="gloo"))
    ensure_data(prep.task.dataset)
    launched = launch(argv, workers)
    if not launched.results and launched.failures and not launched.signal and workers.node_rank == 0:
        launched.results = [record_unstarted(options, prep, "; ".join(launched.failures))]
    return launched


def _settle(run_dir: Path, outcome: Launched) -> RunResult:
    """Rank 0's record, with the status only the launcher can know."""
    result = RunResult.from_dict(read_result(run_dir))
    # Rank 0's own abort (a collective timed out) is the cause; torchrun's killing then follows.
    cause_first = result.status == Status.ABORTED and bool(result.error)
    if outcome.signal and result.status in (RUNNING, Status.ABORTED):
        result.status, why = Status.INTERRUPTED, f"the launcher received {outcome.signal}"
    elif outcome.faults and result.status in (RUNNING, Status.INTERRUPTED, Status.ABORTED):
        result.status, why = Status.ABORTED, "; ".join(outcome.faults)
    elif outcome.failures and result.status == RUNNING:  # rank 0 died before it could write its end
        result.status, why = Status.ABORTED, "; ".join(outcome.failures)
    else:
        return result
    if cause_first and result.status == Status.ABORTED:
        result.error = f"{result.error}; then, says the launcher: {why}"
    else:
        result.error = f"{why}; rank 0 had recorded: {result.error}" if result.error else why
    atomic_write_json(run_dir / "result.json", result.to_dict(), update=True)   # rank 0's record, its end said
    events = run_dir / "events.log"
    stopped = f'"key": "{mllog.RUN_STOP}"' in events.read_text(encoding="utf-8")
    log = mllog.EventLog(events)
    if stopped:  # rank 0 logged its own run_stop: one run_stop per log, so the correction is a fact of its own
        log.event(mllog.STATUS_CORRECTED, result.status, {"reason": why})
    else:
        log.end(mllog.RUN_STOP, metadata={"status": result.status, "timed_s": result.timed_s, "reason": why})
    log.close()
    return result
