"""MLPerf training logs, both formats, read into :class:`RunSample` s.

v0.5: ``:::MLPv0.5.0 <benchmark> <unix s> (<file>:<line>) <key>[: <JSON>]`` — found
anywhere in a line, since real logs interleave other program output. Epochs =
the number of distinct ``train_epoch`` values; TTA = ``run_stop`` − ``run_start``;
success = ``run_stop``'s ``{"success": …}`` when it says, else the last
``eval_accuracy`` ≥ ``eval_target``.

Newer: ``:::MLLOG {json}`` with ``time_ms``; status in ``run_stop.metadata.status``;
epochs = distinct ``epoch_num`` of ``epoch_start`` events (else of
``eval_accuracy``); TTA = ``run_stop`` − ``run_start``.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from dawnbench import bounds, schema
from dawnbench.errors import FileError, clipped
from dawnbench.io import RepeatedKey, read_foreign_text, strict_loads
from dawnbench.records.record import Status, check_point, epoch_size
from dawnbench.statistics import RunSample

V05 = re.compile(r":::MLPv0\.5\.0 (\S+) (\S+) \(([^)]*)\) ([A-Za-z_0-9]+)(?::\s*(.*))?")   # a time checked below
MLLOG = ":::MLLOG "


@dataclass
class LogProblem:
    file: str
    line: int | None
    message: str


class LogError(ValueError):
    def __init__(self, problem: LogProblem):
        super().__init__(problem.message)
        self.problem = problem


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


def read_log(path: Path) -> RunSample:
    """One MLPerf log file as a run; LogError (with file and line) when it cannot be one."""
    try:
        text = read_foreign_text(path, "MLPerf log")
    except FileError as err:
        raise LogError(LogProblem(err.path, err.line, err.reason)) from None
    if ":::MLPv0.5.0 " in text:
        return _read_v05(path, text)
    if MLLOG in text:
        return _read_mllog(path, text)
    raise LogError(LogProblem(str(path), None, "no ':::MLPv0.5.0' or ':::MLLOG' lines: not an MLPerf log"))


def in_time_order(path: Path, records: list[R]) -> list[R]:
    """A log's records — tuples of (line, key, seconds, …) as logged — in time order, checked. Lines of several
    processes arrive a little out of order (NVIDIA's published v0.5 logs by up to 16 s), so they are sorted by their
    time; a clock that goes back by more than ``CLOCK_SLACK_S`` is refused. Then: one ``run_start`` and one
    ``run_stop``, in that order; evaluations only between the two; at most ``MAX_EVENTS`` records. A LogError
    names the line and says what the log holds."""
    if len(records) > MAX_EVENTS:
        raise LogError(LogProblem(str(path), records[MAX_EVENTS][0], f"more than {MAX_EVENTS:,} MLPerf records: a "
                                  "log of one run holds far fewer; split it, or keep the run's own lines"))
    latest: tuple[int, float] | None = None
    for number, key, t, *_ in records:
        if latest is not None and t < latest[1] - CLOCK_SLACK_S:
            raise LogError(LogProblem(str(path), number, f"{key} is logged at {t:.3f} s, {latest[1] - t:.0f} s before "
                                      f"the record at line {latest[0]} ({latest[1]:.3f} s): the log's clock goes "
                                      "back, so no time in it can be trusted"))
        if latest is None or t > latest[1]:
            latest = (number, t)
    ordered = sorted(records, key=lambda r: r[2])
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
    return ordered


def _read_v05(path: Path, text: str) -> RunSample:
    start = stop = None
    stop_value, target, last_acc, epochs = None, None, None, set()
    order: list[tuple[int, str, float, str | None]] = []
    benchmark = None
    for number, line in enumerate(text.splitlines(), 1):
        m = V05.search(line)
        if not m:
            continue
        try:
            t = bounds.parse_float(m.group(2))
        except ValueError:
            t = math.nan
        if not 0 <= t <= MAX_LOG_S:   # NaN too; 1 followed by 400 zeros was read as inf
            raise LogError(LogProblem(str(path), number, f"time {clipped(m.group(2), 40)!r} is not a number of "
                                      f"seconds from 0 to {MAX_LOG_S:g} (a thousand years of a Unix clock)"))
        order.append((number, m.group(4), t, m.group(5)))
        benchmark = benchmark or m.group(1)
    for number, key, t, raw in in_time_order(path, order):
        value = _json_or_raw(raw)
        if key == "run_start" and start is None:
            start = (t, number)
        elif key == "run_stop":
            stop, stop_value = (t, number), value
        elif key == "train_epoch":
            epochs.add(_epoch(value, path, number))
        elif key == "eval_target":
            target = value
        elif key == "eval_accuracy":
            last_acc = value.get("value") if isinstance(value, dict) else value
    sample = _sample(path, start, stop, epochs, _success_v05(stop_value, last_acc, target))
    _plausible(path, benchmark, start, [], sample)
    return sample


def _success_v05(stop_value: Any, last_acc: Any, target: Any) -> bool:
    if isinstance(stop_value, dict) and "success" in stop_value:
        return bool(stop_value["success"])
    return isinstance(last_acc, (int, float)) and isinstance(target, (int, float)) and last_acc >= target


def mllog_records(path: Path, text: str) -> Iterator[tuple[int, str, float, Any, dict[str, Any]]]:
    """Each ``:::MLLOG`` line as (line number, key, seconds on the log's clock, value, metadata), checked."""
    for number, line in enumerate(text.splitlines(), 1):
        at = line.find(MLLOG)
        if at < 0:
            continue
        try:
            rec = strict_loads(line[at + len(MLLOG):])
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
        yield number, str(rec["key"]), time_ms / 1000, rec.get("value"), meta


def _read_mllog(path: Path, text: str) -> RunSample:
    start = stop = None
    status, epochs, eval_epochs, task, points = None, set(), set(), None, []
    for number, key, t, value, meta in in_time_order(path, list(mllog_records(path, text))):
        if key == "submission_benchmark":
            task = value
        elif key == "eval_accuracy":
            points.append((number, t, meta.get("epoch_num"), meta.get("samples_count"), value))
        if key == "run_start":
            start = (t, number)
        elif key == "run_stop":
            stop, status = (t, number), meta.get("status")
        elif key == "epoch_start" and "epoch_num" in meta:
            epochs.add(_epoch(meta["epoch_num"], path, number))
        elif key == "eval_accuracy" and "epoch_num" in meta:
            eval_epochs.add(_epoch(meta["epoch_num"], path, number))
    if status == Status.SUCCESS and not points:
        raise LogError(LogProblem(str(path), stop[1] if stop else None, "run_stop says success, but the log holds no "
                                  "eval_accuracy: a success is an evaluation that reached the target"))
    sample = _sample(path, start, stop, epochs or eval_epochs, status == Status.SUCCESS)
    _plausible(path, task, start, points, sample)
    return sample


# MLPerf's names of the benchmarks that are dawnbench's tasks (v0.5 logs name ImageNet's "resnet")
BENCHMARKS = {"resnet": "imagenet", "mnist": "mnist", "fashion-mnist": "fashion-mnist", "cifar10": "cifar10",
              "squad": "squad"}


def _plausible(path: Path, benchmark: Any, start: tuple[float, int] | None,
               points: list[tuple[int, float, Any, Any, Any]], sample: RunSample) -> None:
    """A log's run as physics allows it (docs/reference/documents.md, "Physics"), whatever benchmark it names or
    none: each evaluation's value a number from 0 to ``MAX_EVAL_VALUE``, its epochs no faster than one an
    ``MIN_EPOCH_S``, its epoch and samples at most ``MACHINES`` devices' samples a second; a time to a task's target
    not below its floor. A LogError names the line."""
    from dawnbench.tasks import FLOORS_S

    task = BENCHMARKS.get(benchmark) if isinstance(benchmark, str) else None
    size = epoch_size(task) if task else None
    for number, t, epoch, samples, value in points:
        if not (isinstance(value, (int, float)) and not isinstance(value, bool)
                and 0 <= value <= bounds.MAX_EVAL_VALUE):
            raise LogError(LogProblem(str(path), number, f"eval_accuracy is {json.dumps(value)[:40]}: no benchmark's "
                                      f"metric is outside 0 to {bounds.MAX_EVAL_VALUE} (a fraction, a percentage)"))
        number_or_0 = [v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0 for v in (epoch, samples)]
        if any(number_or_0) and start is not None:     # an epoch of no samples stated: its rate is still bounded
            try:
                check_point("eval_accuracy's", *number_or_0, t - start[0], bounds.MACHINES, size, task or "")
            except ValueError as err:
                raise LogError(LogProblem(str(path), number, str(err))) from None
    floor = FLOORS_S.get(task or "", 0.0)
    if sample.tta_s is not None and sample.tta_s < floor:
        raise LogError(LogProblem(str(path), None, f"run_start to run_stop is {sample.tta_s:g} s, below {floor:g} s, "
                                  f"the floor of a time to {task}'s target (about 100× below the fastest result known)"))


# What a log's numbers can be: a time in milliseconds (any clock's, finite, not negative, under a
# thousand years of them), an epoch number of schema's range; and how many records one log of one run holds.
MAX_LOG_S = 3.2e10
TimeMs = schema._number(0, MAX_LOG_S * 1000, unit="milliseconds")
MAX_EVENTS = 1_000_000
CLOCK_SLACK_S = 60.0   # how far one process's line may trail another's in a shared log
R = TypeVar("R", bound=tuple)


def _epoch(value: Any, path: Path, number: int) -> float:
    why = schema.why_not(schema.Epochs, value, "metadata.epoch_num")
    if why:
        raise LogError(LogProblem(str(path), number, why))
    return value


def _sample(path: Path, start, stop, epochs: set, succeeded: bool) -> RunSample:
    if start is None:
        raise LogError(LogProblem(str(path), None, "no run_start record"))
    if stop is None:
        raise LogError(LogProblem(str(path), None, "no run_stop record: the run did not finish"))
    tta = stop[0] - start[0]
    if tta < 0:
        raise LogError(LogProblem(str(path), stop[1], f"run_stop is {-tta:.3f} s before run_start"))
    n_epochs = float(len(epochs)) if epochs else None
    return RunSample(str(path), succeeded, tta if succeeded else None, n_epochs,
                     Status.SUCCESS if succeeded else Status.NOT_REACHED)
