"""What rank 0 adds to the loop every rank runs: the record, the evaluations, the monitor.

:func:`dawnbench.harness.driver.execute` is one loop, run by every worker of a run in
the same order, so the collectives (barriers, gathers, rank 0's stop-or-go) are written
once. What differs between ranks is only what they keep: rank 0 holds a
:class:`RankZeroRecorder`, which writes ``events.log``, ``epochs.tsv`` and
``result.json``, scores every evaluation and decides when to stop; every other rank
holds a :class:`Recorder`, which records nothing and never asks to stop (it follows
rank 0's decision, broadcast by the loop).

The contract, for each method: the loop calls it on every rank at the same point; it
never makes a collective call itself.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import getpass
import os
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dawnbench import data, environment, profiling
from dawnbench.distributed import comm
from dawnbench.distributed.world import World
from dawnbench.entries import Entry, Progress, saved
from dawnbench.errors import DawnbenchError, FileError
from dawnbench.harness.clock import Clock
from dawnbench.harness.core import evaluate
from dawnbench.harness.observer import RunObserver
from dawnbench.harness.options import PreparedRun, RunOptions, interconnect
from dawnbench.harness.progress import ProgressProbe
from dawnbench.io import atomic_write_text
from dawnbench.precision import MLPERF_NAMES
from dawnbench.profiling.resources import ResourceMonitor
from dawnbench.records import mllog, prices
from dawnbench.records.record import RUNNING, Evaluation, RunRecord, RunResult, Status


def _refused(err: FileError) -> str:
    return f"{err.path}: the run record would be refused by its readers: {err.reason}"


class RecordError(DawnbenchError):
    """The run's own files could not be written (a full disk, a failed checkpoint): the run
    ends ``aborted`` with this reason, and the final status is still written. ``refused``: the record's
    readers would refuse it (a tracked script's claim no hardware could make)."""

    def __init__(self, message: str, refused: bool = False):
        super().__init__(message)
        self.refused = refused


@dataclass
class Verdict:
    """What an evaluation point decided on rank 0: stop (with this status) or go on."""

    stop: bool = False
    status: str | None = None


class Recorder:
    """Records nothing: the part of a worker other than rank 0 (and the base class)."""

    def __init__(self, options: RunOptions, prep: PreparedRun, seed: int, clock: Clock) -> None:
        self.options, self.prep, self.seed, self.clock = options, prep, seed, clock
        self.result: RunResult | None = None

    def open(self, entry: Entry, world: World) -> RunResult:
        """Before warm-up: the run's facts, known before anything is measured."""
        self.result = RunResult(task=self.prep.task.name, entry=entry.name, seed=self.seed, status=RUNNING,
                                official=self.prep.official, metric=self.prep.task.metric.name,
                                threshold=self.prep.threshold, hparams=dict(entry.hp))
        return self.result

    def monitor(self, peers: list[int], devices: list[int]) -> None:
        """Start watching the machine; ``peers`` are the run's other workers on it, ``devices`` the
        accelerators the run uses here."""

    def event(self, key: str, value: Any = None, metadata: dict[str, Any] | None = None) -> None: ...
    def start(self, key: str, metadata: dict[str, Any] | None = None) -> None: ...
    def end(self, key: str, metadata: dict[str, Any] | None = None) -> None: ...

    def training_started(self, probe: ProgressProbe) -> None: ...

    def stream_opened(self, stream: Any) -> None:
        """An epoch of the entry's streamed dataset begins: its pipeline (cpu, gpu, dali) and loader workers."""

    def account(self, workers: list[list[float]], epoch: float) -> None:
        """Fold every worker's communication timers (gathered by the loop) into the record."""

    def evaluated(self, entry: Entry, progress: Progress) -> Verdict:
        """At each yield of ``train``, with the clock stopped: score, record, decide."""
        return Verdict()

    def stopped(self, entry: Entry, cause: str, block: dict[str, Any]) -> None:
        """Training was stopped between the entry's yields (``cause``: the budget, or ``signal``):
        close the training block and score the model as it is (untimed; never a time to accuracy)."""

    def save_final(self, entry: Entry) -> None:
        """With ``--continue``: keep the model after the last evaluation too."""

    def failed(self, err: Exception) -> bool:
        """The entry raised. True: recorded as ``aborted``; False: let the exception end the
        worker (torchrun stops the others and the launcher records the error)."""
        return False

    def finish(self, entry: Entry, status: str, error: str | None) -> RunResult:
        """After training, whatever ended it (signals are ignored meanwhile)."""
        assert self.result is not None
        self.result.status = status
        self.result.error = error
        return self.result


class RankZeroRecorder(Recorder):
    """Rank 0 (or the only process): the clock's owner writes the record after every step of the run."""

    def __init__(self, options: RunOptions, prep: PreparedRun, seed: int, clock: Clock, run_dir: Path,
                 observer: RunObserver, index: int) -> None:
        super().__init__(options, prep, seed, clock)
        self.run_dir, self.observer, self.index = Path(run_dir), observer, index
        self.record = RunRecord(run_dir, prep.task.metric.columns)
        self.log = self.record.events
        task = prep.task
        # The scored split belongs to the harness: opened before run_start, never timed.
        self.scored = data.open_split(task.dataset, task.scored_split)
        self._monitor: ResourceMonitor | None = None
        self._probe: ProgressProbe | None = None
        self._last = (0.0, 0)  # timed seconds and samples at the previous evaluation
        self._record_failure: str | None = None  # why the run's own files could not be written

    def open(self, entry: Entry, world: World) -> RunResult:
        options, prep, task = self.options, self.prep, self.prep.task
        result = RunResult(task=task.name, entry=entry.name, seed=self.seed, status=RUNNING,
                           official=prep.official, metric=task.metric.name, threshold=prep.threshold,
                           hparams=dict(entry.hp), hardware=prep.hardware, software=prep.software,
                           instance=prep.instance, cost_per_hour=prep.cost_per_hour,
                           precision=prep.precision, compile=prep.compile,
                           budget={"max_epochs": options.max_epochs, "max_seconds": options.max_seconds,
                                   "max_wall_seconds": options.max_wall_seconds},
                           started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           run_dir=str(self.run_dir), distributed=_distributed_facts(world, entry, options),
                           subset=task.subset, memory_plan=prep.memory_plan,
                           interconnect=interconnect(options, world.backend), scheduler=environment.scheduler())
        self.result = result
        self.event(mllog.SUBMISSION_BENCHMARK, task.name)
        self.event(mllog.SUBMISSION_DIVISION, mllog.OPEN)
        self.event(mllog.SUBMISSION_ORG, options.org or getpass.getuser())
        self.event(mllog.SUBMISSION_PLATFORM, options.platform or environment.describe_hardware(prep.hardware))
        self.event(mllog.OFFICIAL, prep.official)
        if task.subset is not None:         # what train_samples are of: a reader holds the epochs to them
            self.event(mllog.SUBSET, task.subset)
        self.event(mllog.CACHE_CLEAR, False)
        self.event(mllog.TRAIN_SAMPLES, task.train_items(data.train_count(task.dataset, task.train_split)))
        self.event(mllog.EVAL_SAMPLES, self.scored.count)
        self.event(mllog.ENTRY, entry.name)
        self.event(mllog.SEED, self.seed)
        self.event(mllog.PRECISION, MLPERF_NAMES[prep.precision])
        self.event(mllog.COMPILE, prep.compile)
        self.event(mllog.HPARAMS, entry.hp)
        if "batch_size" in entry.hp:
            self.event(mllog.GLOBAL_BATCH_SIZE, entry.hp["batch_size"] * world.world_size)
        if world.distributed:
            self.event(mllog.WORLD_SIZE, world.world_size,
                      {"backend": world.backend, "scaling": options.scaling,
                       "per_worker_batch_size": entry.hp.get("batch_size")})
        self.event(mllog.EVAL_TARGET, prep.threshold)
        self._persist(result)
        return result

    def monitor(self, peers: list[int], devices: list[int]) -> None:
        self._monitor = ResourceMonitor(self.record.dir / "resources.tsv", self.options.resource_interval,
                                        timed_s=lambda: self.clock.timed_s, peers=peers, devices=devices).start()
        assert self.result is not None
        self.observer.run_started(self.index, self.options.runs, self.result)

    def event(self, key: str, value: Any = None, metadata: dict[str, Any] | None = None) -> None:
        self._logged(self.log.event, key, value, metadata)

    def start(self, key: str, metadata: dict[str, Any] | None = None) -> None:
        self._logged(self.log.start, key, None, metadata)

    def end(self, key: str, metadata: dict[str, Any] | None = None) -> None:
        self._logged(self.log.end, key, None, metadata)

    def _logged(self, log, key: str, value: Any, metadata: dict[str, Any] | None) -> None:
        try:
            log(key, value, metadata)
        except OSError as err:
            raise RecordError(f"writing {self.record.dir / 'events.log'} failed ({err.strerror or err})") from None

    def training_started(self, probe: ProgressProbe) -> None:
        self._probe = probe
        self.observer.training_started(probe)

    def stream_opened(self, stream: Any) -> None:
        assert self.result is not None
        self.result.data_pipeline = stream.pipeline
        if self.result.loader_workers is None:
            self.result.loader_workers = getattr(stream, "workers", None)

    def account(self, workers: list[list[float]], epoch: float) -> None:
        figures = comm.accounting(workers, self.clock.timed_s, epoch)
        assert self.result is not None and self.result.distributed is not None
        self.result.distributed.update(figures)
        self.log.event(mllog.COMMUNICATION, figures["comm_overhead_pct"],
                       {"epoch_num": epoch, "comm_exposed_per_epoch_s": figures["comm_exposed_per_epoch_s"],
                        "time_per_epoch_s": figures["time_per_epoch_s"], "accounted_pct": figures["accounted_pct"]})

    def evaluated(self, entry: Entry, progress: Progress) -> Verdict:
        result, options = self.result, self.options
        assert result is not None
        loss = _loss_value(progress)
        if loss is not None and not np.isfinite(loss):
            result.error = f"training loss was {loss} at epoch {progress.epoch:g}"
            return Verdict(stop=True, status="diverged")
        passed, timed = self._score(entry, progress, loss)
        if passed and not options.continue_after_target:
            return Verdict(stop=True, status="success")
        if ((options.max_epochs is not None and progress.epoch >= options.max_epochs)
                or (options.max_seconds is not None and timed >= options.max_seconds)):
            return Verdict(stop=True, status="not_reached")
        return Verdict()

    def stopped(self, entry: Entry, cause: str, block: dict[str, Any]) -> None:
        assert self._probe is not None and self.result is not None
        samples, epoch = self._probe.position()
        if self.result.evals:  # at least where the last evaluation was (an entry that steps no optimizer)
            last = self.result.evals[-1]
            samples, epoch = max(samples or 0, last.samples), max(epoch or 0.0, last.epoch)
        samples = samples or 0
        self.end(mllog.BLOCK_STOP, {**block, "samples_count": samples})
        try:
            self._score(entry, Progress(epoch=epoch or 0.0, samples=samples), None, stopped_by=cause)
        except RecordError:
            raise
        except Exception as err:  # noqa: BLE001 - e.g. stopped before the entry built its network
            self.result.error = f"the evaluation after the stop ({cause}) failed: {type(err).__name__}: {err}"

    def measure(self, entry: Entry) -> tuple[float, dict[str, float]]:
        """An evaluation's deciding value and the metric's others: the harness's scorer on the held split
        (a tracked run whose accuracy is its own overrides this: dawnbench.tracking)."""
        return evaluate(entry, self.prep.task, self.scored, self.prep.precision)

    def _score(self, entry: Entry, progress: Progress, loss: float | None,
               stopped_by: str | None = None) -> tuple[bool, float]:
        """Evaluate (untimed), record and log; keep the model at the first pass. Returns (passed, timed
        seconds). An evaluation after a stop is recorded, never a time to accuracy."""
        result, clock, task = self.result, self.clock, self.prep.task
        assert result is not None
        self.start(mllog.EVAL_START, {"epoch_num": progress.epoch})
        with clock.segment("eval"):
            value, extra = self.measure(entry)
        with clock.segment("log"):
            timed = clock.timed_s
            result.entry_facts = entry.facts()
            result.evals.append(Evaluation(progress.epoch, progress.samples, timed, value, extra, stopped_by))
            passed = task.passes(value, self.prep.threshold) and stopped_by is None
            first_pass = passed and result.time_to_accuracy_s is None
            if first_pass:
                result.time_to_accuracy_s = timed
                result.epochs_to_target = progress.epoch or None    # a script that counts none: unknown
                result.samples_to_target = progress.samples or None
            _update_times(result, clock)
            try:     # what the readers would refuse (a tracked script's claim no hardware makes) is not kept
                self.record.admit(result)
            except FileError as err:
                result.evals.pop()
                if first_pass:
                    result.time_to_accuracy_s = result.epochs_to_target = result.samples_to_target = None
                raise RecordError(_refused(err), refused=True) from None
            self.end(mllog.EVAL_STOP, {"epoch_num": progress.epoch})
            self.event(mllog.EVAL_ACCURACY, value, {"epoch_num": progress.epoch, "samples_count": progress.samples,
                                                    "timed_s": timed, "loss": loss, **extra,
                                                    **({"stopped_by": stopped_by} if stopped_by else {})})
        if first_pass:
            with clock.segment("checkpoint"):
                self._save(entry, saved.MODEL_FILE, progress.epoch, value)
        with clock.segment("log"):
            _update_times(result, clock)
            try:
                self._persist(result)
            except RecordError as err:
                if err.refused:   # what the readers would refuse is not kept: the run goes on without it
                    result.evals.pop()
                    if first_pass:
                        result.time_to_accuracy_s = result.epochs_to_target = result.samples_to_target = None
                raise
            last_timed, last_samples = self._last
            rate = (progress.samples - last_samples) / (timed - last_timed) if timed > last_timed else None
            self._last = (timed, progress.samples)
            if self._probe is not None and stopped_by is None:
                self._probe.observe(progress.samples, progress.epoch)
            self.observer.evaluated(result, progress, rate)
        return passed, timed

    def save_final(self, entry: Entry) -> None:
        assert self.result is not None
        if self.result.evals:
            with self.clock.segment("checkpoint"):
                last = self.result.evals[-1]
                self._save(entry, saved.FINAL_MODEL_FILE, last.epoch, last.value)

    def _save(self, entry: Entry, name: str, epoch: float, value: float) -> None:
        """The model that first reached the target (or the final one), for ``infer`` and ``generalize``."""
        state = entry.inference_state()
        if state is None:
            return  # the entry cannot be saved; `dawnbench infer` says so
        try:
            path = saved.save(self.record.dir, state, task=self.prep.task.name, entry=entry.name,
                              hparams=dict(entry.hp), epoch=epoch, value=value, name=name)
        except OSError as err:
            raise RecordError(f"saving the model to {self.record.dir / name} failed ({err.strerror or err}) "
                              f"at epoch {epoch:g}") from None
        assert self.result is not None
        if name == saved.MODEL_FILE:
            self.result.checkpoint = path.name
        else:
            self.result.checkpoint_final = path.name
        self.event(mllog.CHECKPOINT, path.name, {"epoch_num": epoch})

    def _persist(self, result: RunResult) -> None:
        try:
            self.record.write(result)
        except OSError as err:
            raise RecordError(f"writing the run record in {self.record.dir} failed ({err.strerror or err})") from None
        except FileError as err:
            raise RecordError(_refused(err), refused=True) from None

    def failed(self, err: Exception) -> bool:
        assert self.result is not None
        if isinstance(err, RecordError):  # the harness's own files, not the entry: no traceback to keep
            self._record_failure = str(err)
            self.result.error = str(err)
            return True
        self.result.error = f"{type(err).__name__}: {err}"
        with contextlib.suppress(OSError):  # the record keeps the error's one-line form; the traceback is extra
            atomic_write_text(self.run_dir / "error.txt", traceback.format_exc())
        return True

    def finish(self, entry: Entry, status: str, error: str | None) -> RunResult:
        result, prep = self.result, self.prep
        assert result is not None
        if self._monitor is not None:
            self._monitor.stop()
            result.resources = self._monitor.summary()
        if error is not None:  # how the run ended first, then anything noted on the way (a failed final evaluation)
            result.error = error if result.error is None else f"{error}; {result.error}"
        # A run that passed keeps its success even if it was stopped while continuing — unless its
        # own record could not be kept: a run without its model or record is not a result.
        result.status = Status.SUCCESS if result.time_to_accuracy_s is not None else status
        if self._record_failure is not None:
            self._abort_for_record(result, self._record_failure)
        _update_times(result, self.clock)
        if result.evals and self._record_failure is None:
            workers = result.distributed["world_size"] if result.distributed else 1
            result.throughput = _measure_throughput(entry, result, prep.device, prep.precision, workers)
        if result.time_to_accuracy_s is not None and prep.cost_per_hour is not None:
            result.training_cost_usd = prices.training_cost(result.time_to_accuracy_s, prep.cost_per_hour)
        self._write_final(result)
        self.record.close()
        self.observer.run_finished(result)
        return result

    def _abort_for_record(self, result: RunResult, why: str) -> None:
        if result.time_to_accuracy_s is not None:
            why += f" (the run had reached its target at {result.time_to_accuracy_s:.2f} timed seconds)"
        result.status, result.error = Status.ABORTED, why
        result.time_to_accuracy_s = result.epochs_to_target = result.samples_to_target = None
        result.training_cost_usd = None

    def _write_final(self, result: RunResult) -> None:
        """The final record, then ``run_stop``. If the disk is full, the reserve is freed and the
        run is recorded as ``aborted`` with that reason: the status always reaches the disk."""
        for attempt in range(2):
            try:
                self.record.write(result, final=True)
                self.log.end(mllog.RUN_STOP, metadata={"status": result.status, "timed_s": self.clock.timed_s})
                self.record.events.sync()
                return
            except FileError as err:
                raise RecordError(_refused(err)) from None
            except OSError as err:
                if attempt or not self.record.release_reserve():
                    raise RecordError(f"{self.record.dir}: the final record could not be written "
                                      f"({err.strerror or err}); result.json holds the last evaluation") from None
                if result.status != Status.ABORTED or self._record_failure is None:
                    self._record_failure = f"the disk filled up while writing the run record ({err.strerror or err})"
                    self._abort_for_record(result, self._record_failure)


def _loss_value(progress: Progress) -> float | None:
    if progress.loss is None:
        return None
    return float(progress.loss.detach().float().item() if torch.is_tensor(progress.loss) else progress.loss)


def _distributed_facts(world: World, entry: Entry, options: RunOptions) -> dict[str, Any] | None:
    """What SPEC §13 asks a distributed run's record to say before anything is measured."""
    if not world.distributed:
        return None
    per_worker = entry.hp.get("batch_size")
    return {"world_size": world.world_size, "nnodes": world.nnodes, "backend": world.backend,
            "scaling": options.scaling, "per_worker_batch_size": per_worker,
            "global_batch_size": per_worker * world.world_size if per_worker else None,
            "threads_per_worker": world.threads() if entry.device.type == "cpu" else None,
            "cpu_affinity": sorted(os.sched_getaffinity(0)),   # rank 0's cores (pinned by `jobs`: its share)
            "collective_timeout_s": options.collective_timeout, "launch_s": world.launch_s}


def _measure_throughput(entry: Entry, result: RunResult, device: torch.device,
                        precision: str, workers: int = 1) -> dict[str, Any]:
    """Samples/s to the last evaluation, and FLOP figures when the entry exposes its model."""
    flops, problem = None, None
    try:
        probe = entry.flop_model()
        if probe is not None:
            flops = profiling.training_flops_per_sample(*probe)
        else:   # "—" in every table, and here why
            problem = (f"no FLOP count: entry '{entry.name}' defines no flop_model() (its network and a small "
                       "training-shaped batch: see dawnbench/entries/base.py; a tracked script gives them as "
                       "track(model=, example=)), so GFLOP/s and % of peak are unknown")
    except Exception as err:  # counting is a report, never a reason to lose the run
        problem = f"FLOP counting failed: {type(err).__name__}: {err}"
    last = result.evals[-1]
    figures = profiling.throughput(last.samples, last.timed_s, flops, device, precision,
                                   result.samples_to_target, result.time_to_accuracy_s, workers)
    return {**figures, "flops_error": problem} if problem else figures


def _update_times(result: RunResult, clock: Clock) -> None:
    result.timed_s = clock.timed_s
    result.wall_s = clock.wall_s
    result.eval_s = clock.total("eval")
    result.init_s = clock.total("init")
    result.log_s = clock.total("log")
    result.checkpoint_s = clock.total("checkpoint")
