"""MLPerf training logs, both formats, read by one reader into a :class:`LogRun` — what ``analyze``, ``compare``,
``import-log`` and ``check-log`` say of a log, each from the same reading and the same rules (docs/reference/
documents.md, "Physics").

v0.5: ``:::MLPv0.5.0 <benchmark> <unix s> (<file>:<line>) <key>[: <JSON>]`` — found anywhere in a line, since
real logs interleave other program output; success is ``run_stop``'s ``{"success": …}`` when it says, else the
last ``eval_accuracy`` at or above ``eval_target``.

Newer: ``:::MLLOG {json}`` with ``time_ms``; status in ``run_stop.metadata.status``.

Either way the time to accuracy is ``run_stop`` − ``run_start``; the epochs are the distinct whole ``epoch_num`` of
``epoch_start`` (v0.5: ``train_epoch``) events, else the last evaluation's ``epoch_num`` (dawnbench's own logs, whose
evaluations fall within epochs). The log is streamed: only the records a reading needs are kept.

    run = read_run(Path("result_0.txt"))      # LogRun: its task, target, evaluations, status; LogError if impossible
    sample = sample_of(run)                   # what the statistics need of it
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench import bounds, schema
from dawnbench.errors import FileError, clipped
from dawnbench.io import RepeatedKey, read_foreign_lines, strict_loads
from dawnbench.records.record import Status, check_point, epoch_size
from dawnbench.statistics import RunSample

V05 = re.compile(r":::MLPv0\.5\.0 (\S+) (\S+) \(([^)]*)\) ([A-Za-z_0-9]+)(?::\s*(.*))?")   # a time checked below
MLLOG = ":::MLLOG "
# What a log's numbers can be: a time in milliseconds (any clock's, finite, not negative, under a thousand years of
# them), an epoch number of schema's range; and how many records one log of one run holds.
MAX_LOG_S = 3.2e10
TimeMs = schema._number(0, MAX_LOG_S * 1000, unit="milliseconds")
MAX_EVENTS = 1_000_000
CLOCK_SLACK_S = 60.0   # how far one process's line may trail another's in a shared log
# MLPerf's names of the benchmarks that are dawnbench's tasks (MLPerf names ImageNet's "resnet")
BENCHMARKS = {"resnet": "imagenet", "imagenet": "imagenet", "mnist": "mnist", "fashion-mnist": "fashion-mnist",
              "cifar10": "cifar10", "squad": "squad"}
# The records a reading keeps (every other record's time is still checked as the log streams past)
KEPT = {"run_start", "run_stop", "eval_accuracy", "epoch_start", "train_epoch", "eval_target", "submission_benchmark",
        "seed", "global_batch_size", "submission_platform", "entry", "train_samples", "dawnbench_official",
        "dawnbench_subset", "hparams", "dawnbench_status_corrected"}
ONCE = {"seed", "eval_target", "train_samples", "global_batch_size", "entry", "dawnbench_official", "dawnbench_subset"}
META = ("epoch_num", "samples_count", "status")      # of a record's metadata, what a reading uses, in this order
NO_META = (None, None, None)                          # a record that keeps none of them


@dataclass
class LogProblem:
    file: str
    line: int | None
    message: str


class LogError(ValueError):
    def __init__(self, problem: LogProblem):
        super().__init__(problem.message)
        self.problem = problem


@dataclass(slots=True)
class LogEval:
    line: int
    at_s: float                      # seconds from run_start
    epoch: float | None              # metadata.epoch_num, if logged
    samples: float | None            # metadata.samples_count, if logged
    value: float                     # on the log's own scale


@dataclass
class LogRun:
    """One MLPerf log's run, as its physics allows it (:func:`read_run` refuses the rest)."""

    path: str
    benchmark: str | None            # as the log names it (submission_benchmark; v0.5: each line's)
    task: str | None                 # the dawnbench task it is (BENCHMARKS), if any
    start_s: float                   # run_start on the log's clock
    stop_s: float
    stop_line: int
    status: str                      # run_stop's: success, aborted, else not reached
    target: float | None             # eval_target, on the log's scale (None: the task's threshold, if a task)
    evals: list[LogEval] = field(default_factory=list)
    epochs: float | None = None
    train_samples: int | None = None   # its training split (train_samples): an epoch's samples
    firsts: dict[str, tuple[int, Any]] = field(default_factory=dict)   # the first value of each key kept, with its line
    v05: bool = False                # a ':::MLPv0.5.0' log

    @property
    def succeeded(self) -> bool:
        return self.status == Status.SUCCESS

    @property
    def tta_s(self) -> float:
        return self.stop_s - self.start_s

    @property
    def measured(self) -> tuple:
        """What the log's run measured — its start and end on the log's clock, and each evaluation's time and
        value — which no two runs share: a copy of a log, however renamed or relabelled, has the same."""
        return self.start_s, self.stop_s, tuple((e.at_s, e.value) for e in self.evals)

    def first(self, key: str) -> Any:
        return self.firsts.get(key, (None, None))[1]


def _json_or_raw(text: str | None) -> Any:
    if text is None or not text.strip():
        return None
    try:
        return strict_loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError: the raw text is the value
        return text.strip()


def is_mlperf_log(path: Path) -> bool:
    """Whether ``path`` is a regular file whose first 64 KiB hold an MLPerf line (a link, a FIFO or
    a device is never opened)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        head = f.read(1 << 16)
    return b":::MLPv0.5.0 " in head or b":::MLLOG " in head


def sample_of(run: LogRun) -> RunSample:
    """What the statistics need of a log's run."""
    return RunSample(run.path, run.succeeded, run.tta_s if run.succeeded else None, run.epochs,
                     Status.SUCCESS if run.succeeded else Status.NOT_REACHED)


def read_run(path: Path, task: str | None = None, scale: float = 1.0, most_evaluations: int | None = None) -> LogRun:
    """One MLPerf log file as its run, held to the rules every reader of a log shares (:func:`_judge`); ``task``
    names its dawnbench task where the log does not (``import-log --task``), ``scale`` puts its accuracies on the
    task's scale (100 for fractions of a task in percent); ``most_evaluations``: refused, while it streams, past
    that many evaluations (what a run record made of it can hold)."""
    try:
        lines = read_foreign_lines(path, "MLPerf log")
        records, v05 = _ordered(path, _records(path, lines), most_evaluations)
    except FileError as err:
        raise LogError(LogProblem(err.path, err.line, err.reason)) from None
    if records is None:
        raise LogError(LogProblem(str(path), None, "no ':::MLPv0.5.0' or ':::MLLOG' lines: not an MLPerf log"))
    return _judge(path, records, v05, task, scale)


def _records(path: Path, lines: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str, float, Any, dict[str, Any], str | None]]:
    """Each MLPerf line of either format as (line, key, seconds on the log's clock, value, metadata, v0.5's
    benchmark), checked."""
    for number, line in lines:
        at = line.find(MLLOG)
        if at >= 0:
            yield (*_mllog_record(path, number, line[at + len(MLLOG):]), None)
            continue
        m = V05.search(line) if ":::MLPv0.5.0 " in line else None
        if m is None:
            continue
        try:
            t = bounds.parse_float(m.group(2))
        except ValueError:
            t = math.nan
        if not 0 <= t <= MAX_LOG_S:   # NaN too; 1 followed by 400 zeros was read as inf
            raise LogError(LogProblem(str(path), number, f"time {clipped(m.group(2), 40)!r} is not a number of "
                                      f"seconds from 0 to {MAX_LOG_S:g} (a thousand years of a Unix clock)"))
        value = _json_or_raw(m.group(5))
        meta = (value, None, None) if m.group(4) == "train_epoch" else NO_META
        if m.group(4) == "eval_accuracy" and isinstance(value, dict):   # its "epoch" is the benchmark's own (-1, …)
            value = value.get("value")
        yield number, sys.intern(m.group(4)), t, value, meta, sys.intern(m.group(1))


def _mllog_record(path: Path, number: int, text: str) -> tuple[int, str, float, Any, tuple[Any, Any, Any]]:
    try:
        rec = strict_loads(text)
    except RepeatedKey as err:
        raise LogError(LogProblem(str(path), number, f"':::MLLOG' record: {err} (JSON keeps only the last, so "
                                                     "which one is meant cannot be told)")) from None
    except (ValueError, RecursionError):
        raise LogError(LogProblem(str(path), number, "':::MLLOG' line is not valid JSON")) from None
    if not isinstance(rec, dict) or "key" not in rec or "time_ms" not in rec:
        raise LogError(LogProblem(str(path), number, "':::MLLOG' record lacks 'key' or 'time_ms'"))
    time_ms, meta = rec["time_ms"], rec.get("metadata") or {}
    why = schema.why_not(TimeMs, time_ms, "time_ms")
    if why:
        raise LogError(LogProblem(str(path), number, f"{why} (milliseconds on the log's clock)"))
    if not isinstance(meta, dict):
        raise LogError(LogProblem(str(path), number, "'metadata' must be an object"))
    kept = tuple(meta.get(k) for k in META)               # a log of a million records keeps little of each
    return number, sys.intern(str(rec["key"])), time_ms / 1000, rec.get("value"), kept if any(
        v is not None for v in kept) else NO_META


def _ordered(path: Path, records: Iterator[tuple], most_evaluations: int | None = None) -> tuple[list[tuple] | None, bool]:
    """The log's kept records — (line, key, seconds, value, metadata, v0.5 benchmark) — in time order, checked as
    they stream past, and whether the log is v0.5 (None: no MLPerf line at all). Lines of several processes arrive
    a little out of order (NVIDIA's published v0.5 logs by up to 16 s), so they are sorted by their time; a clock
    that goes back by more than ``CLOCK_SLACK_S`` is refused. Then: one ``run_start`` and one ``run_stop``, in that
    order; evaluations only between the two; at most ``MAX_EVENTS`` records. A LogError names the line."""
    kept, latest, count, evaluations, formats = [], None, 0, 0, set()
    for record in records:
        number, key, t = record[:3]
        count += 1
        evaluations += key == "eval_accuracy"
        if most_evaluations is not None and evaluations > most_evaluations:
            raise LogError(LogProblem(str(path), number, f"more than {most_evaluations:,} evaluations: a run record "
                                      "holds at most that many (bounds.MAX_EVALUATIONS); import a log of one run, or "
                                      "keep every tenth evaluation"))
        formats.add(record[5] is not None)
        if count > MAX_EVENTS:
            raise LogError(LogProblem(str(path), number, f"more than {MAX_EVENTS:,} MLPerf records: a log of one run "
                                      "holds far fewer; split it, or keep the run's own lines"))
        if latest is not None and t < latest[1] - CLOCK_SLACK_S:
            raise LogError(LogProblem(str(path), number, f"{key} is logged at {t:.3f} s, {latest[1] - t:.0f} s before "
                                      f"the record at line {latest[0]} ({latest[1]:.3f} s): the log's clock goes "
                                      "back, so no time in it can be trusted"))
        if latest is None or t > latest[1]:
            latest = (number, t)
        if key in KEPT:
            kept.append(record)
    if not count:
        return None, False
    if len(formats) > 1:
        raise LogError(LogProblem(str(path), None, "':::MLPv0.5.0' and ':::MLLOG' lines in one log: one log holds one "
                                  "run, in one format"))
    v05 = formats == {True}
    ordered = sorted(kept, key=lambda r: r[2])
    seen: dict[str, tuple[int, float]] = {}
    for number, key, t, *_ in ordered:
        if key in ("run_start", "run_stop") and key in seen:
            raise LogError(LogProblem(str(path), number, f"a second {key} (the first is at line {seen[key][0]}): one "
                                      "log holds one run — mllog appends to its file, so remove the log before running "
                                      "again, or split it"))
        if key == "run_stop" and "run_start" not in seen:
            raise LogError(LogProblem(str(path), number, f"run_stop at {t:.3f} s comes before any run_start in the "
                                      "log's time: the run has no start"))
        if key == "eval_accuracy" and ("run_start" not in seen or "run_stop" in seen):
            if "run_start" not in seen:
                where, fix = "before any run_start", "log run_start before the first evaluation"
            else:
                line, at = seen["run_stop"]
                where = f"after run_stop (line {line}, at {at:.3f} s)"
                fix = "log run_stop after the last evaluation, or leave out the evaluations after it"
            raise LogError(LogProblem(str(path), number, f"eval_accuracy at {t:.3f} s comes {where} in the log's "
                                      "time (its records are read in time order): an evaluation counts only while "
                                      f"the run is timed, so {fix}"))
        seen.setdefault(key, (number, t))
    for key, what in (("run_start", "no run_start record"), ("run_stop", "no run_stop record: the run did not finish")):
        if key not in seen:
            raise LogError(LogProblem(str(path), None, what))
    return ordered, v05


def _judge(path: Path, records: list[tuple], v05: bool, task: str | None, scale: float) -> LogRun:
    """The run a log's ordered records describe, held to physics (docs/reference/documents.md, "Physics"),
    whatever benchmark it names or none: each evaluation a number from 0 to ``MAX_EVAL_VALUE``, at an epoch and
    samples physics allows (``check_point``: an epoch of its ``train_samples``, or of its task's split); a
    success has an evaluation at or above its target (``eval_target``, else its task's threshold) and takes time,
    at least its task's floor (``tasks.floor_s``); a run whose evaluation reached its target says success."""
    from dawnbench.tasks import TASKS, floor_s

    firsts: dict[str, tuple[int, Any]] = {}
    epochs, evals, start, stop = set(), [], None, None
    named: dict[Any, int] = {}
    records.reverse()
    while records:      # each record let go once read: the log's evaluations are not held twice
        number, key, t, value, (epoch_num, samples_count, status), benchmark = records.pop()
        if benchmark is not None:
            firsts.setdefault("submission_benchmark", (number, benchmark))
            named.setdefault(benchmark, number)
        if key == "submission_benchmark":
            named.setdefault(json.dumps(value), number)
        if key in ONCE and key in firsts and firsts[key][1] != value:
            raise LogError(LogProblem(str(path), number, f"{key} is {json.dumps(value)[:40]}, but line {firsts[key][0]} "
                                      f"said {json.dumps(firsts[key][1])[:40]}: a log states each fact of its run once"))
        firsts.setdefault(key, (number, value))
        if key == "run_start":
            start = t
        elif key == "run_stop":
            stop = (t, number, status if not v05 else _v05_status(value))
        elif key == "dawnbench_status_corrected" and stop is not None:   # dawnbench's launcher or scheduler knew better
            stop = (stop[0], stop[1], value)
        elif key in ("epoch_start", "train_epoch") and epoch_num is not None:
            epochs.add(_whole_epoch(epoch_num, path, number))
        elif key == "eval_accuracy":
            evals.append(_evaluation(path, number, t - start, value, epoch_num, samples_count))
    assert start is not None and stop is not None       # _ordered refuses a log without either
    if len(named) > 1:
        second = sorted(named.values())[1]
        raise LogError(LogProblem(str(path), second, "a second benchmark in one log: one log holds one run of one "
                                  "benchmark; split it"))
    benchmark = firsts.get("submission_benchmark", (None, None))[1]
    why = schema.why_not(schema.Label, benchmark, "submission_benchmark") if isinstance(benchmark, str) else None
    if why:
        raise LogError(LogProblem(str(path), firsts["submission_benchmark"][0], why))
    mapped = BENCHMARKS.get(benchmark) if isinstance(benchmark, str) else None
    if task is not None and mapped is not None and mapped != task:
        raise LogError(LogProblem(str(path), firsts["submission_benchmark"][0], f"the log's submission_benchmark "
                                  f"{benchmark!r} is {mapped}, not {task}: a log is of the benchmark it names"))
    name = task or mapped
    status = stop[2] if stop[2] in (Status.SUCCESS, Status.ABORTED) else Status.NOT_REACHED
    run = LogRun(str(path), benchmark if isinstance(benchmark, str) else None, name, start, stop[0], stop[1], status,
                 _target(path, firsts), evals)
    run.train_samples = _train_samples(path, firsts)
    if v05 and stop[2] is None:            # v0.5 without {"success": …}: the last evaluation against eval_target
        run.status = Status.SUCCESS if evals and run.target is not None and evals[-1].value >= run.target else \
            Status.NOT_REACHED
    last = evals[-1].epoch if evals else None
    run.epochs = float(len(epochs)) if epochs else last
    if run.tta_s > bounds.MAX_SECONDS:
        raise LogError(LogProblem(str(path), run.stop_line, f"run_start to run_stop is {run.tta_s:g} s, more than "
                                  f"{bounds.MAX_SECONDS:g} s (three years): not one run's time"))
    if run.epochs and run.epochs > max(run.tta_s, 0) / bounds.MIN_EPOCH_S:
        raise LogError(LogProblem(str(path), run.stop_line, f"{run.epochs:g} epochs in {run.tta_s:g} s: an epoch is at "
                                  f"least one optimizer step ({bounds.MIN_EPOCH_S:g} s, a kernel's launch)"))
    # dawnbench's own log says what its epochs are of: an imported subset's items, or an entry's own part of the split
    subset, hparams = firsts.get("dawnbench_subset", (None, None))[1], firsts.get("hparams", (None, None))[1]
    own = (isinstance(subset, str) and subset != "quick") or (isinstance(hparams, dict) and hparams.get("train_subset"))
    if name and not own and run.train_samples is not None and run.train_samples not in (
            epoch_size(name), epoch_size(name, "quick")):
        raise LogError(LogProblem(str(path), firsts["train_samples"][0], f"train_samples is {run.train_samples:,}, but "
                                  f"{name}'s training split holds {epoch_size(name) or 0:,}: the log's run trained on "
                                  "other data, so its epochs are not the task's (a log of the task's data, or of its "
                                  "quick trial's, is)"))
    size = None if own else run.train_samples or (epoch_size(name) if name else None)
    for before, e in zip([None, *evals], evals):
        if e.epoch is None and not v05:
            raise LogError(LogProblem(str(path), e.line, "eval_accuracy has no metadata.epoch_num: an evaluation says "
                                      "how far training got (mllog's eval_accuracy carries it)"))
        if before is not None and any(b is not None and a is not None and a < b for a, b in (
                (e.epoch, before.epoch), (e.samples, before.samples))):
            raise LogError(LogProblem(str(path), e.line, f"eval_accuracy goes back in epoch_num or samples_count from "
                                      f"line {before.line}'s (read in time order): evaluations are logged in the order "
                                      "they were taken"))
        points = [v if v is not None else 0 for v in (e.epoch, e.samples)]
        if any(points):     # an epoch of no samples stated: its rate is still bounded
            try:
                check_point("eval_accuracy's", *points, e.at_s, bounds.MACHINES, size, name or "")
            except ValueError as err:
                raise LogError(LogProblem(str(path), e.line, str(err))) from None
    target = run.target if run.target is not None else (TASKS[name].threshold / scale if name in TASKS else None)
    passing = next((e for e in evals if target is not None and e.value >= target), None)
    if passing is not None and run.succeeded and passing.epoch == 0 and not passing.samples:
        raise LogError(LogProblem(str(path), passing.line, "the evaluation that reached the target saw no training "
                                  "(epoch_num 0, no samples): a time to accuracy is the time to train to the target"))
    if run.succeeded:
        if not evals:
            raise LogError(LogProblem(str(path), run.stop_line, "run_stop says success, but the log holds no "
                                      "eval_accuracy: a success is an evaluation that reached the target"))
        if target is not None and passing is None:
            fractions = run.target is None and scale == 1 and name in TASKS and TASKS[name].metric.high > 1 and all(
                e.value <= 1 for e in evals)
            raise LogError(LogProblem(str(path), run.stop_line, f"run_stop says success, but no eval_accuracy reached "
                                      f"the target {target:g} (the best is {max(e.value for e in evals):g}); a success "
                                      "is an evaluation at or above eval_target" + (
                                          f". Its accuracies are fractions and {name}'s {TASKS[name].metric.name} is "
                                          "measured in percent: import it with --scale 100" if fractions else "")))
        floor = floor_s(name or "", None if target is None or name not in TASKS else target * scale)
        if run.tta_s < floor:
            raise LogError(LogProblem(str(path), run.stop_line, f"run_start to run_stop is {run.tta_s:g} s, below "
                                      f"{floor:g} s, the floor of a time to accuracy"
                                      + (f" on {name} (about 100× below the fastest result known)" if name else
                                         " (one optimizer step)")))
    elif passing is not None and run.status == Status.NOT_REACHED:     # not aborted: a failure after the pass
        raise LogError(LogProblem(str(path), passing.line, f"eval_accuracy {passing.value:g} reached the target "
                                  f"{target:g}, but run_stop's status is {json.dumps(stop[2])[:40]}, not success: a run "
                                  "whose evaluation reached its target is a success (fix run_stop's status, or the "
                                  "target)"))
    run.firsts, run.v05 = firsts, v05
    return run


def _v05_status(value: Any) -> str | None:
    if isinstance(value, dict) and "success" in value:
        return Status.SUCCESS if value["success"] is True else Status.NOT_REACHED
    return None


def _evaluation(path: Path, number: int, at_s: float, value: Any, *given: Any) -> LogEval:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= bounds.MAX_EVAL_VALUE:
        raise LogError(LogProblem(str(path), number, f"eval_accuracy is {json.dumps(value)[:40]}: no benchmark's "
                                  f"metric is outside 0 to {bounds.MAX_EVAL_VALUE} (a fraction, a percentage)"))
    for point, key, kind in zip(given, ("epoch_num", "samples_count"), (schema.Epochs, schema.Count)):
        why = schema.why_not(kind, point, f"metadata.{key}") if point is not None else None
        if why:
            raise LogError(LogProblem(str(path), number, f"eval_accuracy's {why}"))
    return LogEval(number, at_s, given[0], given[1], value)


def _target(path: Path, firsts: dict[str, tuple[int, Any]]) -> float | None:
    if "eval_target" not in firsts:
        return None
    number, value = firsts["eval_target"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= bounds.MAX_EVAL_VALUE:
        raise LogError(LogProblem(str(path), number, f"eval_target is {json.dumps(value)[:40]}: a target is a number "
                                  f"above 0, at most {bounds.MAX_EVAL_VALUE} (a fraction, a percentage)"))
    return float(value)


def _train_samples(path: Path, firsts: dict[str, tuple[int, Any]]) -> int | None:
    if "train_samples" not in firsts:
        return None
    number, value = firsts["train_samples"]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= bounds.MAX_EPOCH_SAMPLES:
        raise LogError(LogProblem(str(path), number, f"train_samples is {json.dumps(value)[:40]}: the training "
                                  f"split's samples, a whole number from 1 to {bounds.MAX_EPOCH_SAMPLES:g}"))
    return value


def _whole_epoch(value: Any, path: Path, number: int) -> float:
    why = schema.why_not(schema.Epochs, value, "metadata.epoch_num")
    if why:
        raise LogError(LogProblem(str(path), number, why))
    if not float(value).is_integer():
        raise LogError(LogProblem(str(path), number, f"epoch_start's epoch_num is {value:g}: an epoch starts at a "
                                  "whole epoch (log a fraction of one on eval_accuracy, as its epoch_num)"))
    return value
