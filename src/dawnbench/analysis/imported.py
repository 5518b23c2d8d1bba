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
from dawnbench.io import atomic_write_json, atomic_write_text, read_foreign_lines
from dawnbench.records.mlperf import LogError, LogRun, read_run
from dawnbench.records.record import Evaluation, RunResult, check_record, epoch_size, epochs_tsv, new_run_dir
from dawnbench.tasks import QUICK, TASKS, get_task

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
    try:
        run = read_run(path, task, scale, bounds.MAX_EVALUATIONS)    # the log as `analyze` and `check-log` read it
    except LogError as err:
        raise _problem(Path(err.problem.file), err.problem.line, err.problem.message + ".") from None
    if run.v05:
        raise _problem(path, None, "no ':::MLLOG' lines (a v0.5 ':::MLPv0.5.0' log is read by `analyze` and "
                                   "`compare`, not imported).")
    if run.task is None:
        said = "names no submission_benchmark" if "submission_benchmark" not in run.firsts else \
            f"'s submission_benchmark {run.first('submission_benchmark')!r} is not a dawnbench task"
        raise _problem(path, run.firsts.get("submission_benchmark", (None,))[0],
                       f"the log {said}; name its task with --task ({', '.join(sorted(TASKS))}).")
    the_task = get_task(run.task)
    threshold = run.target * scale if run.target is not None else the_task.threshold
    if run.target is not None and threshold <= 1 < the_task.metric.high and all(e.value <= 1 for e in run.evals):
        raise _problem(path, run.firsts["eval_target"][0], f"eval_target {run.target:g} and every eval_accuracy are "
                       f"fractions, and {the_task.name}'s {the_task.metric.name} is measured in percent: import it "
                       "with --scale 100.")
    why = schema.why_not(schema._number(the_task.metric.low, the_task.metric.high, unit=the_task.metric.name),
                         threshold, "eval_target")
    if why:
        raise _problem(path, run.firsts["eval_target"][0], f"{why}: {the_task.name}'s target on its own scale.")
    subset = _subset(run, the_task.name)
    evals = _evaluations(path, run, the_task, threshold, scale)
    seed, batch, platform = run.first("seed"), run.first("global_batch_size"), run.first("submission_platform")
    if isinstance(platform, str):   # one line of text for the tables and the board: no control characters
        platform = "".join(c if c.isprintable() else " " for c in platform[:200]).strip()
    entry = run.first("entry")
    if entry is not None and (not isinstance(entry, str) or schema.why_not(schema.Label, entry, "entry")):
        why = schema.why_not(schema.Label, entry, "entry") if isinstance(entry, str) else f"entry is {entry!r}"
        raise _problem(path, run.firsts["entry"][0], f"{why}: the log's entry names the run in every table; write it "
                                                     "as printable text in one script, or leave the key out (the "
                                                     "log's file name is used).")
    entry = entry if isinstance(entry, str) and len(entry) <= 60 else path.stem[:60]
    passing = evals[-1] if run.succeeded else None
    started = dt.datetime.fromtimestamp(run.start_s, dt.timezone.utc) if 1e9 < run.start_s < 1e11 else None   # Unix
    result = RunResult(
        task=the_task.name, entry=entry, status=run.status, threshold=threshold,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**63 else None,
        official=threshold == the_task.threshold and subset is None and run.first("dawnbench_official") is not False,
        metric=the_task.metric.name, subset=subset,
        time_to_accuracy_s=passing.timed_s if passing else None, wall_s=run.tta_s, timed_s=run.tta_s,
        epochs_to_target=passing.epoch if passing and passing.epoch > 0 else None,
        samples_to_target=passing.samples if passing and passing.samples > 0 else None, evals=evals,
        hparams={"global_batch_size": batch} if isinstance(batch, int) and not isinstance(batch, bool) else {},
        hardware={"platform": platform} if isinstance(platform, str) and platform else {},
        self_reported=True, imported={"log": str(path), "clock": CLOCK, "scale": scale},
        started_at=started.isoformat(timespec="seconds") if started else "")
    check_record(result.to_dict(), path, fix=LOG_FIX)   # what every reader will accept of it, before a folder is made
    folder = new_run_dir(out, the_task.name, entry.replace("/", "-"), result.seed or 0)
    result.run_dir = str(folder)
    atomic_write_text(folder / "events.log", "".join(line + "\n" for _, line in read_foreign_lines(path, "MLPerf log")
                                                     if ":::MLLOG " in line))
    atomic_write_text(folder / "epochs.tsv", epochs_tsv(result, the_task.metric.columns))
    atomic_write_json(folder / "result.json", result.to_dict())
    return folder


def _subset(run: LogRun, task: str) -> str | None:
    """The data the log's run trained on, as a record names it: the subset dawnbench's own log names, the task's
    split (None), or its quick trial's items (``train_samples``; the log's reader refuses any other)."""
    said = run.first("dawnbench_subset")      # dawnbench's own log names an imported subset
    if isinstance(said, str) and said:
        return said
    return QUICK if run.train_samples is not None and run.train_samples == epoch_size(task, QUICK) else None


def _evaluations(path: Path, run: LogRun, task: Any, threshold: float, scale: float) -> list[Evaluation]:
    """The log's evaluations as the record's: up to the first passing one for a success (timed at run_stop)."""
    evals: list[Evaluation] = []
    metric = task.metric
    for e in run.evals:
        if not math.isfinite(e.value * scale) or not metric.low <= e.value * scale <= metric.high:
            raise _problem(path, e.line, f"eval_accuracy {e.value!r}{f' × {scale:g}' if scale != 1 else ''} is not "
                                         f"{task.name}'s {metric.name} (a number from {metric.low:g} to "
                                         f"{metric.high:g}).")
        if e.epoch is None:
            raise _problem(path, e.line, "eval_accuracy has no metadata.epoch_num: the importer places each "
                                         "evaluation by its epoch_num (and samples_count, if given).")
        seen = Evaluation(e.epoch, e.samples or 0, e.at_s, e.value * scale)  # in time order
        if evals and (seen.epoch < evals[-1].epoch or seen.samples < evals[-1].samples):
            raise _problem(path, e.line, "eval_accuracy goes back in epoch_num or samples_count: evaluations are "
                                         "logged in the order they were taken.")
        evals.append(seen)
        if run.succeeded and seen.value >= threshold:
            seen.timed_s = run.tta_s                     # MLPerf's time to accuracy: run_stop − run_start
            return evals
    return evals
