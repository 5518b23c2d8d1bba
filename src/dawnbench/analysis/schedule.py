"""Scheduling a mix of jobs on G accelerators from their measured scale tables.

    dawnbench schedule scale/mnist/scale.json scale/cifar10/scale.json --accelerators 4

Each job's duration on k accelerators is its measured TTA with k workers (``scale.json``
rows; a hand-written file needs only ``job`` and ``rows`` of ``workers`` and ``tta_s``).
A schedule gives every job a worker count and a start time; jobs do not share an
accelerator and are not preempted. Two schedules are compared:

* **naive**: each job on all G accelerators, one after another (its table must have G);
* **best**: the shortest makespan found by exhaustive search over every job's worker
  count and, when the search stays under ``SEARCH_LIMIT`` candidates, every job order
  (beyond it, jobs go longest first). When even the worker counts alone are more than
  ``SEARCH_LIMIT`` combinations (12 jobs of 8 counts are 69 billion), a **heuristic**
  takes over and says so: every job starts on its most efficient count (least
  accelerator-seconds), then one job's count at a time is changed while that shortens
  the makespan, within ``SEARCH_LIMIT`` candidates. Each candidate is placed by list
  scheduling: in order, a job starts as soon as as many accelerators as it asks for are
  free, on those that freed up first.

A lower bound is reported beside them: no schedule ends before the longest job on its
best count, nor before the total accelerator-seconds (min over k of k × TTA) / G.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dawnbench import bounds, schema
from dawnbench.errors import DawnbenchError
from dawnbench.io import read_json
from dawnbench.records.documents import ScaleTable

SEARCH_LIMIT = 200_000  # candidates (allocations × orders) searched exhaustively


@dataclass(frozen=True)
class Job:
    name: str
    tta_s: dict[int, float]             # workers -> measured seconds to the target


@dataclass(frozen=True)
class Placement:
    job: str
    workers: int
    accelerators: tuple[int, ...]
    start: float
    end: float


@dataclass(frozen=True)
class Schedule:
    placements: tuple[Placement, ...]

    @property
    def makespan(self) -> float:
        return max((p.end for p in self.placements), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {"makespan_s": self.makespan,
                "placements": [{"job": p.job, "workers": p.workers, "accelerators": list(p.accelerators),
                                "start_s": p.start, "end_s": p.end} for p in self.placements]}


def load_job(path: Path) -> Job:
    """A job from a ``scale.json`` (or a hand-written one); errors name the file and field."""
    path = Path(path)
    if path.is_dir():
        raise DawnbenchError(f"{path}: a folder. Pass the scale.json files that `dawnbench scale` wrote "
                             f"(e.g. {path / 'scale.json'}).")
    if not path.exists():
        raise DawnbenchError(f"{path}: no such file. Pass the scale.json written by `dawnbench scale`.")
    doc = read_json(path, "scale table")
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list) or not doc["rows"]:
        raise DawnbenchError(f"{path}: field 'rows' missing or empty; a scale table lists rows of "
                             "{\"workers\": K, \"tta_s\": seconds}, as `dawnbench scale` writes them.")
    schema.load(ScaleTable, doc, path, fix="A scale table lists rows of {\"workers\": K, \"tta_s\": seconds}, as "
                                        "`dawnbench scale` writes them.")
    # a count that never reached the target (tta_s null) cannot be scheduled
    tta = {row["workers"]: float(row["tta_s"]) for row in doc["rows"] if row.get("tta_s") is not None}
    if not tta:
        raise DawnbenchError(f"{path}: no row has a tta_s: the job never reached its target, so it cannot be "
                             "scheduled. Re-run `dawnbench scale` until it does.")
    return Job(str(doc.get("job") or path.parent.name or path.stem), tta)


def place(jobs: list[Job], workers: list[int], accelerators: int) -> Schedule:
    """List scheduling: in order, each job on the ``workers`` accelerators that free up first."""
    free_at = [0.0] * accelerators
    placements = []
    for job, k in zip(jobs, workers):
        chosen = sorted(range(accelerators), key=lambda a: (free_at[a], a))[:k]
        start = max(free_at[a] for a in chosen)
        end = start + job.tta_s[k]
        for a in chosen:
            free_at[a] = end
        placements.append(Placement(job.name, k, tuple(sorted(chosen)), start, end))
    return Schedule(tuple(placements))


def naive(jobs: list[Job], accelerators: int) -> Schedule:
    missing = [j.name for j in jobs if accelerators not in j.tta_s]
    if missing:
        raise DawnbenchError(f"the naive schedule runs every job on all {accelerators} accelerators, but "
                             f"{', '.join(missing)} has no measured TTA with {accelerators} workers; add "
                             f"{accelerators} to its `dawnbench scale --workers`.")
    return place(jobs, [accelerators] * len(jobs), accelerators)


def best(jobs: list[Job], accelerators: int) -> tuple[Schedule, int, str]:
    """The shortest schedule found; also the candidates tried and how: ``orders`` (every worker
    count and every order), ``counts`` (every worker count, longest job first) or ``heuristic``."""
    choices = [[k for k in sorted(j.tta_s) if k <= accelerators] for j in jobs]
    empty = [j.name for j, c in zip(jobs, choices) if not c]
    if empty:
        raise DawnbenchError(f"{', '.join(empty)}: no measured worker count fits on {accelerators} accelerators.")
    allocations = math.prod(len(c) for c in choices)
    if allocations > SEARCH_LIMIT:
        found, tried = _improve(jobs, choices, accelerators)
        return found, tried, "heuristic"
    search_orders = allocations * math.factorial(len(jobs)) <= SEARCH_LIMIT
    orders = (itertools.permutations(range(len(jobs))) if search_orders
              else [tuple(sorted(range(len(jobs)), key=lambda i: -min(jobs[i].tta_s.values())))])
    found, tried = None, 0
    for order in orders:
        ordered = [jobs[i] for i in order]
        for workers in itertools.product(*(choices[i] for i in order)):
            tried += 1
            candidate = place(ordered, list(workers), accelerators)
            if found is None or candidate.makespan < found.makespan - 1e-9:
                found = candidate
    assert found is not None
    return found, tried, "orders" if search_orders else "counts"


def _improve(jobs: list[Job], choices: list[list[int]], accelerators: int) -> tuple[Schedule, int]:
    """Local search for when the counts are too many to try: longest job first, each on its most
    efficient count, then single-job changes of count while they shorten the makespan."""
    order = sorted(range(len(jobs)), key=lambda i: -min(jobs[i].tta_s.values()))
    ordered = [jobs[i] for i in order]
    counts = [min(choices[i], key=lambda k, i=i: (k * jobs[i].tta_s[k], k)) for i in order]
    found, tried, improved = place(ordered, counts, accelerators), 1, True
    while improved and tried < SEARCH_LIMIT:
        improved = False
        for pos, i in enumerate(order):
            for k in choices[i]:
                if k == counts[pos] or tried >= SEARCH_LIMIT:
                    continue
                candidate_counts = [*counts[:pos], k, *counts[pos + 1:]]
                candidate = place(ordered, candidate_counts, accelerators)
                tried += 1
                if candidate.makespan < found.makespan - 1e-9:
                    found, counts, improved = candidate, candidate_counts, True
    return found, tried


def lower_bound(jobs: list[Job], accelerators: int) -> float:
    fits = [{k: t for k, t in j.tta_s.items() if k <= accelerators} for j in jobs]
    return max(max(min(f.values()) for f in fits),
               sum(min(k * t for k, t in f.items()) for f in fits) / accelerators)


def schedule(paths: list[Path], accelerators: int) -> dict[str, Any]:
    bounds.check_option("--accelerators", accelerators)
    jobs = [load_job(p) for p in paths]
    names = [j.name for j in jobs]
    if len(set(names)) < len(names):  # the same scale table twice is two jobs: name them apart
        jobs = [Job(f"{j.name} #{i + 1}", j.tta_s) for i, j in enumerate(jobs)]
    try:
        plain = naive(jobs, accelerators)
    except DawnbenchError as err:   # name the files the user handed over, not only the jobs in them
        files = [str(p) for p, j in zip(paths, jobs) if accelerators not in j.tta_s]
        raise DawnbenchError(f"{', '.join(files)}: {err}") from None
    found, tried, search = best(jobs, accelerators)
    return {"accelerators": accelerators, "jobs": {j.name: j.tta_s for j in jobs},
            "naive": plain.to_dict(), "best": found.to_dict(), "lower_bound_s": lower_bound(jobs, accelerators),
            "saved_s": plain.makespan - found.makespan, "candidates": tried, "search": search}
