"""An MLPerf training log as a run folder (``dawnbench import-log``; docs/guide/your-own-script.md): what every
command that reads runs — ``export``, ``validate``'s submission, ``compare``, ``report`` — then reads as it reads
an entry's run, the record saying ``self_reported`` (the accuracy is the log's, not the harness's scorer's).

    folder = import_log(Path("result_0.txt"), Path("runs"), task="mnist")

What is read (the ``:::MLLOG`` format, as ``mlperf_logging.mllog`` writes it):

* ``run_start`` / ``run_stop`` (its ``metadata.status``: ``success``, ``aborted``, else not reached) — the time to
  accuracy is MLPerf's: ``run_stop`` − ``run_start``, evaluations included (the record's ``imported.clock`` says
  so; dawnbench's own clock stops during evaluation);
* each ``eval_accuracy`` (value on the task's scale, ``metadata.epoch_num`` required, ``samples_count`` if
  given) — an evaluation of the record, timed from ``run_start``; a success's passing evaluation is the first at
  or above the target, and the evaluations after it are not kept;
* ``eval_target`` (else the task's own threshold), ``seed``, ``submission_benchmark`` (the task, unless
  ``task`` is given), ``submission_platform`` (the hardware's one line), ``global_batch_size``, ``entry``
  (the run's name; else the log file's name).

The folder holds ``result.json``, ``epochs.tsv`` and ``events.log`` (the log's ``:::MLLOG`` lines, unchanged).
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

from dawnbench import bounds, schema
from dawnbench.errors import DawnbenchError
from dawnbench.io import atomic_write_json, atomic_write_text, read_foreign_text
from dawnbench.records.mlperf import LogError, LogProblem, in_time_order, mllog_records, read_log
from dawnbench.records.record import Evaluation, RunResult, Status, check_record, epochs_tsv, new_run_dir
from dawnbench.tasks import TASKS, get_task

CLOCK = "MLPerf's: run_start to run_stop, evaluations included"


LOG_FIX = "The log's figures cannot all be true together: fix the log (or its --task, --scale), or import another."


def _problem(path: Path, line: int | None, message: str) -> DawnbenchError:
    return DawnbenchError(f"{path}{f':{line}' if line else ''}: {message}")


def import_log(path: Path, out: Path, task: str | None = None, scale: float = 1.0) -> Path:
    """The run folder made from the MLPerf log at ``path`` under ``out``; ``scale`` multiplies each
    ``eval_accuracy`` onto the task's scale (100 for a log of fractions of a task in percent)."""
    path, out = Path(path), Path(out)
    bounds.check_option("--scale", scale)
    if task is not None and task not in TASKS:     # the option first: the log is read for its task
        raise DawnbenchError(f"--task {task!r}: not a dawnbench task; use one of {', '.join(sorted(TASKS))}.")
    text, records = _log_records(path)
    first = {key: (number, t, value, meta) for number, key, t, value, meta in reversed(records)}
    last = {key: (number, t, value, meta) for number, key, t, value, meta in records}
    name = task or first.get("submission_benchmark", (None, None, None, None))[2]
    if not isinstance(name, str) or name not in TASKS:
        if task is not None:
            raise DawnbenchError(f"--task {task!r}: not a dawnbench task; use one of {', '.join(sorted(TASKS))}.")
        said = "names no submission_benchmark" if name is None else f"'s submission_benchmark {name!r} is not a " \
                                                                       "dawnbench task"
        raise _problem(path, first.get("submission_benchmark", (None,))[0],
                       f"the log {said}; name its task with --task ({', '.join(sorted(TASKS))}).")
    the_task = get_task(name)
    start, stop = first["run_start"][1], last["run_stop"][1]
    said = last["run_stop"][3].get("status")
    status = {"success": Status.SUCCESS, "aborted": Status.ABORTED}.get(said if isinstance(said, str) else "",
                                                                      Status.NOT_REACHED)
    if status == Status.SUCCESS and stop <= start:
        raise _problem(path, last["run_stop"][0], "run_stop says success at the very time of run_start: no time "
                                                  "passed, so there is no time to accuracy to import.")
    threshold = first["eval_target"][2] if "eval_target" in first else the_task.threshold
    why = schema.why_not(schema._number(the_task.metric.low, the_task.metric.high, unit=the_task.metric.name),
                         threshold, "eval_target")
    if why:
        raise _problem(path, first["eval_target"][0], f"{why}: {the_task.name}'s target on its own scale.")
    evals = _evaluations(path, records, start, stop, the_task, threshold, status, scale)
    seed = first.get("seed", (None, None, None))[2]
    batch = first.get("global_batch_size", (None, None, None))[2]
    platform = first.get("submission_platform", (None, None, None))[2]
    if isinstance(platform, str):   # one line of text for the tables and the board: no control characters
        platform = "".join(c if c.isprintable() else " " for c in platform[:200]).strip()
    entry = first.get("entry", (None, None, None))[2]
    entry = entry if isinstance(entry, str) and 0 < len(entry) <= 60 and entry.isprintable() else path.stem[:60]
    passing = evals[-1] if status == Status.SUCCESS else None
    started = dt.datetime.fromtimestamp(start, dt.timezone.utc) if 1e9 < start < 1e11 else None   # a Unix clock
    result = RunResult(
        task=the_task.name, entry=entry, status=status, threshold=threshold,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**63 else None,
        official=threshold == the_task.threshold, metric=the_task.metric.name,
        time_to_accuracy_s=passing.timed_s if passing else None, wall_s=stop - start, timed_s=stop - start,
        epochs_to_target=passing.epoch if passing and passing.epoch > 0 else None,
        samples_to_target=passing.samples if passing and passing.samples > 0 else None, evals=evals,
        hparams={"global_batch_size": batch} if isinstance(batch, int) and not isinstance(batch, bool) else {},
        hardware={"platform": platform} if isinstance(platform, str) and platform else {},
        self_reported=True, imported={"log": str(path), "clock": CLOCK, "scale": scale},
        started_at=started.isoformat(timespec="seconds") if started else "")
    check_record(result.to_dict(), path, fix=LOG_FIX)   # what every reader will accept of it, before a folder is made
    folder = new_run_dir(out, the_task.name, entry.replace("/", "-"), result.seed or 0)
    result.run_dir = str(folder)
    atomic_write_text(folder / "events.log", "".join(line + "\n" for line in text.splitlines() if ":::MLLOG " in line))
    atomic_write_text(folder / "epochs.tsv", epochs_tsv(result, the_task.metric.columns))
    atomic_write_json(folder / "result.json", result.to_dict())
    return folder


def _log_records(path: Path) -> tuple[str, list]:
    """The log's text and its ``:::MLLOG`` records in time order, once ``analyze``'s reader has read it (one
    paragraph naming the line if not)."""
    try:
        read_log(path)                                 # the log as `analyze` reads it: run_start, run_stop, times
        text = read_foreign_text(path, "MLPerf log")
        if ":::MLLOG " not in text:
            raise LogError(LogProblem(str(path), None, "no ':::MLLOG' lines (a v0.5 ':::MLPv0.5.0' log is read by "
                                                       "`analyze` and `compare`, not imported)"))
        records = in_time_order(path, list(mllog_records(path, text)))
    except LogError as err:
        raise _problem(Path(err.problem.file), err.problem.line, err.problem.message + ".") from None
    return text, records


def _evaluations(path: Path, records: list, start: float, stop: float, task: Any, threshold: float, status: str,
                 scale: float) -> list[Evaluation]:
    """The log's evaluations as the record's: up to the first passing one for a success (timed at run_stop)."""
    evals: list[Evaluation] = []
    metric = task.metric
    for number, key, t, value, meta in records:
        if key != "eval_accuracy":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value * scale) \
                or not metric.low <= value * scale <= metric.high:
            raise _problem(path, number, f"eval_accuracy {value!r}{f' × {scale:g}' if scale != 1 else ''} is not "
                                         f"{task.name}'s {metric.name} (a number from {metric.low:g} to "
                                         f"{metric.high:g}).")
        for field, kind in (("epoch_num", schema.Epochs), ("samples_count", schema.Count)):
            if field in meta or field == "epoch_num":
                why = schema.why_not(kind, meta.get(field), f"metadata.{field}")
                if why:
                    raise _problem(path, number, f"eval_accuracy's {why}: the importer places each evaluation "
                                                 "by its epoch_num (and samples_count, if given).")
        seen = Evaluation(meta["epoch_num"], meta.get("samples_count", 0), t - start, value * scale)  # in time order
        if evals and (seen.epoch < evals[-1].epoch or seen.samples < evals[-1].samples):
            raise _problem(path, number, "eval_accuracy goes back in epoch_num or samples_count: evaluations are "
                                         "logged in the order they were taken.")
        evals.append(seen)
        if status == Status.SUCCESS and seen.value >= threshold:
            seen.timed_s = stop - start                  # MLPerf's time to accuracy: run_stop − run_start
            return evals
    if status == Status.SUCCESS:
        fractions = evals and scale == 1 and metric.high > 1 and all(e.value <= 1 for e in evals)
        raise _problem(path, None, f"run_stop says success, but no eval_accuracy reached the target {threshold:g}; "
                                   "a success is an evaluation at or above eval_target." + (
                                       f" Its accuracies are fractions and {task.name}'s {metric.name} is measured "
                                       "in percent: import it with --scale 100." if fractions else ""))
    return evals
