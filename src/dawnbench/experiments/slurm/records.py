"""A run's records settled with what only the scheduler knows: its job, state, reason and nodes, and the
status its ending gives (see the package docstring: endings)."""

from __future__ import annotations

from pathlib import Path

from dawnbench.errors import DawnbenchError
from dawnbench.experiments.slurm.scheduler import FAILED, REQUEUED, TIMED_OUT, hostnames
from dawnbench.io import atomic_write_json, output_dir, read_foreign_end, read_foreign_text
from dawnbench.records import mllog
from dawnbench.records.record import FINISHED, RUNNING, RunResult, Status, read_result


def records_in(folder: Path) -> list[Path]:
    return sorted(d for d in folder.iterdir() if (d / "result.json").is_file()) if folder.is_dir() else []


def finished(out: Path) -> bool:
    """Whether a run of ``out`` got to its end (not run again on ``--resume``)."""
    return any(read_result(d)["status"] in FINISHED for d in records_in(out))


def settle(out: Path, task: str, seed: int, job_id: str, state: dict[str, str], cancelled: bool,
           job_log: Path | None = None) -> list[RunResult]:
    """The records of the run of ``task`` (``seed``) written into ``out`` with what only the scheduler knows
    (see the package docstring); a record of its own where the job ended before the run wrote one — a
    record every reader accepts, so the batch's other runs are still summarised, whose error quotes the
    end of the job's log (``job_log``: what the job printed to stderr), where it has one."""
    facts = {"name": "slurm", "job_id": job_id, "state": state["state"], "reason": state["reason"],
             "nodes": state["nodes"], "node_names": hostnames(state["nodes"]), "restarts": state.get("restarts", 0)}
    dirs = records_in(out)
    if not dirs:  # the job ended before the run wrote its first line
        target = out / f"slurm-{job_id}"
        output_dir(target)
        result = RunResult(task=task, entry="?", seed=seed, status=RUNNING,
                           official=False, metric="", threshold=0.0, run_dir=str(target),
                           error=_log_end(job_log))
        dirs = [target]
        atomic_write_json(target / "result.json", result.to_dict())
    settled = []
    for d in dirs:
        result = RunResult.from_dict(read_result(d))
        before = result.status
        result.scheduler = {**(result.scheduler or {}), **facts}
        why = f"Slurm job {job_id} ended {state['state']} (reason: {state['reason']})"
        if cancelled and result.status not in FINISHED:
            result.status, result.error = Status.INTERRUPTED, "the batch was interrupted: its jobs were cancelled"
        elif state["state"] == REQUEUED and result.status not in FINISHED:
            why = f"Slurm job {job_id}: {state['reason']}"
            result.status = Status.ABORTED if result.status == Status.ABORTED else Status.INTERRUPTED
            result.error = why if not result.error else f"{why}; the run had recorded: {result.error}"
        elif state["state"] in TIMED_OUT and result.status not in FINISHED:
            result.status, result.error = Status.TIMEOUT, f"{why}: the run passed --time-limit"
        elif state["state"] in FAILED and result.status not in FINISHED:
            result.status = Status.ABORTED
            result.error = why if not result.error else f"{why}; the run had recorded: {result.error}"
        elif result.status == RUNNING:
            result.status, result.error = Status.ABORTED, f"{why}, but the run left no final status"
        atomic_write_json(d / "result.json", result.to_dict(), update=True)   # the batch's own run: its end said
        events = d / "events.log"
        try:       # the run's own log, read as anything handed over: never appended to through a link
            stopped = f'"key": "{mllog.RUN_STOP}"' in read_foreign_text(events, "event log")
        except DawnbenchError:
            stopped = True         # no log, or no file of the run's: nothing to end
        if not stopped:
            log = mllog.EventLog(events)
            log.end(mllog.RUN_STOP, metadata={"status": result.status, "timed_s": result.timed_s, "reason": why})
            log.close()
        elif result.status != before and events.is_file() and not events.is_symlink():
            # the run logged its own run_stop: one per log, so what the scheduler knew better is a fact of its own,
            # as the launcher's (experiments/launch.py) — the record and its log say the same end
            log = mllog.EventLog(events)
            log.event(mllog.STATUS_CORRECTED, str(result.status), {"reason": why})
            log.close()
        settled.append(result)
    return settled


def _log_end(job_log: Path | None, lines: int = 5, most: int = 600) -> str | None:
    """The last lines of a job's log (at most ``most`` characters of them), said as what the job printed
    before it ended (None: no log)."""
    if job_log is None:
        return None
    try:
        text = read_foreign_end(job_log, "job log", 16 * most)
    except DawnbenchError:   # a link, a FIFO, none at all: nothing to quote
        return None
    tail = " | ".join([line.strip() for line in text.splitlines() if line.strip()][-lines:])[-most:]
    return f"the job ended before the run wrote its record; its log ({job_log}) ends: {tail}" if tail else None
