"""The harness: runs an entry on a task under the clock rules (SPEC §2–§4).

    from dawnbench import RunOptions, run_many
    results = run_many(RunOptions(task="mnist", runs=5))

One run, in order: resolve everything that can fail on bad input (task, entry,
price, device, precision, compile mode) before anything is measured; load the
scored split (the harness's, untimed); ``warmup`` on synthetic data of the task's
shapes (``init_s``, compilation included as ``compile_s``); ``run_start``; drive
``train`` with the clock running and evaluate at each yield with the clock stopped
— both inside the run's precision (TF32 flags, autocast); stop at the first passing
evaluation, at a budget, or on failure; write the record after every evaluation
and at the end.

Budgets and statuses (SPEC §3):
* ``success``      an evaluation reached the target; TTA = timed seconds then.
* ``not_reached``  the entry's schedule ended, or a budget was spent, first:
                   ``max_epochs`` (epochs trained) and ``max_seconds`` (timed
                   seconds) are checked at each evaluation point.
* ``diverged``     the loss reported at a yield was not finite.
* ``aborted``      the entry raised (in ``warmup``, ``train`` or ``predict``).
* ``interrupted``  SIGINT or SIGTERM arrived; the run stops where it is.
* ``timeout``      ``max_wall_seconds`` of wall time since ``run_start`` passed;
                   enforced by an alarm, so it can stop a run mid-step.
"""

from __future__ import annotations

import datetime as dt
import getpass
import random
import signal
import threading
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch

from dawnbench import data, environment, pricing, profiling
from dawnbench.distributed import comm
from dawnbench.distributed.launch import announce_run_dir
from dawnbench.distributed.world import (
    DEFAULT_COLLECTIVE_TIMEOUT_S,
    World,
    per_worker_overrides,
    worker_seed,
)
from dawnbench.entries import Entry, Progress, TrainContext, load_entry_class
from dawnbench.errors import DawnbenchError
from dawnbench.harness import checkpoint, mllog
from dawnbench.harness.clock import Clock
from dawnbench.harness.observer import RunObserver
from dawnbench.harness.precision import (
    MLPERF_NAMES,
    check_precision,
    make_scaler,
    precision_scope,
)
from dawnbench.harness.progress import ProgressProbe, StepCounter
from dawnbench.harness.record import RUNNING, Evaluation, RunRecord, RunResult
from dawnbench.harness.warmup import (
    COMPILE_MODES,
    compile_stats,
    compiler,
    synthetic_context,
)
from dawnbench.profiling.resources import ResourceMonitor
from dawnbench.tasks import Task, get_task


@dataclass
class RunOptions:
    task: str | Task = "mnist"          # a registered name, or a Task object
    entry: str | type[Entry] | None = None  # built-in name, path to a .py, or a class; None: the task's default
    seed: int = 0
    runs: int = 1                       # seeds seed, seed+1, ... one after another
    target: float | None = None         # another threshold: makes the run unofficial
    max_epochs: float | None = None
    max_seconds: float | None = None    # timed seconds
    max_wall_seconds: float | None = None
    continue_after_target: bool = False
    device: str = "auto"
    out_dir: Path = Path("runs")
    instance: str | None = None         # priced from the bundled catalog
    cost_per_hour: float | None = None  # overrides the catalog
    overrides: dict[str, Any] = field(default_factory=dict)
    precision: str = "fp32"             # fp32, tf32, bf16, fp16 (SPEC §12)
    compile: str | None = None          # a torch.compile mode, or None
    org: str | None = None              # submission_org in events.log (default: the login name)
    platform: str | None = None         # submission_platform (default: the hardware description)
    resource_interval: float = 0.5      # seconds between resource samples (SPEC §14)
    scaling: str = "weak"               # under torchrun: weak (per-worker batch fixed) or strong (SPEC §13)
    collective_timeout: float = DEFAULT_COLLECTIVE_TIMEOUT_S  # a peer silent this long ends the run


class StopRun(BaseException):
    """Raised by a signal handler to end the run (not an Exception: entries can't swallow it)."""

    def __init__(self, status: str, why: str):
        super().__init__(why)
        self.status = status


@contextmanager
def stop_on_signals(max_wall_seconds: float | None) -> Iterator[Callable[[], None]]:
    """Turn SIGINT/SIGTERM into ``interrupted`` and the wall-time alarm into ``timeout``.

    Yields ``disarm``: after it is called, signals are ignored until the block ends,
    so that the final record is written whole.
    """
    fired: list[int] = []

    def disarm() -> None:
        fired.append(0)
        signal.setitimer(signal.ITIMER_REAL, 0)

    if threading.current_thread() is not threading.main_thread():
        yield lambda: None  # signals can only be handled in the main thread
        return

    def on_signal(signum, _frame):
        if not fired:  # a second Ctrl-C while the record is written is ignored
            fired.append(signum)
            raise StopRun("interrupted", f"received {signal.Signals(signum).name}")

    def on_alarm(_signum, _frame):
        if not fired:
            fired.append(signal.SIGALRM)
            raise StopRun("timeout", f"wall time passed max_wall_seconds={max_wall_seconds:g}")

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, on_alarm)
    if max_wall_seconds:
        signal.setitimer(signal.ITIMER_REAL, max_wall_seconds)
    try:
        yield disarm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for s, handler in previous.items():
            signal.signal(s, handler)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise DawnbenchError(f"--device {name!r} is not a device name; use auto, cpu, cuda or cuda:N.") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise DawnbenchError(f"--device {name}: no CUDA device is available here; use --device cpu.")
    return device


def evaluate(entry: Entry, task: Task, inputs: torch.Tensor, labels: torch.Tensor,
             precision: str = "fp32") -> float:
    """Score the entry's predictions on the held split (the entry never sees labels)."""
    outputs = []
    with torch.inference_mode(), precision_scope(precision, entry.device, entry.own_precisions):
        for start in range(0, len(inputs), entry.eval_batch_size):
            outputs.append(entry.predict(inputs[start:start + entry.eval_batch_size]).cpu())
    return task.metric.compute(torch.cat(outputs), labels)


def _loss_value(progress: Progress) -> float | None:
    if progress.loss is None:
        return None
    return float(progress.loss.detach().float().item() if torch.is_tensor(progress.loss) else progress.loss)


def _new_run_dir(out_dir: Path, task: str, entry: str, seed: int) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(out_dir) / f"{task}-{entry}-{stamp}-seed{seed}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


@dataclass
class PreparedRun:
    """A checked configuration: what every run of it shares."""

    task: Task
    entry_cls: type[Entry]
    device: torch.device
    instance: str | None
    cost_per_hour: float | None
    official: bool
    threshold: float
    hardware: dict[str, Any]
    software: dict[str, Any]
    precision: str = "fp32"
    compile: str | None = None


def prepare(options: RunOptions) -> PreparedRun:
    """Everything that can fail on bad input, checked before any measurement."""
    task = options.task if isinstance(options.task, Task) else get_task(options.task)
    entry = options.entry or task.default_entry
    entry_cls = entry if isinstance(entry, type) else load_entry_class(entry)
    if entry_cls.tasks and task.name not in entry_cls.tasks:
        raise DawnbenchError(f"entry '{entry_cls.name}' is made for {', '.join(entry_cls.tasks)}, "
                             f"not '{task.name}'. Pick another --entry or --task.")
    unknown = sorted(set(options.overrides) - set(entry_cls.hparams) - set(entry_cls.hparams_by_task.get(task.name, {})))
    if unknown:
        raise DawnbenchError(f"--set {', '.join(unknown)}: not a hyperparameter of entry "
                             f"'{entry_cls.name}'. Its hyperparameters: {', '.join(sorted(entry_cls.hparams))}.")
    if options.runs < 1:
        raise DawnbenchError(f"--runs must be at least 1, not {options.runs}.")
    for name, value in [("--max-epochs", options.max_epochs), ("--max-seconds", options.max_seconds),
                        ("--max-wall-seconds", options.max_wall_seconds),
                        ("--resource-interval", options.resource_interval)]:
        if value is not None and not value > 0:
            raise DawnbenchError(f"{name} must be a positive number, not {value}.")
    instance, price = pricing.resolve(options.instance, options.cost_per_hour)
    device = resolve_device(options.device)
    check_precision(options.precision, device, entry_cls)
    if options.compile is not None and options.compile not in COMPILE_MODES:
        raise DawnbenchError(f"--compile {options.compile!r}: not a torch.compile mode; use one of "
                             f"{', '.join(COMPILE_MODES)}, or leave --compile out.")
    official = options.target is None or options.target == task.threshold
    return PreparedRun(task, entry_cls, device, instance, price, official,
                       task.threshold if options.target is None else options.target,
                       environment.hardware_info(device), environment.software_info(entry_cls),
                       options.precision, options.compile)


def train_context(entry: Entry, task: Task, seed: int, precision: str, compile_mode: str | None = None,
                  world: World = World(), timer: comm.CommTimer | None = None) -> TrainContext:
    """A fresh context for ``entry``'s ``train`` — one for warm-up, one for the run, so no
    loss-scaler state leaks from one to the other. ``timer`` times the run's DDP steps."""
    return TrainContext(task=task, seed=seed, device=entry.device, hparams=entry.hp,
                        load_train=lambda: data.load_split(task.dataset, task.train_split),
                        precision=precision, scaler=make_scaler(precision, entry.device, entry.own_precisions),
                        compile=compiler(compile_mode), rank=world.rank, world_size=world.world_size,
                        backend=world.backend, distribute=comm.ddp_wrapper(world, timer))


def execute(options: RunOptions, prep: PreparedRun, seed: int, run_dir: Path,
            observer: RunObserver | None = None, index: int = 0,
            clock: Clock | None = None, world: World = World()) -> RunResult:
    """One run of one seed, recorded in ``run_dir`` (on rank 0 of a distributed run:
    the clock, the evaluations and the record are this worker's; SPEC §13)."""
    task, device = prep.task, prep.device
    observer = observer or RunObserver()
    clock = clock or Clock(sync=torch.cuda.synchronize if device.type == "cuda" else None)
    entry = prep.entry_cls(task, device, options.overrides)
    result = RunResult(task=task.name, entry=prep.entry_cls.name, seed=seed, status=RUNNING,
                       official=prep.official, metric=task.metric.name, threshold=prep.threshold,
                       hparams=dict(entry.hp), hardware=prep.hardware, software=prep.software,
                       instance=prep.instance, cost_per_hour=prep.cost_per_hour,
                       precision=prep.precision, compile=prep.compile,
                       budget={"max_epochs": options.max_epochs, "max_seconds": options.max_seconds,
                               "max_wall_seconds": options.max_wall_seconds},
                       started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                       run_dir=str(run_dir), distributed=_distributed_facts(world, entry, options))
    record = RunRecord(run_dir, task.metric.dawnbench_column)
    log = record.events
    log.event(mllog.SUBMISSION_BENCHMARK, task.name)
    log.event(mllog.SUBMISSION_DIVISION, mllog.OPEN)
    log.event(mllog.SUBMISSION_ORG, options.org or getpass.getuser())
    log.event(mllog.SUBMISSION_PLATFORM, options.platform or environment.describe_hardware(prep.hardware))
    log.event(mllog.OFFICIAL, prep.official)
    log.event(mllog.CACHE_CLEAR, False)
    splits = data.read_meta(task.dataset)["splits"]
    log.event(mllog.TRAIN_SAMPLES, splits[task.train_split]["count"])
    log.event(mllog.EVAL_SAMPLES, splits[task.scored_split]["count"])
    log.event(mllog.ENTRY, entry.name)
    log.event(mllog.SEED, seed)
    log.event(mllog.PRECISION, MLPERF_NAMES[prep.precision])
    log.event(mllog.COMPILE, prep.compile)
    log.event(mllog.HPARAMS, entry.hp)
    if "batch_size" in entry.hp:
        log.event(mllog.GLOBAL_BATCH_SIZE, entry.hp["batch_size"] * world.world_size)
    if world.distributed:
        log.event(mllog.WORLD_SIZE, world.world_size, {"backend": world.backend, "scaling": options.scaling,
                                                       "per_worker_batch_size": entry.hp.get("batch_size")})
    log.event(mllog.EVAL_TARGET, prep.threshold)
    record.write(result)
    peers = world.local_peers()  # the other workers on this machine are the run's, not interference
    monitor = ResourceMonitor(record.dir / "resources.tsv", options.resource_interval,
                              timed_s=lambda: clock.timed_s, peers=peers).start()
    observer.run_started(index, options.runs, result)

    # The scored split belongs to the harness: loaded before run_start, never timed.
    test_inputs, test_labels = data.load_split(task.dataset, task.scored_split)
    test_inputs, test_labels = torch.from_numpy(test_inputs), torch.from_numpy(test_labels)
    own = prep.entry_cls.own_precisions

    timer = comm.CommTimer() if world.distributed else None

    def context(timed: comm.CommTimer | None = None) -> TrainContext:
        return train_context(entry, task, seed, prep.precision, prep.compile, world, timed)
    gen = None
    ended = RUNNING
    with stop_on_signals(options.max_wall_seconds) as disarm:
        try:
            seed_everything(worker_seed(seed, world.rank))
            log.start(mllog.INIT_START)
            before = compile_stats()
            with clock.segment("init"), precision_scope(prep.precision, device, own):
                entry.warmup(synthetic_context(context(), test_inputs, test_labels))
            compiled = compile_stats() - before
            result.compile_s = compiled["seconds"] if prep.compile else None
            log.end(mllog.INIT_STOP, metadata={"compile_s": result.compile_s})
            seed_everything(worker_seed(seed, world.rank))
            before = compile_stats()
            world.barrier()  # every worker is ready: the clock starts on rank 0 after a barrier
            clock.start()
            log.start(mllog.RUN_START)
            with StepCounter() as counter:
                probe = ProgressProbe(counter, lambda: clock.timed_s, entry.hp.get("batch_size"),
                                      splits[task.train_split]["count"], options.max_epochs or entry.hp.get("epochs"))
                observer.training_started(probe)
                gen = entry.train(context(timer.start() if timer else None))
                ended = _drive(gen, entry, task, prep.threshold, options, clock, record, result,
                               observer, probe, test_inputs, test_labels, world, timer)
            if options.continue_after_target and result.evals:
                with clock.segment("checkpoint"):
                    _save_final(entry, task, record, result)
        except StopRun as stop:
            ended, result.error = stop.status, str(stop)
        except Exception as err:  # the entry failed: keep what was measured
            ended, result.error = "aborted", f"{type(err).__name__}: {err}"
            (Path(run_dir) / "error.txt").write_text(traceback.format_exc())
        finally:
            disarm()
            if gen is not None:
                gen.close()
            if timer is not None:
                timer.stop()
            monitor.stop()
            result.resources = monitor.summary()
        if prep.compile:  # graphs compiled after run_start: their compile time was timed
            result.graphs_compiled_timed = (compile_stats() - before)["graphs"]
        # A run that passed keeps its success even if it was stopped while continuing.
        result.status = "success" if result.time_to_accuracy_s is not None else ended
        _update_times(result, clock)
        if result.evals:
            result.throughput = _measure_throughput(entry, result, device, prep.precision, world.world_size)
        if result.time_to_accuracy_s is not None and prep.cost_per_hour is not None:
            result.training_cost_usd = pricing.training_cost(result.time_to_accuracy_s, prep.cost_per_hour)
        log.end(mllog.RUN_STOP, metadata={"status": result.status, "timed_s": clock.timed_s})
        record.write(result)
        record.close()
    observer.run_finished(result)
    return result


def _drive(gen, entry: Entry, task: Task, threshold: float, options: RunOptions, clock: Clock,
           record: RunRecord, result: RunResult, observer: RunObserver, probe: ProgressProbe,
           test_inputs: torch.Tensor, test_labels: torch.Tensor, world: World,
           timer: comm.CommTimer | None) -> str:
    """Alternate timed training and untimed evaluation; return the status if not success.

    With several workers, every yield is a meeting point: a barrier ends the timed
    segment (the clock covers the slowest worker), the workers' communication timers
    are gathered, and rank 0's decision to stop or go on is broadcast.
    """
    log = record.events
    last_timed, last_samples, last_epoch = 0.0, 0, 0.0
    precision, own = options.precision, entry.own_precisions
    while True:
        block = {"first_epoch_num": last_epoch, "samples_count": last_samples}
        log.start(mllog.BLOCK_START, metadata=block)
        with clock.segment("train"), precision_scope(precision, entry.device, own):
            progress = next(gen, None)
            world.barrier()
        log.end(mllog.BLOCK_STOP, metadata={**block, "samples_count": progress.samples if progress else last_samples})
        if progress is None:
            return "not_reached"  # the entry's schedule ended (on every worker at once)
        if timer is not None:
            with clock.segment("log"):
                _account(result, log, world.gather(timer.totals()), clock.timed_s, progress.epoch)
        loss = _loss_value(progress)
        if loss is not None and not np.isfinite(loss):
            result.error = f"training loss was {loss} at epoch {progress.epoch:g}"
            world.decide(stop=True)
            return "diverged"
        log.start(mllog.EVAL_START, metadata={"epoch_num": progress.epoch})
        with clock.segment("eval"):
            value = evaluate(entry, task, test_inputs, test_labels, precision)
        with clock.segment("log"):
            timed = clock.timed_s
            result.evals.append(Evaluation(progress.epoch, progress.samples, timed, value))
            log.end(mllog.EVAL_STOP, metadata={"epoch_num": progress.epoch})
            log.event(mllog.EVAL_ACCURACY, value, {"epoch_num": progress.epoch,
                                                   "samples_count": progress.samples,
                                                   "timed_s": timed, "loss": loss})
            passed = task.passes(value, threshold)
            first_pass = passed and result.time_to_accuracy_s is None
            if first_pass:
                result.time_to_accuracy_s = timed
                result.epochs_to_target = progress.epoch
                result.samples_to_target = progress.samples
        if first_pass:
            with clock.segment("checkpoint"):
                _save_checkpoint(entry, task, record, result, progress.epoch, value)
        with clock.segment("log"):
            _update_times(result, clock)
            record.write(result)
            rate = (progress.samples - last_samples) / (timed - last_timed) if timed > last_timed else None
            last_timed, last_samples, last_epoch = timed, progress.samples, progress.epoch
            probe.observe(progress.samples, progress.epoch)
            observer.evaluated(result, progress, rate)
        budget_spent = ((options.max_epochs is not None and progress.epoch >= options.max_epochs)
                        or (options.max_seconds is not None and timed >= options.max_seconds))
        finished = passed and not options.continue_after_target
        world.decide(stop=finished or budget_spent)
        if finished:
            return "success"
        if budget_spent:
            return "not_reached"


def _distributed_facts(world: World, entry: Entry, options: RunOptions) -> dict[str, Any] | None:
    """What SPEC §13 asks a distributed run's record to say before anything is measured."""
    if not world.distributed:
        return None
    per_worker = entry.hp.get("batch_size")
    return {"world_size": world.world_size, "nnodes": world.nnodes, "backend": world.backend,
            "scaling": options.scaling, "per_worker_batch_size": per_worker,
            "global_batch_size": per_worker * world.world_size if per_worker else None,
            "threads_per_worker": world.threads() if entry.device.type == "cpu" else None,
            "collective_timeout_s": options.collective_timeout, "launch_s": world.launch_s}


def _account(result: RunResult, log: mllog.EventLog, workers: list[list[float]], timed_s: float,
             epoch: float) -> None:
    """Fold the workers' communication timers into the record and the events log."""
    figures = comm.accounting(workers, timed_s, epoch)
    assert result.distributed is not None
    result.distributed.update(figures)
    log.event(mllog.COMMUNICATION, figures["comm_overhead_pct"],
              {"epoch_num": epoch, "comm_exposed_per_epoch_s": figures["comm_exposed_per_epoch_s"],
               "time_per_epoch_s": figures["time_per_epoch_s"], "accounted_pct": figures["accounted_pct"]})


def _save_checkpoint(entry: Entry, task: Task, record: RunRecord, result: RunResult,
                     epoch: float, value: float) -> None:
    """Save the model that first reached the target, for ``dawnbench infer`` (untimed)."""
    state = entry.inference_state()
    if state is None:
        return  # the entry cannot be saved; `dawnbench infer` says so
    path = checkpoint.save(record.dir, state, task=task.name, entry=entry.name, hparams=dict(entry.hp),
                           epoch=epoch, value=value)
    result.checkpoint = path.name
    record.events.event(mllog.CHECKPOINT, path.name, {"epoch_num": epoch})


def _save_final(entry: Entry, task: Task, record: RunRecord, result: RunResult) -> None:
    """With ``--continue``, the model at the end of training too (untimed): what ``dawnbench
    generalize`` scores beside the one that first reached the target."""
    state = entry.inference_state()
    if state is None:
        return
    last = result.evals[-1]
    path = checkpoint.save(record.dir, state, task=task.name, entry=entry.name, hparams=dict(entry.hp),
                           epoch=last.epoch, value=last.value, name=checkpoint.FINAL_MODEL_FILE)
    result.checkpoint_final = path.name
    record.events.event(mllog.CHECKPOINT, path.name, {"epoch_num": last.epoch})


def _measure_throughput(entry: Entry, result: RunResult, device: torch.device,
                        precision: str, workers: int = 1) -> dict[str, Any]:
    """Samples/s to the last evaluation, and FLOP figures when the entry exposes its model."""
    flops, problem = None, None
    try:
        probe = entry.flop_model()
        if probe is not None:
            flops = profiling.training_flops_per_sample(*probe)
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


def run_many(options: RunOptions, observer: RunObserver | None = None,
             ensure_data: Callable[[str], Any] = data.ensure) -> list[RunResult]:
    """Run ``options.runs`` seeds one after another; stop early if one is interrupted.

    Under torchrun every worker calls this: rank 0 runs and records each seed
    (:func:`execute`), the others follow it (:func:`dawnbench.distributed.follower.follow`)
    and return no results.
    """
    prep = prepare(options)
    world = World.from_env(prep.device)
    if world.distributed:
        prep = replace(prep, device=world.device(prep.device))
        options = replace(options, overrides=per_worker_overrides(options, prep.entry_cls, prep.task, world))
        world = world.init(prep.device, options.collective_timeout)
    if world.local_rank == 0:  # one fetch per machine; the others wait for it
        ensure_data(prep.task.dataset)
    world.barrier()
    results = []
    try:
        for i in range(options.runs):
            seed = options.seed + i
            if not world.leader:
                # Imported here, not at the top: the follower imports this module.
                from dawnbench.distributed.follower import follow
                if follow(options, prep, seed, world) in ("interrupted", "timeout"):
                    break
                continue
            run_dir = _new_run_dir(options.out_dir, prep.task.name, prep.entry_cls.name, seed)
            announce_run_dir(run_dir)
            results.append(execute(options, prep, seed, run_dir, observer, index=i, world=world))
            status = results[-1].status
            # Rank 0 stopping out of step (it raised, or timed out) would leave the others
            # waiting at the next seed's first collective: end the launch instead.
            if status == "interrupted" or (world.distributed and status in ("aborted", "timeout")):
                break
    finally:
        world.close()
    return results


def run(task: str | Task = "mnist", entry: str | type[Entry] | None = None, seed: int = 0,
        **options: Any) -> RunResult:
    """One run with default options; see :class:`RunOptions` for the keywords."""
    return run_many(RunOptions(task=task, entry=entry, seed=seed, runs=1, **options))[0]
