"""What the scheduler says of a batch's jobs: their states from ``scontrol`` (and ``sacct`` for what it has
forgotten), node lists as names, and ``scancel`` of the batch's own jobs."""

from __future__ import annotations

import shutil
import subprocess
import time
from typing import Any

from dawnbench.errors import DawnbenchError

TIMED_OUT = {"TIMEOUT", "DEADLINE"}
FAILED = {"FAILED", "CANCELLED", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "REVOKED",
          "UNKNOWN",                                      # UNKNOWN: neither scontrol nor sacct knows the job
          "REQUEUED"}                                     # put back in the queue: cancelled by the batch
ENDED = TIMED_OUT | FAILED | {"COMPLETED"}


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


def hostnames(nodes: str) -> list[str]:
    """Slurm's compressed node list (``n[1-2]``) as names; none where the job had no node."""
    if not nodes or nodes == "(null)":
        return []
    try:
        proc = subprocess.run(["scontrol", "show", "hostnames", nodes], capture_output=True, text=True)
    except OSError:         # no scontrol here (a record settled off the cluster): the list as Slurm wrote it
        return [nodes]
    return proc.stdout.split() if proc.returncode == 0 else [nodes]


def cancel(jobs: list[Any], wait_s: float = 60.0) -> None:
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
