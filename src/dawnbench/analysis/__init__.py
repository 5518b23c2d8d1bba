"""Gather runs from a path and summarise them per group.

    from dawnbench.analysis import collect, analyze, compare_paths
    doc = analyze("runs/")            # {"groups": [...], "problems": [...]}
    verdict = compare_paths("runs/baseline", "runs/mine")["verdict"]   # compare's document, B against A

A *run* is either a directory of this project with a ``result.json`` (its other
files are not read again), or an MLPerf training log (either format).

* This project's runs are grouped by the **configuration that defines them**:
  task, entry, precision, compile mode, threshold, workers, hyperparameters and who scored them (a
  self-reported accuracy — a tracked script's own, an imported MLPerf log's — is never pooled with the
  harness's, and its group's name says ``self-reported``) — runs
  of one configuration differ only in seed. The group is named ``task · entry ·
  precision``, followed by whatever else sets it apart (``compile``, workers, an
  unofficial target, and the hyperparameters that differ from another group of the
  same name), e.g. ``cifar10 · cifar10-fast · bf16``.
* MLPerf logs are grouped by the directory that holds them, relative to PATH:
  ``mlperf-training-v0.5/dgx1_ngc18.11_pytorch/ssd/result_*.txt`` is group
  ``dgx1_ngc18.11_pytorch/ssd``.
* Which runs count is the rule every command shares (:mod:`dawnbench.records.selection`): a
  run interrupted before it finished, and one its own resource monitor flagged (other processes
  took more than 5 % of the machine while its clock was timing: ``resources.interference``)
  unless ``include_suspect`` is set, are **kept out of the statistics** and listed in their
  group's ``excluded`` with the reason. A group's ``disturbed`` is the clause its line carries when any of its
  runs were flagged (how many were counted, by how much; how many were left out), and ``flagged_counted`` lists
  the flagged runs ``include_suspect`` counted. A run whose event log records the start of one read before
  it — a copy, whatever its record says, its configuration too — is left out of its own group, naming the first.

A file that looks like a log but cannot be read as one becomes a problem (file, line,
message); the rest is still analysed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError, FileError
from dawnbench.records.mlperf import LogError, LogProblem, LogRun, is_mlperf_log, read_run, sample_of
from dawnbench.records.record import RunResult, read_result
from dawnbench.records.selection import Selection, disturbance, flagged_counted, run_start_mark, select
from dawnbench.statistics import RunSample, compare, summarize

NO_START = ("no run_start in the head of this run's event log (missing, cut, damaged, or past its first MiB): whether "
            "the run is a copy of another cannot be checked, and it is selected as if it were not")


@dataclass
class Group:
    name: str
    folder: str = "."                   # the folder of its first run, relative to PATH (a sweep's k=v,... name)
    samples: list[RunSample] = field(default_factory=list)
    results: list[RunResult] = field(default_factory=list)  # this project's runs counted: statistics, curves
    left_out: list[tuple[RunResult, str]] = field(default_factory=list)  # listed with why, not counted
    logs: list[LogRun] = field(default_factory=list)         # the MLPerf logs behind its samples

    @property
    def listed(self) -> list[RunResult]:
        """Every run of this project in the group, for per-run tables (a run left out shows why)."""
        return self.results + [r for r, _ in self.left_out]

    @property
    def excluded(self) -> list[dict[str, str]]:
        return [{"run": r.run_dir, "reason": why} for r, why in self.left_out]

    @property
    def disturbed(self) -> str | None:
        """The clause the group's line carries when runs of it were flagged (counted, or left out)."""
        return disturbance(self.results, self.left_out, len(self.samples))

    @property
    def target(self) -> str:
        """What its times are to, in words ("mnist ≥ 97 (quick)"); "" for MLPerf logs, which carry no record."""
        return target_words(self.results)


def compared(a: Sequence[RunSample], b: Sequence[RunSample], targets: tuple[str, str],
             flagged: tuple[str | None, str | None]) -> dict[str, Any]:
    """B against A (``statistics.compare``), with what the verdict rests on said on its own line — the sentence a
    reader copies: the target the times are to (or that the sides trained to different ones: ``targets``, as
    :func:`target_words` says them) and each side's flagged runs (``flagged``: :attr:`Group.disturbed`'s clause).
    ``compare`` and ``report`` both give their verdicts so."""
    apart = bool(targets[0] and targets[1] and targets[0] != targets[1])    # (MLPerf logs carry no record)
    doc = compare(a, b, target="each side's target" if apart else targets[0] or targets[1] or "the target")
    if apart:
        doc["verdict"] += (f" A ({targets[0]}) and B ({targets[1]}) trained to different targets or data: the speedup "
                           "compares times to different things.")
    doc["verdict"] += "".join(f" {side}: {clause}." for side, clause in zip("AB", flagged) if clause)
    return doc


def target_words(results: Sequence[RunResult]) -> str:
    """The targets and data ``results`` trained to, in words: "mnist ≥ 99", "mnist ≥ 97 (quick)" ("" for none)."""
    return ", ".join(f"{task} ≥ {x:g}" + (f" ({sub})" if sub else "")
                     for task, x, sub in sorted({(r.task, r.threshold, r.subset or "") for r in results}))


def _config_key(r: RunResult) -> tuple[Any, ...]:
    workers = (r.distributed or {}).get("world_size") or 1
    return (r.task + (f"@{r.subset}" if r.subset else ""), r.entry, r.precision, r.compile, r.threshold, workers,
            json.dumps(r.hparams, sort_keys=True, default=str), r.self_reported)


def _config_names(keys: list[tuple[Any, ...]], official: dict[tuple[Any, ...], bool]) -> dict[tuple, str]:
    """``task · entry · precision`` plus what sets a configuration apart from the others."""
    names = {}
    for key in keys:
        task, entry, precision, compile_mode, threshold, workers, _, self_reported = key
        name = f"{task} · {entry} · {precision}"
        name += " · self-reported" if self_reported else ""
        name += f" · compile {compile_mode}" if compile_mode else ""
        name += f" · {workers} workers" if workers > 1 else ""
        name += "" if official[key] else f" · target {threshold:g} (unofficial)"
        names[key] = name
    for name in set(names.values()):
        same = [k for k in keys if names[k] == name]
        if len(same) < 2:
            continue
        hparams = {k: json.loads(k[6]) for k in same}
        differing = sorted({h for hp in hparams.values() for h in hp
                            if len({json.dumps(p.get(h), default=str) for p in hparams.values()}) > 1})
        for k in same:
            names[k] = name + "".join(f" · {h}={hparams[k].get(h)}" for h in differing)
    return names


def _read_run_dir(run_dir: Path) -> RunResult:
    try:
        result = RunResult.from_dict(read_result(run_dir))
    except FileError as err:
        raise LogError(LogProblem(err.path, err.line, err.reason)) from None
    result.run_dir = str(run_dir)  # where the record is now (it may have been moved or copied)
    return result


def no_run_twice(sides: Sequence[Sequence[RunResult]]) -> None:
    """Refuse folders that share a run: records identical but for their folder, or event logs that record the same
    start (a copy, a copy with its record or log edited, or one folder inside the other), which a comparison would
    count as evidence for both sides. Two runs never start in the same millisecond."""
    def fingerprints(r: RunResult) -> dict[tuple[str, str], RunResult]:
        keys = {("their records are identical but for the folder",
                 json.dumps({k: v for k, v in r.to_dict().items() if k != "run_dir"}, sort_keys=True, default=str)): r}
        if (start := run_start_mark(r)) is not None:
            keys[("their event logs record the same start, to the millisecond", repr(start))] = r
        return keys
    keyed = [{key: r for run in side for key, r in fingerprints(run).items()} for side in sides]
    for i, first in enumerate(keyed):
        for other in keyed[i + 1:]:
            if both := [key for key in other if key in first]:
                a, b = first[both[0]], other[both[0]]
                runs = len({id(other[key]) for key in both})
                more = f", and {runs - 1} more" if runs > 1 else ""
                same_folder = Path(a.run_dir).resolve() == Path(b.run_dir).resolve()
                how = (f"{a.run_dir} is read on both sides (the same folder twice, or one folder inside the other)"
                       if same_folder else f"{b.run_dir} is a copy of {a.run_dir} ({both[0][0]})")
                raise DawnbenchError(f"the same run is on both sides: {how}{more}. A comparison needs sets of "
                                     "different runs: pass folders that do not overlap.")


def collect(path: str | Path, include_suspect: bool = False) -> tuple[list[Group], list[LogProblem]]:
    root = Path(path)
    if not root.exists():
        raise DawnbenchError(f"{root}: no such file or directory. Pass run directories or MLPerf logs.")
    if root.name == "result.json" and root.is_file():      # a run's record named: its run folder is meant
        root = root.parent
    groups: dict[Any, Group] = {}
    official: dict[Any, bool] = {}
    runs: list[tuple[Any, RunResult]] = []     # (configuration, run), in the order read: selected once all are read
    problems: list[LogProblem] = []

    def add(where: Path, read) -> None:
        folder = os.path.relpath(where.parent, root) if where != root else "."
        try:
            item = read(where)
        except LogError as err:
            problems.append(err.problem)
            return
        except OSError as err:
            problems.append(LogProblem(str(where), None, f"cannot read: {err.strerror}"))
            return
        if isinstance(item, LogRun):
            logs.append((folder, item))
            return
        key = _config_key(item)
        official[key] = official.get(key, True) and bool(item.official)
        groups.setdefault(key, Group("", folder))
        runs.append((key, item))

    logs: list[tuple[str, LogRun]] = []
    for where, read in _documents_under(root, problems):
        add(where, read)
    # MLPerf logs by folder, and within a folder by benchmark and target: runs of two are never pooled; a copy of a
    # log (the same start, end and evaluations, however renamed or relabelled) counts once, and is said
    seen_logs: dict[tuple, LogRun] = {}
    for _, run in logs:
        if run.measured in seen_logs:
            problems.append(LogProblem(run.path, None, f"a copy of {seen_logs[run.measured].path} (the same start, end "
                                       "and evaluations): a run counts once"))
        seen_logs.setdefault(run.measured, run)
    logs = [(folder, run) for folder, run in logs if seen_logs[run.measured] is run]
    kinds = {folder: {(run.benchmark, run.target) for f, run in logs if f == folder} for folder, _ in logs}
    for folder, run in logs:
        key = folder if len(kinds[folder]) == 1 else " · ".join(
            [folder, run.benchmark or "no benchmark named", f"target {run.target:g}" if run.target is not None
             else "its task's target"])
        group = groups.setdefault(key, Group(key, folder))
        group.samples.append(sample_of(run))
        group.logs.append(run)
    # chosen among every run read, together: a second record of one seed counts once, and so does a copy whose
    # record was edited — its configuration too, which puts it in a group of its own (the same run_start)
    chosen = select([r for _, r in runs], include_suspect)
    problems += [LogProblem(str(Path(r.run_dir) / "events.log"), None, NO_START) for r in chosen.unchecked]
    configuration = {id(r): key for key, r in runs}
    for key, name in _config_names([k for k in groups if isinstance(k, tuple)], official).items():
        group = groups[key]
        group.name = name
        group.results = [r for r in chosen.counted if configuration[id(r)] == key]
        group.left_out = [(r, why) for r, why in chosen.left_out if configuration[id(r)] == key]
        group.samples = [RunSample.from_result(r) for r in group.results]
    if not groups and not problems:
        raise DawnbenchError(f"{root}: no runs found (no result.json, no MLPerf log). Pass a folder "
                             "made by `dawnbench run`, or MLPerf training logs.")
    # MLPerf groups by folder; configurations by what defines them (1 worker before 2, ...).
    order = sorted(groups, key=lambda k: (0, k, ()) if isinstance(k, str) else
                   (1, "", (*k[:3], k[3] or "", *k[4:7])))
    return [groups[k] for k in order], problems


def _documents_under(root: Path, problems: list[LogProblem]) -> Iterator[tuple[Path, Callable[[Path], Any]]]:
    """Each run folder and MLPerf log under ``root`` (or ``root`` itself), with its reader, in name order; links
    are not followed and said, and a run folder inside another run's is said and not read."""
    if root.is_file():
        yield root, read_run
    for dirpath, dirnames, filenames in os.walk(root):  # links to folders are not followed
        here = Path(dirpath)
        # a link is not followed (a folder handed over is data), and said, so that no run goes missing unnoticed
        for name in sorted({*dirnames, *filenames}):
            if (here / name).is_symlink():
                problems.append(LogProblem(str(here / name), None, "a symbolic link, not followed (dawnbench reads "
                                           "only what lies in the folder it is given): " +
                                           ("copy the run here instead" if (here / name).exists() else
                                            "it points at nothing that exists; remove it, or copy the run it meant "
                                            "here")))
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()]
        if "result.json" in filenames:
            if not (here / "result.json").is_symlink():     # a linked record: said once, above
                yield here, _read_run_dir
            for name in sorted(d for d in dirnames if (here / d / "result.json").is_file()):
                problems.append(LogProblem(str(here / name), None, "a run folder inside another run's folder, not "
                                           "read (a run's own files are not runs): move it out beside the other"))
            dirnames.clear()  # a run directory's own files are not runs
            continue
        dirnames.sort()
        for name in sorted(filenames):
            file = here / name
            if file.suffix in (".txt", ".log") and is_mlperf_log(file):  # regular files only
                yield file, read_run


def analyze(path: str | Path, include_suspect: bool = False) -> dict[str, Any]:
    """The ``dawnbench analyze --json`` document. Where nothing under ``path`` could be read, the
    problems are the error: an empty table is not an answer."""
    groups, problems = collect(path, include_suspect)
    if not groups and problems:
        first = problems[0]
        more = f" ({len(problems) - 1} more file(s) could not be read either)" if len(problems) > 1 else ""
        raise DawnbenchError(f"{path}: nothing could be analysed. {first.file}"
                             f"{':' + str(first.line) if first.line else ''}: {first.message}{more}")
    return {"groups": [{"name": g.name, **summarize(g.samples), "excluded": g.excluded, "disturbed": g.disturbed,
                        "flagged_counted": flagged_counted(g.results)} for g in groups],
            "problems": [{"file": p.file, "line": p.line, "severity": "error", "message": p.message}
                         for p in problems]}


def compare_paths(a: str | Path, b: str | Path, include_suspect: bool = False) -> dict[str, Any]:
    """``compare``'s document: B's runs against A's (each a folder of runs or MLPerf logs of one configuration) —
    the statistics and verdict of :func:`compared`, each side's target words and disturbance clause (``targets``,
    ``disturbed``), the runs left out and the flagged runs counted, and the notes a reader needs beside the verdict
    (problems read, imported or self-reported runs). A side with no run counted, or with several configurations, is
    refused in one paragraph."""
    sides, left_out, notes, targets, flagged, disturbed, listed, measured = [], {}, [], {}, {}, {}, {}, {}
    for side, path in (("a", a), ("b", b)):
        if not isinstance(path, (str, Path)):
            raise DawnbenchError(f"{side.upper()}: {path!r} is not a path: give a folder of runs or MLPerf logs.")
        groups, problems = collect(path, include_suspect)
        _one_configuration(side, path, groups)
        listed[side] = [r for g in groups for r in g.listed]
        measured[side] = {run.measured: run for g in groups for run in g.logs}
        samples = [s for g in groups for s in g.samples]
        chosen = Selection([r for g in groups for r in g.results], [x for g in groups for x in g.left_out])
        if not samples:
            why = chosen.sentence() or (f"{len(problems)} file(s) could not be read, first: {problems[0].file}: "
                                        f"{problems[0].message}" if problems else "no run folder or MLPerf log here.")
            raise DawnbenchError(f"{path}: no runs counted. {why}")
        if chosen.sentence():
            notes.append(f"{side.upper()}: {path}: {chosen.sentence()}")
        notes += [f"{side.upper()}: problem: {p.file}{':' + str(p.line) if p.line else ''}: {p.message}"
                  for p in problems]       # a file not read, a run whose copies cannot be told: said, as analyze does
        left_out[side] = [{"run": r.run_dir, "reason": why} for r, why in chosen.left_out]
        flagged[side] = flagged_counted(chosen.counted)
        disturbed[side] = disturbance(chosen.counted, chosen.left_out, len(samples))
        targets[side] = target_words([r for g in groups for r in g.results])
        mine = sum(r.self_reported for g in groups for r in g.results)
        if any(r.imported for g in groups for r in g.results):
            notes.append(f"{side.upper()}: {path}: holds runs imported from MLPerf logs, timed by MLPerf's clock "
                         "(run_start to run_stop, evaluations included), not dawnbench's")
        logs = sum(1 for g in groups for s in g.samples) - sum(len(g.results) for g in groups)
        if mine or logs:
            notes.append(f"{side.upper()}: {path}: self-reported runs: {mine + logs} (the accuracy is the script's or "
                         "the MLPerf log's own, not dawnbench's scorer on the held split)")
        sides.append(samples)
    no_run_twice([listed["a"], listed["b"]])
    if shared := [run for key, run in measured["b"].items() if key in measured["a"]]:
        raise DawnbenchError(f"the same run is on both sides: {shared[0].path} is a copy of "
                             f"{measured['a'][shared[0].measured].path} (the same start, end and evaluations)"
                             + (f", and {len(shared) - 1} more" if len(shared) > 1 else "")
                             + ". A comparison needs sets of different runs: pass folders that do not overlap.")
    return {"a": str(a), "b": str(b), **compared(*sides, (targets["a"], targets["b"]), (disturbed["a"], disturbed["b"])),
            "left_out": left_out, "flagged_counted": flagged, "notes": notes, "targets": targets,
            "disturbed": disturbed}


def _one_configuration(side: str, path: str | Path, groups: list[Group]) -> None:
    """Refuse a side whose runs counted are of several configurations, as `analyze` and `report` group them: pooled,
    two learning rates would be compared as one configuration with twice the spread."""
    several = [g for g in groups if g.samples]
    if len(several) < 2:
        return
    named = "; ".join(f"{g.name} (its first run under {Path(path) / g.folder})" for g in several)
    folders = {g.folder for g in several}
    how = (f"name a folder that holds one configuration's runs, e.g. {Path(path) / several[0].folder}"
           if len(folders) == len(several) and "." not in folders else
           "move each configuration's runs into a folder of its own and name one")
    raise DawnbenchError(f"{side.upper()}: {path} holds runs of {len(several)} configurations — {named} — and compare "
                         f"compares one configuration with another, never a pool of several: {how}. `dawnbench analyze "
                         f"{path}` lists them; `dawnbench report {path} --out DIR` compares each with the first.")
