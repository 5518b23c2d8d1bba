"""Gather runs from a path and summarise them per group (SPEC §7, §10, §11).

    from dawnbench.analysis import collect, analyze
    doc = analyze("runs/")            # {"groups": [...], "problems": [...]}

A *run* is either a directory of this project with a ``result.json`` (its other
files are not read again), or an MLPerf training log (either format). Runs are
grouped by the directory that holds them, named relative to PATH (``.`` for PATH
itself): ``dawnbench run --runs N --out runs/A`` makes group ``A``, and
``mlperf-training-v0.5/dgx1_ngc18.11_pytorch/ssd/result_*.txt`` group
``dgx1_ngc18.11_pytorch/ssd``. A file that looks like a log but cannot be read as
one becomes a problem (file, line, message); the rest is still analysed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench.analysis.mlperf import LogError, LogProblem, is_mlperf_log, read_log
from dawnbench.errors import DawnbenchError
from dawnbench.harness.record import RunResult
from dawnbench.statistics import RunSample, summarize


@dataclass
class Group:
    name: str
    samples: list[RunSample] = field(default_factory=list)
    results: list[RunResult] = field(default_factory=list)  # this project's runs: curves for plots


def _read_run_dir(run_dir: Path) -> RunResult:
    try:
        result = RunResult.from_dict(json.loads((run_dir / "result.json").read_text()))
        result.run_dir = str(run_dir)  # where the record is now (it may have been moved or copied)
        return result
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError, AttributeError) as err:
        raise LogError(LogProblem(str(run_dir / "result.json"), None,
                                  f"not a readable run record ({type(err).__name__}: {err})")) from None


def collect(path: str | Path) -> tuple[list[Group], list[LogProblem]]:
    root = Path(path)
    if not root.exists():
        raise DawnbenchError(f"{root}: no such file or directory. Pass run directories or MLPerf logs.")
    groups: dict[str, Group] = {}
    problems: list[LogProblem] = []

    def add(where: Path, read) -> None:
        name = os.path.relpath(where.parent, root) if where != root else "."
        try:
            item = read(where)
        except LogError as err:
            problems.append(err.problem)
            return
        except OSError as err:
            problems.append(LogProblem(str(where), None, f"cannot read: {err.strerror}"))
            return
        group = groups.setdefault(name, Group(name))
        if isinstance(item, RunResult):
            group.results.append(item)
            group.samples.append(RunSample.from_result(item))
        else:
            group.samples.append(item)

    if root.is_file():
        add(root, read_log)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if "result.json" in filenames:
            add(here, _read_run_dir)
            dirnames.clear()  # a run directory's own files are not runs
            continue
        dirnames.sort()
        for name in sorted(filenames):
            file = here / name
            if file.suffix in (".txt", ".log") and is_mlperf_log(file):
                add(file, read_log)
    if not groups and not problems:
        raise DawnbenchError(f"{root}: no runs found (no result.json, no MLPerf log). Pass a folder "
                             "made by `dawnbench run`, or MLPerf training logs.")
    return sorted(groups.values(), key=lambda g: g.name), problems


def analyze(path: str | Path) -> dict[str, Any]:
    """The ``dawnbench analyze --json`` document (SPEC §11)."""
    groups, problems = collect(path)
    return {"groups": [{"name": g.name, **summarize(g.samples)} for g in groups],
            "problems": [{"file": p.file, "line": p.line, "severity": "error", "message": p.message}
                         for p in problems]}
