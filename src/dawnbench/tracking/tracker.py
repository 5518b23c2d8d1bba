"""Your own training loop under the harness's clock and record (docs/guide/your-own-script.md).

    import dawnbench
    with dawnbench.track("mnist", predict=lambda x: model(x.float().div(255).unsqueeze(1))) as run:
        for epoch in range(1, 11):
            ...                                          # one epoch of your loop
            if run.evaluate(epoch=epoch, samples=epoch * 60_000, loss=loss):
                break                                    # the target was reached (or a budget spent)
    print(run.result.status, run.result.time_to_accuracy_s, run.dir)

The steps :func:`dawnbench.harness.driver.execute` takes for an entry, driven by the script's calls: ``start``
opens the record and starts the clock (``harness/core.py``'s timed window), ``evaluate`` stops it and scores the
model (with ``predict``, by the harness's scorer; without it, the script's ``accuracy=``, recorded
``self_reported``), ``finish`` writes the status. ``quick=True`` is a quick trial; ``profile_steps=N`` (or
``DAWNBENCH_PROFILE_STEPS=N``) profiles N optimizer steps into ``RUN_DIR/profile/``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from dawnbench import data, environment, schema
from dawnbench.distributed.world import World
from dawnbench.entries import Entry, Progress, TrainContext
from dawnbench.errors import DawnbenchError, printable
from dawnbench.experiments.profile import ProfileOptions, summarise, write_profile
from dawnbench.harness.core import clock_for, seed_everything, timed
from dawnbench.harness.cost import HarnessCost
from dawnbench.harness.observer import RunObserver
from dawnbench.harness.options import RunOptions, prepare
from dawnbench.harness.progress import ProgressProbe
from dawnbench.harness.recorder import RankZeroRecorder, Verdict
from dawnbench.io import MAX_JSON_DEPTH, json_depth
from dawnbench.precision import PRECISIONS
from dawnbench.profiling.flops import training_flops_per_sample
from dawnbench.profiling.load import against_last, watched
from dawnbench.profiling.ops import StepWindow
from dawnbench.profiling.roofs import measure_roofs
from dawnbench.profiling.steps import StepCounter
from dawnbench.records import mllog
from dawnbench.records.record import RunResult, Status, new_run_dir
from dawnbench.records.selection import disturbance

PROFILE_ENV = "DAWNBENCH_PROFILE_STEPS"   # profile a window of a tracked run without editing the script
PROFILE_WARM_STEPS = 3                    # as `dawnbench profile`'s default --warm-steps
MAX_PROFILE_STEPS = 10_000
NAME_CHARS = 60                           # a run's name is part of its folder's and its submission's file names


class TrackedScript(Entry):
    """The entry a tracked script stands in for: what the record, the scorer and ``predict`` need of an entry.
    Its training is the script's own loop, so the harness never calls ``train`` (nor a warm-up); ``predict``
    is the function the script handed to :func:`track`, run as given (the precision is the script's own)."""

    warmup_steps = 0
    precisions = ()
    own_precisions = PRECISIONS            # declared by the script: recorded, never imposed
    predict_fn: Callable[[Any], Any] | None = None
    flop_probe: tuple[torch.nn.Module, torch.Tensor] | None = None
    classes: int | None = None             # the task's classes (None: unknown, or answers that are text)

    def train(self, ctx: TrainContext) -> Iterator[Progress]:
        return iter(())                    # the script trains in its own loop

    def predict(self, inputs: Any) -> Any:
        assert self.predict_fn is not None, "a self-reported run is never scored by the harness"
        answers, n = self.predict_fn(inputs), len(inputs)
        if isinstance(answers, (list, tuple)) and len(answers) == n and all(isinstance(a, str) for a in answers):
            return answers               # SQuAD: one answer per question
        why = _not_answers(answers, n, self.classes)
        if why:
            raise DawnbenchError(f"track(predict=...) returned {why} for a batch of {n}: give one row of "
                                 f"{self.classes or 'C'} finite class scores (N×C) or one whole-number label from 0 "
                                 f"to {self.classes - 1 if self.classes else 'C-1'} (N) per input, as a tensor — or, "
                                 "for SQuAD, one answer string per question.")
        return torch.as_tensor(answers)

    def flop_model(self) -> tuple[torch.nn.Module, torch.Tensor] | None:
        return self.flop_probe


def _not_answers(answers: Any, n: int, classes: int | None) -> str | None:
    """What is wrong with a batch of class scores or labels (None: nothing)."""
    if isinstance(answers, np.ndarray):
        if answers.dtype.kind not in "biuf":
            return f"an array of {answers.dtype}"
        answers = torch.as_tensor(answers)
    if not isinstance(answers, torch.Tensor):
        return type(answers).__name__
    if answers.layout != torch.strided or answers.is_meta or answers.is_complex() or answers.dtype == torch.bool:
        return f"a {answers.layout} {answers.dtype} tensor" + (" on the meta device" if answers.is_meta else "")
    if answers.ndim not in (1, 2) or len(answers) != n or (answers.ndim == 2 and answers.shape[1] < 1):
        return f"shape {tuple(answers.shape)}"
    if answers.ndim == 2:
        if classes and answers.shape[1] != classes:
            return f"{answers.shape[1]} scores per input, where the task has {classes} classes"
        return None if torch.isfinite(answers.detach().float()).all() else "scores that are not all finite"
    if answers.is_floating_point():
        return f"labels of {answers.dtype} (whole numbers, an integer tensor)"
    low, high = int(answers.min()), int(answers.max())
    return None if 0 <= low and (not classes or high < classes) else f"labels from {low} to {high}"



def _epochs(epoch: float) -> str:
    """Epochs as a reader takes them: at most two decimals, no trailing zeros (a trainer's 3.2500000001 is 3.25, its
    1.0 is 1); below 0.01, two significant digits (an evaluation early in the first epoch is not "0")."""
    return f"{epoch:.2g}" if 0 < epoch < 0.01 else f"{round(epoch, 2):g}"


class _Observer(RunObserver):
    """One line per event on stderr: where the record is, and each evaluation (``quiet=True``: nothing)."""

    def run_started(self, index: int, total: int, result: RunResult) -> None:
        how = "self-reported accuracy" if result.self_reported else "scored by the harness"
        steps = (result.tracked or {}).get("profile_steps")
        how += f"; profiling {steps} steps: unofficial" if steps else ""
        print(printable(f"dawnbench: tracking {result.task} · {result.entry} ({how}) → {result.run_dir}"),
              file=sys.stderr)

    def evaluated(self, result: RunResult, progress: Progress, samples_per_s: float | None) -> None:
        last = result.evals[-1]
        rate = f", {samples_per_s:,.0f} samples/s" if samples_per_s else ""
        print(f"dawnbench: epoch {_epochs(last.epoch)}: {result.metric} {last.value:.4f} (target {result.threshold:g}) at "
              f"{last.timed_s:.1f} s timed{rate}", file=sys.stderr)

    def run_finished(self, result: RunResult) -> None:
        # which target the time is to, on the line: a tracked script's target= may not be the task's
        official = "" if result.official else ", unofficial"
        target = f"{result.metric} ≥ {result.threshold:g}{official}"
        tta = (f", time to accuracy {result.time_to_accuracy_s:.1f} s to {target}" if result.time_to_accuracy_s
               else f" (target {target})")
        # the last line is the one a user reads and copies: a flagged run says so on it, not only in its record
        said = disturbance([result])
        flagged = f", {said}: its time is suspect (analyze, compare, report and export leave it out unless " \
                  "--include-suspect)" if said else ""
        print(printable(f"dawnbench: {result.status}{tta}{flagged} — {result.run_dir}"), file=sys.stderr)


class _Recorder(RankZeroRecorder):
    """Rank 0's recorder, scoring with the script's own accuracy when the run is self-reported."""

    reported: Callable[[], float] | float | None = None

    def measure(self, entry: Entry) -> tuple[float, dict[str, float]]:
        if self.result is not None and not self.result.self_reported:
            return super().measure(entry)
        value = self.reported() if callable(self.reported) else self.reported
        return _accuracy(_plain(value), self.prep.task, "the value accuracy() returned"), {}

    def past_budget(self, entry: Entry, progress: Progress, cause: str) -> None:
        """An evaluation the script reached after a budget was spent: recorded as one a budget took (``stopped_by``),
        never a time to accuracy — the script, not the target, chose its moment (docs/rules.md)."""
        assert self.result is not None
        budget = self.options.max_seconds if cause == "max_seconds" else self.options.max_epochs
        self.result.error = (f"{cause}={budget:g} was spent before the script's evaluation at epoch {_epochs(progress.epoch)} "
                             f"({self.clock.timed_s:.2f} timed seconds)")
        self._score(entry, progress, None, stopped_by=cause)


def _accuracy(value: Any, task: Any, what: str) -> float:
    metric = task.metric
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not metric.low <= value <= metric.high:
        raise DawnbenchError(f"evaluate(accuracy=...): {what} is {value!r}; {task.name}'s {metric.name} is a number "
                             f"from {metric.low:g} to {metric.high:g}. Return the "
                             "script's own figure on that scale.")
    return float(value)


def _loss(loss: Any) -> float | torch.Tensor | None:
    if loss is None or (isinstance(loss, torch.Tensor) and loss.numel() == 1) or (
            isinstance(loss, (int, float)) and not isinstance(loss, bool)):
        return loss
    what = f"a tensor of {loss.numel()} elements" if isinstance(loss, torch.Tensor) else repr(loss)[:80]
    raise DawnbenchError(f"evaluate(loss=...): {what}; give the recent training loss as a number or a one-element "
                         "tensor (a non-finite loss ends the run as diverged), or leave it out.")


def _profile_steps(given: int | None) -> int | None:
    where = "profile_steps"
    if given is None and os.environ.get(PROFILE_ENV, "").strip():
        where, text = PROFILE_ENV, os.environ[PROFILE_ENV].strip()
        given = int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else text  # type: ignore[assignment]
    if given is None:
        return None
    if isinstance(given, bool) or not isinstance(given, int) or not 1 <= given <= MAX_PROFILE_STEPS:
        raise DawnbenchError(f"{where}={given!r}: the optimizer steps to profile are a whole number from 1 to "
                             f"{MAX_PROFILE_STEPS:,} (after {PROFILE_WARM_STEPS} warm steps and a census step); "
                             f"unset {PROFILE_ENV} to profile nothing.")
    return given


def _hparams(given: dict[str, Any] | None) -> dict[str, Any]:
    if given is None:
        return {}
    if isinstance(given, dict) and json_depth(given) > MAX_JSON_DEPTH - 3:   # a submission holds it three deep
        raise DawnbenchError(f"track(hparams=...): nested more than {MAX_JSON_DEPTH - 3} deep; a run record and the "
                             f"submission exported from it are read to {MAX_JSON_DEPTH} levels. Give the script's "
                             "hyperparameters flatter (name → value).")
    try:
        text = json.dumps(given, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as err:
        raise DawnbenchError(f"track(hparams=...): {err}. The hyperparameters are recorded in result.json: give a "
                             "dict of numbers, strings, booleans, lists and dicts (finite numbers only).") from None
    if not isinstance(given, dict) or len(text) > schema.MAX_MESSAGE * 64:
        raise DawnbenchError("track(hparams=...): give a dict of the script's hyperparameters (name → value), of at "
                             f"most {schema.MAX_MESSAGE * 64:,} characters as JSON.")
    for key, bound in Entry.hparam_bounds.items():   # the ones the harness reads: batch_size, epochs
        if key in given:
            bound.check(f"track(hparams={{'{key}': ...}})", given[key])
    return json.loads(text)


def _one_thread(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` refused in one paragraph while another thread is inside the tracker: one run has one clock, and
    two threads evaluating at once tore it (a segment opened inside another, evaluations out of order)."""
    @functools.wraps(method)
    def alone(self: Tracker, *args: Any, **kwargs: Any) -> Any:
        if self._owner == threading.get_ident():    # called back from predict or accuracy(): _started says why
            return method(self, *args, **kwargs)
        if not self._lock.acquire(blocking=False):
            raise DawnbenchError(f"{method.__name__}() while another thread is inside the tracker: a run is timed by "
                                 "one training loop, so call evaluate(), pause(), resume() and finish() from one "
                                 "thread (or hold a lock of your own around them).")
        self._owner = threading.get_ident()
        try:
            return method(self, *args, **kwargs)
        finally:
            self._owner = None
            self._lock.release()
    return alone


def _classes(task: Any) -> int | None:
    name = data.base_name(getattr(task, "dataset", task if isinstance(task, str) else ""))
    spec = data.DATASETS.get(name) if isinstance(name, str) else None
    return spec.num_classes or None if spec is not None else None


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (np.mean of a float32 array is one)."""
    return value.item() if isinstance(value, np.generic) else value


def _name(given: str | None) -> str:
    name = given if given is not None else Path(sys.argv[0] or "tracked").stem or "tracked"
    if not isinstance(name, str) or not 1 <= len(name) <= NAME_CHARS or not name.isprintable() \
            or any(c in name for c in "/\\") or name.strip(". ") == "" or name != name.strip():
        raise DawnbenchError(f"track(name={given!r}): the run's name is 1 to {NAME_CHARS} printable characters "
                             "without / or \\ or spaces at its ends (it is part of the run folder's name); e.g. name=\"my-cnn\".")
    return name


class Tracker:
    """A script's training run under the harness's rules; see the module docstring. Use :func:`track`."""

    _profiling: str | None = None      # the run folder of the profiled run in this process (torch profiles one)

    def __init__(self, task: str = "mnist", *, target: float | None = None, out: str | Path = "runs",
                 name: str | None = None, predict: Callable[[Any], Any] | None = None,
                 model: torch.nn.Module | None = None, example: torch.Tensor | None = None, seed: int = 0,
                 hparams: dict[str, Any] | None = None, precision: str = "fp32", device: str = "auto",
                 instance: str | None = None, cost_per_hour: float | None = None, max_seconds: float | None = None,
                 max_epochs: float | None = None, profile_steps: int | None = None, quick: bool = False,
                 quiet: bool = False) -> None:
        if predict is not None and not callable(predict):
            raise DawnbenchError(f"track(predict=...): {type(predict).__name__} is not callable. Give a function from "
                                 "a batch of the task's held split (as an entry's predict receives it) to scores or "
                                 "labels — or none, and report your own accuracy to evaluate(accuracy=...).")
        if not isinstance(out, (str, Path)):
            raise DawnbenchError(f"track(out={out!r}): give the folder for the run folders, a path (default \"runs\").")
        if (model is None) != (example is None) or (model is not None and not (
                isinstance(model, torch.nn.Module) and isinstance(example, torch.Tensor))):
            raise DawnbenchError("track(model=, example=): give both — the network (a torch.nn.Module) and a small "
                                 "training-shaped batch (a tensor) its FLOPs are counted on after the run — or neither.")
        if not isinstance(quick, bool):
            raise DawnbenchError(f"track(quick={quick!r}): True (a quick trial, as `dawnbench run --quick`) or False.")
        self.profile_steps = _profile_steps(profile_steps)
        self.name = _name(name)
        cls = type(self.name.replace("-", "_"), (TrackedScript,),
                   {"name": self.name, "hparams": _hparams(hparams), "predict_fn": staticmethod(predict) if predict
                    else None, "flop_probe": (model, example) if model is not None else None,
                    "classes": _classes(task),
                    "__module__": __name__})
        self.options = RunOptions(task=task, entry=cls, seed=seed, target=target, max_seconds=max_seconds,
                                  max_epochs=max_epochs, device=device, out_dir=Path(out), instance=instance,
                                  cost_per_hour=cost_per_hour, precision=precision, quick=quick)
        try:
            prep = prepare(self.options)     # every option checked as `dawnbench run` checks it
        except DawnbenchError as err:        # named as this call's keywords, not as the CLI's flags
            flags = r"--(seed|target|max-seconds|max-epochs|precision|cost-per-hour|instance|device|out|quick)\b"
            said = re.sub(flags + r" ([^\s:]+):", lambda m: f"track({m[1].replace('-', '_')}={m[2]}):", str(err))
            raise DawnbenchError(re.sub(flags, lambda m: f"track({m[1].replace('-', '_')}=...)", said)) from None
        script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] and Path(sys.argv[0]).is_file() else None
        self.prep = replace(prep, software=environment.software_info(script or Path(__file__)),
                            official=prep.official and self.profile_steps is None)
        self.self_reported = predict is None
        self.quiet = quiet
        self.dir: Path | None = None
        self.result: RunResult | None = None
        self._entry = cls(self.prep.task, self.prep.device)
        self._clock = clock_for(self.prep.device)
        self._cost = HarnessCost()
        self._recorder: _Recorder | None = None
        self._hooks = ExitStack()        # what lives from start to finish: the step counter, the profiler's hook
        self._timing: ExitStack | None = None   # the open timed segment
        self._counter = StepCounter(wrap=self._cost.wrap)
        self._window: StepWindow | None = None
        self._profile_written = False
        self._last = Progress(0.0, 0)
        self._ended: str | None = None   # set when an evaluation ended the run
        self._busy = False               # scoring an evaluation: the tracker is not to be called back
        self._pid = os.getpid()          # the process whose run it is (set again at start)
        self._lock = threading.Lock()    # one thread inside evaluate/pause/resume/finish at a time
        self._owner: int | None = None   # the thread inside

    # -- the run's life ------------------------------------------------------------------------------------------
    def start(self) -> Tracker:
        """Open the record and start the clock (what entering the ``with`` block does)."""
        if self._recorder is not None or self.result is not None:
            raise DawnbenchError("this tracker has started already: one tracker records one run; call "
                                 "dawnbench.track(...) again for another (a callback: a new DawnbenchCallback).")
        if self.profile_steps is not None and Tracker._profiling is not None:
            raise DawnbenchError(f"profile_steps: {Tracker._profiling} is profiling in this process already; torch's "
                                 "profiler watches one window at a time. Profile one run, then the other.")
        self._pid = os.getpid()
        task = self.prep.task
        if not data.is_ready(task.dataset):
            data.ensure(task.dataset)
        self.dir = new_run_dir(self.options.out_dir, task.name, self.name, self.options.seed)
        observer = RunObserver() if self.quiet else _Observer()
        self._recorder = _Recorder(self.options, self.prep, self.options.seed, self._clock, self.dir, observer, 0)
        world = World()
        result = self._recorder.open(self._entry, world)
        result.self_reported = self.self_reported
        result.tracked = {"script": str(self.prep.software.get("entry_file")), "scored_by":
                          "script" if self.self_reported else "harness", "profile_steps": self.profile_steps}
        result.setup_s = max(0.0, time.time() - psutil.Process().create_time())
        self.result = result
        self._recorder.monitor(world.local_peers(), world.local_devices(self.prep.device))
        self._recorder.start(mllog.INIT_START)      # a tracked script's warm-up, if any, is in its setup_s
        self._recorder.end(mllog.INIT_STOP, {"compile_s": None})
        seed_everything(self.options.seed)
        self._hooks.enter_context(self._counter)
        if self.profile_steps is not None:
            Tracker._profiling = str(self.dir)
            self._hooks.callback(setattr, Tracker, "_profiling", None)
            self._window = StepWindow(self.prep.device, self.profile_steps, PROFILE_WARM_STEPS)
            handle = register_optimizer_step_post_hook(self._cost.wrap(self._window.on_step))
            self._hooks.callback(handle.remove)
            self._hooks.callback(self._window.close)
        self._clock.start()
        self._recorder.start(mllog.RUN_START)
        batch = self.prep.entry_cls.hparams.get("batch_size")
        self._recorder.training_started(ProgressProbe(self._counter, lambda: self._clock.timed_s,
                                                      batch if isinstance(batch, int) else None,
                                                      task.train_items(data.train_count(task.dataset, task.train_split)),
                                                      self.prep.entry_cls.hparams.get("epochs")))
        self._resume()
        return self

    @_one_thread
    def evaluate(self, epoch: float, samples: int, loss: float | torch.Tensor | None = None,
                 accuracy: Callable[[], float] | float | None = None) -> bool:
        """An evaluation point: the clock stops, the model is scored (see the module docstring) and recorded.
        ``epoch``: epochs trained so far (fractional allowed); ``samples``: training samples seen so far.
        Returns True when the run is over (the clock then stays stopped: leave the loop)."""
        recorder = self._started("evaluate")
        if self._ended is not None:
            return True                  # over already: nothing more is recorded
        epoch, samples, loss = _plain(epoch), _plain(samples), _plain(loss)
        self._check_point(epoch, samples)
        if self.self_reported:
            if accuracy is None:
                raise DawnbenchError("evaluate(): this run is self-reported (track() was given no predict), so give "
                                     "its accuracy: evaluate(epoch=, samples=, accuracy=VALUE or a function).")
            if not callable(accuracy):
                accuracy = _accuracy(_plain(accuracy), self.prep.task, "accuracy")
        elif accuracy is not None:
            raise DawnbenchError("evaluate(accuracy=...): this run is scored by the harness with the predict given "
                                 "to track(), so it takes no accuracy of its own; leave accuracy out (or give "
                                 "track() no predict and report your own, recorded as self-reported).")
        progress = Progress(float(epoch), int(samples), _loss(loss))
        if self._timing is not None:
            self._pause(progress.samples)
        recorder.reported = accuracy
        options, timed = self.options, self._clock.timed_s
        spent = ("max_seconds" if options.max_seconds is not None and timed > options.max_seconds else
                 "max_epochs" if options.max_epochs is not None and progress.epoch > options.max_epochs else None)
        self._busy = True
        try:
            if spent:
                recorder.past_budget(self._entry, progress, spent)
                verdict = Verdict(stop=True, status=Status.NOT_REACHED)
            else:
                verdict = recorder.evaluated(self._entry, progress)
        except Exception:               # predict or accuracy() raised: the script may go on, timed again
            self._resume()
            raise
        finally:
            self._busy = False
        self._last = progress
        self._warn_if_fraction()
        self._write_profile()
        if verdict.stop:
            self._ended = verdict.status or Status.NOT_REACHED
            return True
        self._resume()
        return False

    @_one_thread
    def pause(self) -> None:
        """Stop the clock until :meth:`resume` or :meth:`evaluate` (a trainer's own evaluation, its logging):
        what the callbacks call around a trainer's evaluation loop."""
        self._started("pause")
        if self._timing is not None and self._ended is None:
            self._pause(self._last.samples)

    @_one_thread
    def resume(self) -> None:
        """Start the clock again after :meth:`pause` (nothing happens once the run is over, or while it runs)."""
        self._started("resume")
        if self._timing is None and self._ended is None:
            self._resume()

    @property
    def running(self) -> bool:
        """Between :meth:`start` and :meth:`finish`."""
        return self._recorder is not None

    @property
    def train_limit(self) -> int | None:
        """The training items a quick trial trains on (``quick=True``: the first that many), None for all."""
        return self.prep.task.train_limit

    @property
    def over(self) -> bool:
        """Whether an evaluation ended the run (the target reached, the loss not finite, a budget spent)."""
        return self._ended is not None

    @_one_thread
    def finish(self, error: BaseException | None = None) -> RunResult:
        """End the run (what leaving the ``with`` block does): the final record; ``error``: what ended the loop."""
        recorder = self._started("finish")
        if self._timing is not None:
            self._pause(self._last.samples)
        status = self._ended or Status.NOT_REACHED
        message = None
        if isinstance(error, KeyboardInterrupt):
            status, message = Status.INTERRUPTED, "interrupted (Ctrl-C) while training"
        elif isinstance(error, DawnbenchError):   # one paragraph that says what to fix: no traceback to keep
            status, message = Status.ABORTED, str(error)
        elif isinstance(error, Exception):
            recorder.failed(error)       # the error in result.json, its traceback in error.txt
            status = Status.ABORTED
        elif isinstance(error, SystemExit) and error.code not in (0, None):
            status, message = Status.ABORTED, f"the script exited with code {error.code!r} inside the run"
        self._hooks.close()
        if error is None:
            self._write_profile()
        assert recorder.result is not None
        recorder.result.harness = self._cost.figures(self._clock.timed_s)
        self.result = recorder.finish(self._entry, status, message)
        self._recorder = None
        return self.result

    def __enter__(self) -> Tracker:
        return self.start()

    def __exit__(self, _exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if self._recorder is not None:
            self.finish(exc)

    # -- the clock ------------------------------------------------------------------------------------------------
    def _resume(self) -> None:
        assert self._recorder is not None
        self._recorder.start(mllog.BLOCK_START, {"first_epoch_num": self._last.epoch,
                                                 "samples_count": self._last.samples})
        self._timing = ExitStack()
        self._timing.enter_context(timed(self._clock, self._cost))
        self._timing.enter_context(self._cost.entry())   # the script's own code, until it calls back

    def _pause(self, samples: int) -> None:
        assert self._recorder is not None and self._timing is not None
        self._timing.close()
        self._timing = None
        self._recorder.end(mllog.BLOCK_STOP, {"first_epoch_num": self._last.epoch, "samples_count": samples})

    def _started(self, what: str) -> _Recorder:
        if self._recorder is None:
            raise DawnbenchError(f"{what}() outside the run: call it inside `with dawnbench.track(...) as run:` (or "
                                 "after run.start() and before run.finish()).")
        if os.getpid() != self._pid:
            raise DawnbenchError(f"{what}() in process {os.getpid()}, but the run was started in process {self._pid}: "
                                 "a tracker's record is its process's; start a tracker in the child for a run of its own.")
        if self._busy:
            raise DawnbenchError(f"{what}() while the tracker is scoring an evaluation (from predict or accuracy()): "
                                 "they answer for the model; the tracker's calls belong to the training loop.")
        return self._recorder

    def _check_point(self, epoch: Any, samples: Any) -> None:
        for name, value, kind in (("epoch", epoch, schema.Epochs), ("samples", samples, schema.Count)):
            why = schema.why_not(kind, value, name)
            if why:
                raise DawnbenchError(f"evaluate({name}={value!r}): {why}. Give {name} trained so far.")
        if epoch < self._last.epoch or samples < self._last.samples:
            raise DawnbenchError(f"evaluate(epoch={epoch!r}, samples={samples!r}): training went back (the last "
                                 f"evaluation was at epoch {_epochs(self._last.epoch)}, {self._last.samples} samples); "
                                 "give the epochs and samples trained so far, counted from the run's start.")

    def _warn_if_fraction(self) -> None:
        """A self-reported first figure of at most 1 on a metric measured in percent is most likely a fraction."""
        result, metric = self.result, self.prep.task.metric
        if self.quiet or not self.self_reported or result is None or len(result.evals) != 1 or metric.high < 100:
            return
        if result.evals[0].value <= 1:
            print(f"dawnbench: note: the first self-reported {metric.name} is {result.evals[0].value:g}, on a scale "
                  f"to {metric.high:g}: if that is a fraction, report percent (× 100).", file=sys.stderr)

    # -- a profiled window -------------------------------------------------------------------------------------
    def _write_profile(self) -> None:
        """The profiled window, once it has ended, as ``dawnbench profile`` writes one (off the clock)."""
        window = self._window
        if window is None or not window.done or self._profile_written or self.dir is None:
            return
        self._profile_written = True
        out = self.dir / "profile"
        batch = self.prep.entry_cls.hparams.get("batch_size")
        probe = self._entry.flop_model()
        flops = training_flops_per_sample(*probe) * batch if probe is not None and isinstance(batch, int) else None
        opts = ProfileOptions(task=self.prep.task.name, entry=self.name, precision=self.prep.precision,
                              steps=window.steps, warm_steps=window.warm_steps, out=out)
        with self._clock.segment("profile"), watched("the roof probes") as load:
            measured = window.window(out / "trace.json")
            roofs = measure_roofs(self.prep.device)
            summary = summarise(measured, {"flop_counter_flops_per_step": flops, "batch_size": batch}, opts, roofs)
        summary.update(load=load.summary, notes=[*load.notes, *against_last(roofs.to_dict(), load)],
                       title=f"{self.prep.task.name} · {self.name} · {self.prep.precision} · {window.steps} steps "
                             "(a tracked script)", run_dir=str(self.dir))
        if not isinstance(batch, int):
            summary["notes"].append("no batch_size in track(hparams=...): samples/s and the FLOP check are unknown")
        write_profile(measured, summary, out)


def track(task: str = "mnist", **options: Any) -> Tracker:
    """A :class:`Tracker` for one run of a script's own training loop (use it as a context manager).
    ``task``: a task name (``dawnbench tasks``); the keywords are :class:`Tracker`'s."""
    return Tracker(task, **options)
