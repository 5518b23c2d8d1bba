"""A tiny MLPerf-compatible event log (SPEC §4): ``:::MLLOG {json}`` lines.

Key names follow the MLPerf logging constants where one exists; the few keys this
project adds are marked below.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, TextIO

# MLPerf key names (mlperf_logging.mllog.constants)
SUBMISSION_BENCHMARK = "submission_benchmark"
SUBMISSION_DIVISION = "submission_division"
SEED = "seed"
GLOBAL_BATCH_SIZE = "global_batch_size"
INIT_START = "init_start"
INIT_STOP = "init_stop"
RUN_START = "run_start"
RUN_STOP = "run_stop"
EPOCH_STOP = "epoch_stop"
EVAL_START = "eval_start"
EVAL_STOP = "eval_stop"
EVAL_ACCURACY = "eval_accuracy"
EVAL_TARGET = "eval_target"
TRAIN_SAMPLES = "train_samples"
EVAL_SAMPLES = "eval_samples"
PRECISION = "lowest_numerical_precision_in_linear"
# Added here
ENTRY = "entry"
HPARAMS = "hparams"
CHECKPOINT = "checkpoint"
COMPILE = "compile"

POINT_IN_TIME = "POINT_IN_TIME"
INTERVAL_START = "INTERVAL_START"
INTERVAL_END = "INTERVAL_END"


def format_line(key: str, value: Any, event_type: str = POINT_IN_TIME,
                metadata: dict | None = None, time_ms: float | None = None) -> str:
    record = {"namespace": "", "time_ms": round(time.time() * 1000 if time_ms is None else time_ms, 3),
              "event_type": event_type, "key": key, "value": value, "metadata": metadata or {}}
    return ":::MLLOG " + json.dumps(record)


class EventLog:
    """Appends one complete line per event (a single write), flushed at once."""

    def __init__(self, path: Path):
        self._file: TextIO = open(path, "a", encoding="utf-8")

    def event(self, key: str, value: Any = None, metadata: dict | None = None) -> None:
        self._write(format_line(key, value, POINT_IN_TIME, metadata))

    def start(self, key: str, value: Any = None, metadata: dict | None = None) -> None:
        self._write(format_line(key, value, INTERVAL_START, metadata))

    def end(self, key: str, value: Any = None, metadata: dict | None = None) -> None:
        self._write(format_line(key, value, INTERVAL_END, metadata))

    def _write(self, line: str) -> None:
        self._file.write(line + "\n")
        self._file.flush()

    def sync(self) -> None:
        """Push the log to disk (called after every evaluation)."""
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def parse_line(line: str) -> dict | None:
    """The event of a ``:::MLLOG`` line, or None for any other line."""
    marker = line.find(":::MLLOG ")
    if marker < 0:
        return None
    return json.loads(line[marker + len(":::MLLOG "):])
