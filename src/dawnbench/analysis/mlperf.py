"""MLPerf training logs (SPEC §10), both formats, read into :class:`RunSample` s.

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

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dawnbench import schema
from dawnbench.errors import FileError
from dawnbench.harness.record import Status
from dawnbench.io import read_foreign_text, strict_loads
from dawnbench.statistics import RunSample

V05 = re.compile(r":::MLPv0\.5\.0 (\S+) ([0-9.]+) \(([^)]*)\) ([A-Za-z_0-9]+)(?::\s*(.*))?")
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


def _read_v05(path: Path, text: str) -> RunSample:
    start = stop = None
    stop_value, target, last_acc, epochs = None, None, None, set()
    for number, line in enumerate(text.splitlines(), 1):
        m = V05.search(line)
        if not m:
            continue
        try:
            t = float(m.group(2))
        except ValueError:
            raise LogError(LogProblem(str(path), number, f"time {m.group(2)!r} is not a number of seconds")) from None
        key, value = m.group(4), _json_or_raw(m.group(5))
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
    return _sample(path, start, stop, epochs, _success_v05(stop_value, last_acc, target))


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
    status, epochs, eval_epochs = None, set(), set()
    for number, key, t, _value, meta in mllog_records(path, text):
        if key == "run_start" and start is not None:
            raise LogError(LogProblem(str(path), number, f"a second run_start (the first is at line {start[1]}): one "
                                                         "log holds one run — mllog appends to its file, so remove the "
                                                         "log before running again, or split it"))
        if key == "run_start":
            start = (t, number)
        elif key == "run_stop":
            stop, status = (t, number), meta.get("status")
        elif key == "epoch_start" and "epoch_num" in meta:
            epochs.add(_epoch(meta["epoch_num"], path, number))
        elif key == "eval_accuracy" and "epoch_num" in meta:
            eval_epochs.add(_epoch(meta["epoch_num"], path, number))
    return _sample(path, start, stop, epochs or eval_epochs, status == Status.SUCCESS)


# What a log's numbers can be: a time in milliseconds (any clock's, finite, not negative, under a
# thousand years of them), an epoch number of schema's range.
TimeMs = schema._number(0, 3.2e13, unit="milliseconds")


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
