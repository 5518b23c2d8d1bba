"""The run's event log, written with MLCommons' own ``mlperf_logging.mllog``.

Lines are ``:::MLLOG {"namespace", "time_ms", "event_type", "key", "value", "metadata"}``
in mllog's format (its metadata adds the calling ``file`` and ``lineno``), with mllog's
key constants, so MLCommons' compliance checker reads them: ``dawnbench check-log``
runs its common rules (``compliance.py``). What the checker's common rules require and
how this project fills it:

* ``submission_division`` is ``open`` for every run (no run here follows a closed
  MLPerf reference); whether the run kept the task's threshold is this project's
  own key ``dawnbench_official``.
* ``submission_org`` / ``submission_platform``: ``--org`` / ``--platform``, else the
  user's login name and the hardware description.
* ``cache_clear``: ``false`` — the harness does not drop the OS page cache.
* ``train_samples`` / ``eval_samples``: the sizes of the training and scored splits.
* ``block_start`` / ``block_stop`` around each stretch of training between two
  evaluation points (``samples_count`` and ``first_epoch_num`` in the metadata), and
  ``eval_start`` / ``eval_stop`` around each evaluation.

Each line is appended whole or not at all (a full disk never leaves a torn line, and a
line that could not be written raises instead of vanishing); ``sync`` pushes the file
to disk.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from pathlib import Path
from typing import Any

from mlperf_logging.mllog import constants as C  # noqa: N812 - mllog's own name for them
from mlperf_logging.mllog.mllog import MLLogger

# MLPerf key names (mllog's constants)
SUBMISSION_BENCHMARK = C.SUBMISSION_BENCHMARK
SUBMISSION_DIVISION = C.SUBMISSION_DIVISION
SUBMISSION_ORG = C.SUBMISSION_ORG
SUBMISSION_PLATFORM = C.SUBMISSION_PLATFORM
SUBMISSION_STATUS = C.SUBMISSION_STATUS
CACHE_CLEAR = C.CACHE_CLEAR
SEED = C.SEED
GLOBAL_BATCH_SIZE = C.GLOBAL_BATCH_SIZE
TRAIN_SAMPLES = C.TRAIN_SAMPLES
EVAL_SAMPLES = C.EVAL_SAMPLES
INIT_START = C.INIT_START
INIT_STOP = C.INIT_STOP
RUN_START = C.RUN_START
RUN_STOP = C.RUN_STOP
BLOCK_START = C.BLOCK_START
BLOCK_STOP = C.BLOCK_STOP
EVAL_START = C.EVAL_START
EVAL_STOP = C.EVAL_STOP
EVAL_ACCURACY = C.EVAL_ACCURACY
EVAL_TARGET = "eval_target"  # MLPerf v0.5's name; mllog has no constant for it
PRECISION = "lowest_numerical_precision_in_linear"  # checked by the common rules when present
OPEN = C.OPEN
# Added here
OFFICIAL = "dawnbench_official"
SUBSET = "dawnbench_subset"                  # the data, where not the task's split: "quick", or an imported subset's name
ENTRY = "entry"
HPARAMS = "hparams"
CHECKPOINT = "checkpoint"
COMPILE = "compile"
WORLD_SIZE = "dawnbench_world_size"          # workers under torchrun (SPEC §13)
COMMUNICATION = "dawnbench_comm_overhead_pct"  # exposed gradient communication / time per epoch
STATUS_CORRECTED = "dawnbench_status_corrected"  # the launcher knew better than rank 0 (a worker died)

POINT_IN_TIME = C.POINT_IN_TIME
INTERVAL_START = C.INTERVAL_START
INTERVAL_END = C.INTERVAL_END


class _LineSink(logging.Handler):
    """Appends each record to the file as one whole line or not at all.

    A line is written with one ``write`` on an ``O_APPEND`` descriptor; if the disk fills
    mid-line, the file is cut back to where the line began, so a reader never sees a torn
    line. The error is kept for :class:`EventLog` to raise (``logging`` would swallow it).
    """

    def __init__(self, path: Path):
        super().__init__(logging.INFO)
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        self.error: OSError | None = None

    def emit(self, record: logging.LogRecord) -> None:
        line = (self.format(record) + "\n").encode("utf-8")
        start = os.fstat(self.fd).st_size
        try:
            done = os.write(self.fd, line)
            while done < len(line):
                done += os.write(self.fd, line[done:])
        except OSError as err:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, start)
            self.error = err

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        super().close()


class EventLog:
    """An mllog logger of one run, writing to its own file."""

    def __init__(self, path: Path):
        # A logger object of its own, not registered with `logging`: runs in one process
        # never share a handler, and nothing outlives the run.
        self._logger = logging.Logger(f"dawnbench.events:{path}", level=logging.INFO)
        self._sink = _LineSink(path)
        self._logger.addHandler(self._sink)
        # stack offset 3: the caller of event/start/end is the one named in the metadata
        self._mllog = MLLogger(logger=self._logger, default_namespace="", default_stack_offset=3)

    def _checked(self, log, key: str, value: Any, metadata: dict | None) -> None:
        # a diverged loss is NaN, which JSON cannot hold: written as the text "nan", so that every JSON reader (this
        # project's strict one among them) reads the line dawnbench wrote
        log(key, _finite(value), metadata=_finite(metadata))
        if self._sink.error is not None:  # the line is not in the file: say so, never silently
            err, self._sink.error = self._sink.error, None
            raise err

    def event(self, key: str, value: Any = None, metadata: dict | None = None) -> None:
        self._checked(self._mllog.event, key, value, metadata)

    def start(self, key: str, value: Any = None, metadata: dict | None = None) -> None:
        self._checked(self._mllog.start, key, value, metadata)

    def end(self, key: str, value: Any = None, metadata: dict | None = None) -> None:
        self._checked(self._mllog.end, key, value, metadata)

    def sync(self) -> None:
        """Push the log to disk (called after every evaluation)."""
        os.fsync(self._sink.fd)

    def close(self) -> None:
        self._sink.close()
        self._logger.removeHandler(self._sink)


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return str(value) if isinstance(value, float) and not math.isfinite(value) else value


def parse_line(line: str) -> dict | None:
    """The event of a ``:::MLLOG`` line, or None for any other line."""
    marker = line.find(":::MLLOG ")
    if marker < 0:
        return None
    return json.loads(line[marker + len(":::MLLOG "):])
