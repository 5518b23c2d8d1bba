"""The run record: one directory per run, safe against a kill at any instant.

* ``events.log``  – ``:::MLLOG`` lines, appended and flushed as they happen;
* ``epochs.tsv``  – the DAWNBench training log: one row per evaluation;
* ``result.json`` – the summary, rewritten after every evaluation.

``epochs.tsv`` and ``result.json`` are replaced atomically (:mod:`dawnbench.io`), so a reader sees
either the previous or the new version, never a torn one. While a run is in progress ``result.json`` says ``"status": "running"``;
a record left with that status belongs to a process that was killed without a
chance to write its end (SIGKILL, power loss): its evaluations are still valid.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from dawnbench import bounds, schema
from dawnbench.errors import DawnbenchError, FileError
from dawnbench.io import DiskReserve, atomic_write_json, atomic_write_text, output_dir, read_foreign_lines, read_json
from dawnbench.records.mllog import STATUS_CORRECTED, EventLog, parse_line


class Status(str, Enum):
    """A run's status: a string, so ``result.json`` holds and is compared with its text."""

    SUCCESS = "success"
    NOT_REACHED = "not_reached"
    DIVERGED = "diverged"
    ABORTED = "aborted"
    INTERRUPTED = "interrupted"
    TIMEOUT = "timeout"
    RUNNING = "running"     # while the run trains; left so by a process killed without a chance to write its end

    def __str__(self) -> str:
        return self.value


RUNNING = Status.RUNNING
FINISHED = (Status.SUCCESS, Status.NOT_REACHED, Status.DIVERGED)   # runs that got to their end
FIX = ("The run record was edited or damaged: put the field back as docs/reference/documents.md declares it (its "
       "\"Physics\" section says what fields can be together; the run's events.log holds what was measured), or run "
       "again.")


def _numbers(doc: Any, where: str) -> None:
    """Every number of a nested summary finite and not negative, within ``schema.MAX_FLOPS``: what the analyses
    read of it (samples/s, a fraction of the roof, a resource's mean and max, communication seconds) can be true."""
    stack = [(doc, where)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, f"{at}.{k}") for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            # ≥ 0 within a rounding's hair (records written before the monitor clamped its means at 0 hold -1e-8)
            if not math.isfinite(value) or abs(value) > schema.MAX_FLOPS or value < -1e-6:
                raise ValueError(f"{at}' is {value!r}: a measured figure is a finite number ≥ 0")


def _measured(doc: dict[str, Any]) -> dict[str, Any]:
    _numbers(doc, "")
    _monitors(doc)
    return doc


def _monitors(doc: dict[str, Any]) -> None:
    """What a resource monitor writes and every command prints or judges by: its sentence printable, its shares of
    the CPUs a run may use between 0 and 1 (others cannot take more than all of them; bounds.MAX_OTHERS_SHARE)."""
    if "interference" in doc:
        if not isinstance(doc["interference"], str) or not doc["interference"]:
            raise ValueError(f".interference' is {doc['interference']!r}: the monitor's sentence, text")
        try:
            schema.printed_sentence(doc["interference"])
        except ValueError as err:
            raise ValueError(f".interference' {err}") from None
    for key in ("others_share_timed", "others_share"):
        value = doc.get(key)
        if key in doc and value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                                   or not 0 <= value <= bounds.MAX_OTHERS_SHARE):
            raise ValueError(f".{key}' is {value!r}: a share of the run's CPUs, between 0 and 1 (up to "
                             f"{bounds.MAX_OTHERS_SHARE:g} for the OS's late accounting)")


Measured = Annotated[dict[schema.Text, Any], AfterValidator(_measured)]   # a summary of measured figures, all ≥ 0


MetricValue = schema._number(-1e9, 1e9, unit="the metric's value")   # bounded by the task's metric below


@dataclass
class Evaluation:
    epoch: schema.Epochs                                   # fractional: the samples seen over the training split
    samples: schema.Count                                  # training samples seen when it was taken
    timed_s: schema.Seconds                                # the clock when it was taken
    value: MetricValue                                     # the task's deciding metric
    extra: dict[schema.Text, MetricValue] = field(default_factory=dict)  # the metric's other values (top-1, EM)
    stopped_by: schema.Text | None = None   # taken because a budget (max_seconds, max_epochs) or a signal ended
                                            # training between the entry's evaluation points; never a TTA


@dataclass
class RunResult:
    """The content of ``result.json``; field names are the SPEC §4 keys. The annotations are the record's
    declaration: what :func:`read_result` and every command that reads a run accept (``schema.py``), the
    field table of docs/reference/documents.md, and the errors that name a field — written once, here. The
    harness writes the record through this class; a document that does not fit is refused, naming the field.
    A few rules bind fields together (``_consistent``)."""

    task: schema.Label                          # mnist, cifar10, imagenet, squad, … (dawnbench tasks)
    entry: schema.Label                         # the entry's name, or its file (--entry FILE.py)
    status: Status                              # how the run ended (docs/rules.md, "Statuses")
    threshold: MetricValue                      # the target the run trained to (the task's, or --target)
    seed: schema.Seed | None = None                    # null: unknown (a job that ended before its run started)
    official: schema.Flag = False               # kept the task's own target, data and rules: rankable
    metric: schema.Name = ""                    # the deciding metric's name (top1_accuracy, f1)
    time_to_accuracy_s: schema.PositiveSeconds | None = None  # timed seconds at the first passing evaluation
    setup_s: schema.Seconds = 0.0               # before the warm-up: the process's start (imports, data, the memory
                                                # plan); a later run of one command: from the previous run's end
    wall_s: schema.Seconds = 0.0                # everything from run_start, evaluations included
    timed_s: schema.Seconds = 0.0               # what the clock counted (training, not evaluation; docs/rules.md)
    eval_s: schema.Seconds = 0.0                # evaluating, off the clock
    init_s: schema.Seconds = 0.0                # the warm-up on synthetic data (SPEC §12), untimed
    log_s: schema.Seconds = 0.0                 # writing the log and the record, off the clock
    checkpoint_s: schema.Seconds = 0.0          # saving model.pt, off the clock
    compile_s: schema.Seconds | None = None     # torch.compile time inside init_s (null: not compiled)
    graphs_compiled_timed: schema.Count | None = None  # graphs compiled after run_start (should be 0)
    precision: schema.Precision = "fp32"        # --precision (SPEC §12)
    compile: schema.Text | None = None          # torch.compile mode
    epochs_to_target: schema.PositiveEpochs | None = None  # the passing evaluation's epoch
    samples_to_target: schema.PositiveCount | None = None  # the passing evaluation's samples
    evals: Annotated[list[Evaluation], Field(max_length=bounds.MAX_EVALUATIONS)] = field(default_factory=list)
    hparams: dict[schema.Text, Any] = field(default_factory=dict)  # the entry's, with every --set applied
    budget: dict[schema.Text, Any] = field(default_factory=dict)   # --max-seconds, --max-epochs
    hardware: dict[schema.Text, Any] = field(default_factory=dict)  # CPU, cores, accelerator, memory
    software: dict[schema.Text, Any] = field(default_factory=dict)  # versions, the entry file's commit
    instance: schema.Text | None = None         # --instance: a cloud instance of the price catalog
    cost_per_hour: schema.UsdPerHour | None = None  # its price, or --cost-per-hour
    training_cost_usd: schema.Usd | None = None  # time to accuracy × price (SPEC §6)
    checkpoint: schema.Text | None = None       # model file saved at the first pass, relative to run_dir
    checkpoint_final: schema.Text | None = None  # with --continue: the model after the last evaluation
    subset: schema.Text | None = None           # a tree imported under a name, not the official one (unofficial)
    data_pipeline: schema.Text | None = None    # a streamed dataset's decoding: cpu, gpu (nvJPEG) or dali (SPEC §16)
    loader_workers: schema.Count | None = None  # a streamed dataset's DataLoader workers per rank (the first epoch's)
    memory_plan: Measured | None = None         # the batches planned before the warm-up (harness/memory.py)
    interconnect: dict[schema.Text, Any] | None = None  # --p2p off: the NCCL switches set (SPEC §20)
    scheduler: dict[schema.Text, Any] | None = None  # run as a cluster job: its id, nodes, final state (SPEC §21)
    self_reported: schema.Flag = False          # the accuracy is the run's own (a tracked script's evaluation, an
                                                # imported MLPerf log), not the harness's scorer on the held split
    tracked: dict[schema.Text, Any] | None = None  # a script's own loop under dawnbench.track() (docs/rules.md)
    imported: dict[schema.Text, Any] | None = None  # made from an MLPerf log by `dawnbench import-log`: which, whose clock
    entry_facts: dict[schema.Text, Any] | None = None  # what the entry reports of how it ran (Entry.facts)
    generalization: dict[schema.Text, Any] | None = None  # `dawnbench generalize` (SPEC §15)
    harness: Measured | None = None             # the harness's own cost while timed, as shares (harness/cost.py)
    inference: Measured | None = None           # `dawnbench infer` (SPEC §5)
    throughput: Measured | None = None          # samples/s, FLOP/s against the roof (profiling/flops.py)
    resources: Measured | None = None           # the resource monitor's summary (SPEC §14)
    distributed: Measured | None = None          # world, batch sizes, communication (SPEC §13)
    error: schema.Message | None = None         # why a run that did not succeed ended
    started_at: schema.Moment = ""              # ISO 8601, the run's start ("": unknown)
    run_dir: schema.PathText = ""                   # the folder as written (readers use the folder they are given)

    @property
    def total_wall_s(self) -> float:
        """Wall time from the command's start (a later run: the previous run's end) to this run's record:
        setup, the warm-up and everything from run_start."""
        return self.setup_s + self.init_s + self.wall_s

    @property
    def succeeded(self) -> bool:
        return self.status == Status.SUCCESS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: str | Path = "result.json") -> RunResult:
        """Rebuild from ``result.json``, checked against the declaration (keys this version does not know are
        ignored); a :class:`~dawnbench.errors.FileError` naming ``path`` and the field otherwise."""
        return schema.load(Record, d, path, fix=FIX)


def epochs_tsv(result: RunResult, columns: tuple[tuple[str, str, float], ...]) -> str:
    """The DAWNBench training log of ``result``'s evaluations: ``epoch hours <metric columns>`` (see RunRecord)."""
    return "\t".join(["epoch", "hours", *(column for _, column, _ in columns)]) + "\n" + _rows(result.evals, columns)


def _rows(evals: list[Evaluation], columns: tuple[tuple[str, str, float], ...]) -> str:
    deciding, rows = columns[0][0], []
    for e in evals:
        values = {**e.extra, deciding: e.value}
        cells = [f"{values[key] * scale:.6g}" if key in values else "" for key, _, scale in columns]
        rows.append("\t".join([f"{e.epoch:g}", f"{e.timed_s / 3600:.9f}", *cells]) + "\n")
    return "".join(rows)


# result.json is rewritten after an evaluation once the time since its last write is SPACING × what that write took,
# so keeping it costs at most 1/SPACING of the run however many evaluations there are (3,000 tracked evaluations
# once took 169 s of rewriting, each write longer than the last). A passing evaluation and the end are written at once.
SPACING = 20
WRITE_FIX = ("So dawnbench did not write it: events.log and epochs.tsv hold every evaluation, result.json the last "
             "record that passed.")


class RunRecord:
    """The files of one run. It holds a :class:`~dawnbench.io.DiskReserve`: when the disk fills
    up, :meth:`release_reserve` frees room for the final status.

    ``columns``: the metric's DAWNBench TSV columns as (key, column, scale), the deciding key
    first — e.g. ``top5Accuracy`` and ``top1Accuracy`` for ImageNet, ``f1Score`` (0–1) for SQuAD.

    Each evaluation is appended to ``epochs.tsv`` and ``events.log`` as it is taken (constant time); ``result.json``
    follows as ``SPACING`` allows, and is checked by the door every reader uses (:func:`check_record`) before it is
    written: a record its readers would refuse is never written.
    """

    def __init__(self, run_dir: Path, columns: tuple[tuple[str, str, float], ...]):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.reserve = DiskReserve(self.dir)
        self.events = EventLog(self.dir / "events.log")
        self._columns = columns
        self._rows = 0                          # evaluations in epochs.tsv
        self._written_at = self._cost = 0.0     # when result.json was last written (monotonic), and what it took
        self._passed: float | None = None       # the time to accuracy result.json holds

    def write(self, result: RunResult, final: bool = False) -> None:
        """Flush everything measured so far (called after every evaluation; ``final``: the run's end)."""
        self.events.sync()
        self._append_rows(result)
        now = time.monotonic()
        if final or result.time_to_accuracy_s != self._passed or now - self._written_at >= SPACING * self._cost:
            doc = result.to_dict()
            schema.load(Record, doc, self.dir / "result.json", fix=WRITE_FIX)   # the door its readers use
            atomic_write_json(self.dir / "result.json", doc)
            self._passed, self._written_at = result.time_to_accuracy_s, time.monotonic()
            self._cost = self._written_at - now

    def admit(self, result: RunResult) -> None:
        """The evaluations since the last write, with the one before them (and the passing one), through the door
        its readers use: in constant time, so that an evaluation they would refuse is refused as it is taken."""
        earlier = result.evals[:max(0, self._rows - 1)]
        passing = [e for e in earlier if result.time_to_accuracy_s is not None
                   and math.isclose(e.timed_s, result.time_to_accuracy_s, rel_tol=1e-9, abs_tol=1e-9)]
        recent = dataclasses.replace(result, evals=passing[:1] + result.evals[len(earlier):])
        schema.load(Record, recent.to_dict(), self.dir / "result.json", fix=WRITE_FIX)

    def _append_rows(self, result: RunResult) -> None:
        if self._rows == 0 or self._rows > len(result.evals):
            atomic_write_text(self.dir / "epochs.tsv", epochs_tsv(result, self._columns))
        elif self._rows < len(result.evals):
            with open(self.dir / "epochs.tsv", "a", encoding="utf-8") as f:
                f.write(_rows(result.evals[self._rows:], self._columns))
                f.flush()
                os.fsync(f.fileno())
        self._rows = len(result.evals)

    def release_reserve(self) -> bool:
        """Free the reserved space (True if there was some): the disk is full and the final
        status must still be written."""
        return self.reserve.release()

    def close(self) -> None:
        self.events.close()
        self.reserve.release()


def _consistent(r: RunResult) -> RunResult:
    """What one field says of another: evaluations in the order they were taken (epochs, samples and timed
    seconds never decreasing); a success has a time to accuracy, taken at one of its evaluations, which reached
    the threshold, and its epochs and samples to target are that evaluation's; a time to accuracy (and the
    epochs and samples to it) only with a success — or a record left ``running`` by a process killed after it;
    values within the task's metric's range."""
    from dawnbench.tasks import QUICK, QUICK_TRIALS, SUBSET_TASKS, TASKS  # where the task is one of ours

    named = {t.casefold(): t for t in TASKS}
    if r.task not in TASKS and r.task.casefold() in named:
        raise ValueError(f"task {r.task!r} is not a task; {named[r.task.casefold()]!r} is: a task's name is written "
                         "as dawnbench writes it")
    if r.task in TASKS and not TASKS[r.task].metric.low <= r.threshold <= TASKS[r.task].metric.high:
        metric = TASKS[r.task].metric
        raise ValueError(f"threshold {r.threshold:g} is not a target of {metric.name}, which lies from "
                         f"{metric.low:g} to {metric.high:g}")
    if r.compile_s is not None and r.compile_s > r.init_s * (1 + bounds.ROUNDING) + 1e-3:
        raise ValueError(f"compile_s {r.compile_s:g} is more than init_s {r.init_s:g}: compiling is part of the "
                         "warm-up")
    if r.started_at and r.started_at[:10] > (dt.date.today() + dt.timedelta(days=1)).isoformat():
        raise ValueError(f"started_at {r.started_at} is in the future")
    if r.task in TASKS and r.metric and r.metric != TASKS[r.task].metric.name:
        raise ValueError(f"metric {r.metric!r} is not {r.task}'s ({TASKS[r.task].metric.name}): a task has one "
                         "deciding metric")
    for i, (earlier, later) in enumerate(zip(r.evals, r.evals[1:]), 1):
        for name in ("epoch", "samples", "timed_s"):
            if getattr(later, name) < getattr(earlier, name):
                raise ValueError(f"evals[{i}].{name} is below the evaluation's before it: evaluations are recorded "
                                 "in the order they were taken")
    for i, e in enumerate(r.evals):
        if (e.samples > 0 and not e.epoch > 0) or (e.epoch > 0 and not e.samples > 0 and r.imported is None):
            raise ValueError(f"evals[{i}] has epoch {e.epoch:g} and samples {e.samples:g}: training that saw samples "
                             "made part of an epoch, and the other way round (only an imported MLPerf log may leave "
                             "its samples_count out)")
    first = next((i for i, e in enumerate(r.evals) if e.stopped_by is None and e.value >= r.threshold), None)
    if first is not None and r.status in (Status.NOT_REACHED, Status.TIMEOUT):   # not one that failed after its pass
        raise ValueError(f"status {r.status}, but evals[{first}] reached the threshold {r.threshold:g} (value "
                         f"{r.evals[first].value:g}): a run whose evaluation reached its target is a success")
    if r.status == Status.SUCCESS and first is not None and r.time_to_accuracy_s is not None and not math.isclose(
            r.evals[first].timed_s, r.time_to_accuracy_s, rel_tol=1e-9, abs_tol=1e-9):
        raise ValueError(f"time_to_accuracy_s is {r.time_to_accuracy_s:g} s, but evals[{first}] reached the "
                         f"threshold first, at {r.evals[first].timed_s:g} s: the time to accuracy is the first "
                         "passing evaluation's")
    if r.status == Status.SUCCESS:
        if r.time_to_accuracy_s is None:
            raise ValueError("status success but time_to_accuracy_s is null: a success has a time to accuracy")
        at = [e for e in r.evals if math.isclose(e.timed_s, r.time_to_accuracy_s, rel_tol=1e-9, abs_tol=1e-9)]
        passing = [e for e in at if e.stopped_by is None and e.value >= r.threshold]
        if not passing:
            why = ("the one there was taken because a budget or a signal stopped training (stopped_by), and "
                   "such an evaluation is never a time to accuracy" if any(e.stopped_by for e in at) else
                   f"none there reached the threshold {r.threshold:g}" if at else "there is none")
            raise ValueError(f"status success, but of the evaluations at time_to_accuracy_s "
                             f"{r.time_to_accuracy_s:g} s {why}")
        for name, taken in (("epochs_to_target", "epoch"), ("samples_to_target", "samples")):
            said = getattr(r, name)
            if said is not None and not any(math.isclose(said, getattr(e, taken), rel_tol=1e-9) for e in passing):
                raise ValueError(f"{name} is {said:g}, not the {taken} of the evaluation that reached the threshold")
    elif r.status != Status.RUNNING and (r.time_to_accuracy_s, r.epochs_to_target, r.samples_to_target) != (
            None, None, None):
        raise ValueError(f"status {r.status} with a time (or epochs, samples) to accuracy: only a success has one")
    if r.time_to_accuracy_s is not None and r.time_to_accuracy_s > r.timed_s * (1 + 1e-9) + 1e-9:
        raise ValueError(f"time_to_accuracy_s {r.time_to_accuracy_s:g} is more than the run's timed_s {r.timed_s:g}: "
                         "the time to accuracy is part of what the clock counted")
    if r.task in TASKS:
        if r.subset is not None and not (r.subset == QUICK and r.task in QUICK_TRIALS) and r.task not in SUBSET_TASKS:
            raise ValueError(f"subset {r.subset!r} on {r.task}: {r.task} has one official dataset; its only subset "
                             f"is a quick trial's ({QUICK!r})" if r.task in QUICK_TRIALS else
                             f"subset {r.subset!r} on {r.task}: {r.task} has one official dataset")
        if r.official and (r.subset is not None or r.threshold != TASKS[r.task].threshold):
            raise ValueError("official is true, but the run trained on a subset or to another threshold than "
                             f"{r.task}'s {TASKS[r.task].threshold:g}: such a run is unofficial")
    batch = r.hparams.get("batch_size")
    if batch is not None and not (isinstance(batch, int) and not isinstance(batch, bool) and 1 <= batch <= bounds.MAX_COUNT):
        raise ValueError(f"hparams.batch_size is {batch!r}: a batch holds a whole number of samples, at least 1")
    flag = (r.resources or {}).get("interference")
    if flag is not None and not (isinstance(flag, str) and flag and len(flag) <= schema.MAX_MESSAGE):
        raise ValueError(f"resources.interference must be the monitor's sentence (text of 1 to {schema.MAX_MESSAGE} "
                         "characters) or absent")
    for i, e in enumerate(r.evals):
        if e.extra.get("top1_accuracy", -math.inf) > (e.value if r.metric == "top5_accuracy" else math.inf):
            raise ValueError(f"evals[{i}].extra.top1_accuracy {e.extra['top1_accuracy']:g} is above its top-5 "
                             f"{e.value:g}: the top-1 guess is one of the top five")
    metric = TASKS[r.task].metric if r.task in TASKS else None
    for i, e in enumerate(r.evals if metric is not None else ()):
        for name, value in (("value", e.value), *((f"extra.{k}", v) for k, v in e.extra.items())):
            if not metric.low <= value <= metric.high:
                raise ValueError(f"evals[{i}].{name} is {value:g}: {metric.name} lies from {metric.low:g} to "
                                 f"{metric.high:g}")
    return r


def _devices(r: RunResult) -> tuple[int, str]:
    """How many devices trained the run, and their kind (``bounds.DEVICE_FLOP_RATE``'s key): a record that names
    no hardware (an imported log, an old record) is held to a GPU's rates."""
    if r.imported is not None:      # an MLPerf log says nothing of its devices: held as a log is (records/mlperf.py)
        return bounds.MACHINES, "gpu"
    world = (r.distributed or {}).get("world_size")
    count = (r.hardware or {}).get("accelerator_count")
    devices = max([v for v in (world, count) if isinstance(v, int) and not isinstance(v, bool) and v > 0] or [1])
    cpu = bool(r.hardware) and not r.hardware.get("accelerator") and str(r.hardware.get("device", "cpu")) == "cpu"
    return min(devices, bounds.MACHINES), "cpu" if cpu else "gpu"


def epoch_size(task: str, subset: str | None = None) -> int | None:
    """Samples in one epoch of ``task``'s training split — its quick trial's items for ``subset`` "quick" (None:
    not one of dawnbench's tasks, or a subset a user imported, whose size the record does not say)."""
    from dawnbench.data import DATASETS
    from dawnbench.tasks import QUICK, QUICK_TRIALS, TASKS

    if subset == QUICK and task in QUICK_TRIALS:
        return QUICK_TRIALS[task][0]
    if subset is not None or task not in TASKS or TASKS[task].dataset not in DATASETS:
        return None
    return DATASETS[TASKS[task].dataset].counts.get(TASKS[task].train_split)


def check_point(at: str, epoch: float, samples: float, timed: float, devices: int, size: int | None,
                task: str = "") -> None:
    """One point of training — ``epoch`` epochs, ``samples`` samples, ``timed`` seconds on ``devices`` — as physics
    allows it: an epoch of 1 to ``MAX_EPOCH_SAMPLES`` samples (of a task's official split: within
    ``EPOCH_SLACK``× its ``size``) and of at least ``MIN_EPOCH_S``, no device past ``MAX_SAMPLES_PER_S``. A
    ValueError names ``at`` and the rule."""
    if epoch > 0 and samples <= 0 and size:    # samples not stated: an epoch of the split, for the rates below
        samples = epoch * size
        if samples < 1:
            raise ValueError(f"{at} epoch {epoch:g} is less than one of {task}'s {size:,} training samples: an epoch "
                             "counts the passes over the training split made so far")
    elif epoch > 0 and samples > 0:
        per_epoch = samples / epoch
        if not 1 <= per_epoch <= bounds.MAX_EPOCH_SAMPLES:
            raise ValueError(f"{at} epoch {epoch:g} and samples {samples:g} make an epoch of {per_epoch:g} samples: "
                             f"an epoch holds from 1 to {bounds.MAX_EPOCH_SAMPLES:g} (the largest public training set "
                             "holds 5.85e9)")
        if size and not size / EPOCH_SLACK <= per_epoch <= size * EPOCH_SLACK:
            raise ValueError(f"{at} epoch {epoch:g} and samples {samples:g} make an epoch of {per_epoch:,.6g} "
                             f"samples, but an epoch of {task}'s training split holds {size:,}: give the samples "
                             "trained so far and the epochs they make")
    if epoch > max(timed, 0) / bounds.MIN_EPOCH_S:
        raise ValueError(f"{at} epoch {epoch:g} in {timed:g} timed seconds: an epoch is at least one optimizer step "
                         f"({bounds.MIN_EPOCH_S:g} s, a kernel's launch), so no run trains that many")
    if timed > 0 and samples / timed > devices * bounds.MAX_SAMPLES_PER_S:
        raise ValueError(f"{at} samples {samples:g} in {timed:g} timed seconds is {samples / timed:.3g} samples/s on "
                         f"{devices} device(s): no device trains on more than {bounds.MAX_SAMPLES_PER_S:g} a second")


EPOCH_SLACK = 2   # an epoch's samples against the split's: drop_last, padding across workers, SQuAD's features


def _physical(r: RunResult) -> RunResult:
    """What the fields can be together, by physics (bounds.py's second table, each limit with its source): an epoch
    holds from 1 to ``MAX_EPOCH_SAMPLES`` samples; no device trains on more than ``MAX_SAMPLES_PER_S`` samples a
    second, nor computes faster than its kind can, so a time to accuracy is not below its samples' FLOPs at the
    fastest such device, nor below the task's floor (``tasks.FLOORS_S``); the clock's parts (timed, evaluation,
    logging, checkpoints) fit in the wall time; the training cost is the price times the time to accuracy."""
    from dawnbench.tasks import floor_s

    devices, kind = _devices(r)
    points = [(f"evals[{i}]", e.epoch, e.samples, e.timed_s) for i, e in enumerate(r.evals)]
    if r.epochs_to_target and r.samples_to_target and r.time_to_accuracy_s:
        points.append(("the target's", r.epochs_to_target, r.samples_to_target, r.time_to_accuracy_s))
    # The split's size (the quick trial's, for one) binds every record, but one whose entry trains on part of the split
    # by its own hyperparameter (train_subset): its epochs are its own.
    size = None if r.hparams.get("train_subset") else epoch_size(r.task, r.subset)
    for at, epoch, samples, timed in points:
        check_point(at, epoch, samples, timed, devices, size, r.task)
    if r.time_to_accuracy_s is not None and not any(
            e.epoch or e.samples for e in r.evals if e.timed_s <= r.time_to_accuracy_s * (1 + 1e-9)):
        raise ValueError("a time to accuracy at an evaluation that saw no training (epoch 0, samples 0): a time to "
                         "accuracy is the time to train to the target, so its evaluation says how far training got")
    parts = r.timed_s + r.eval_s + r.log_s + r.checkpoint_s
    if parts > r.wall_s * (1 + bounds.ROUNDING) + 1e-3:
        raise ValueError(f"timed_s + eval_s + log_s + checkpoint_s is {parts:g} s, more than wall_s {r.wall_s:g} s: "
                         "they are parts of the wall time from run_start")
    if r.evals and r.evals[-1].timed_s > r.timed_s * (1 + 1e-9) + 1e-9:
        raise ValueError(f"evals[{len(r.evals) - 1}].timed_s {r.evals[-1].timed_s:g} is past the run's timed_s "
                         f"{r.timed_s:g}")
    floor = floor_s(r.task, r.threshold)
    if r.time_to_accuracy_s is not None and r.time_to_accuracy_s < floor:
        raise ValueError(f"time_to_accuracy_s {r.time_to_accuracy_s:g} is below {floor:g} s, the floor of a time to "
                         f"{r.threshold:g} on {r.task} (tasks.floor_s: about 100× below the fastest result known at "
                         "the task's target, a tenth of that at its quick trial's, one optimizer step below)")
    batch = r.hparams.get("batch_size")
    if isinstance(batch, int) and batch > bounds.MAX_EPOCH_SAMPLES:
        raise ValueError(f"hparams.batch_size is {batch:,}: a batch is drawn from a training set, and the largest "
                         f"holds 5.85e9 samples (bounds.MAX_EPOCH_SAMPLES, {bounds.MAX_EPOCH_SAMPLES:g})")
    if isinstance(batch, int) and r.samples_to_target and r.samples_to_target < min(batch, size or batch):
        raise ValueError(f"samples_to_target {r.samples_to_target:g} is fewer than hparams.batch_size {batch:,}: a "
                         "time to accuracy follows at least one optimizer step, which sees a whole batch")
    rate = (r.throughput or {}).get("samples_per_s")
    if isinstance(rate, (int, float)) and rate > devices * bounds.MAX_SAMPLES_PER_S:
        raise ValueError(f"throughput.samples_per_s {rate:g} is more than {devices} device(s) train on: no device "
                         f"trains on more than {bounds.MAX_SAMPLES_PER_S:g} samples a second")
    share = (r.throughput or {}).get("fraction_of_peak")
    if isinstance(share, (int, float)) and share > bounds.ABOVE_ROOF:
        raise ValueError(f"throughput.fraction_of_peak is {share:g}: a measured rate passes its own roof by noise "
                         f"({bounds.ABOVE_ROOF:g}×), not by more")
    per_sample = (r.throughput or {}).get("flops_per_sample")
    roof = devices * bounds.DEVICE_FLOP_RATE[kind]
    if per_sample and r.samples_to_target and r.time_to_accuracy_s:
        floor = r.samples_to_target * per_sample / roof
        if r.time_to_accuracy_s < floor * (1 - bounds.ROUNDING):
            raise ValueError(f"time_to_accuracy_s {r.time_to_accuracy_s:g} is below {floor:.3g} s, what "
                             f"samples_to_target × throughput.flops_per_sample take at {roof:g} FLOP/s ({devices} "
                             f"{kind} device(s) at the fastest such device's rate)")
    peak, workers = (r.throughput or {}).get("peak_gflops"), (r.throughput or {}).get("roof_workers") or 1
    if per_sample and peak and r.samples_to_target and r.time_to_accuracy_s:
        own = r.samples_to_target * per_sample / (peak * 1e9 * workers * bounds.ABOVE_ROOF)
        if r.time_to_accuracy_s < own * (1 - bounds.ROUNDING):
            raise ValueError(f"time_to_accuracy_s {r.time_to_accuracy_s:g} is below {own:.3g} s, what "
                             f"samples_to_target × throughput.flops_per_sample take at the record's own roof "
                             f"(throughput.peak_gflops {peak:g} × {workers} × {bounds.ABOVE_ROOF:g})")
    if (r.hardware or {}).get("accelerator_count") and not (r.hardware or {}).get("accelerator"):
        raise ValueError(f"hardware.accelerator_count is {r.hardware['accelerator_count']} with no accelerator named: "
                         "a count of accelerators names them")
    achieved = (r.throughput or {}).get("achieved_gflops")
    if achieved and achieved * 1e9 > roof:
        raise ValueError(f"throughput.achieved_gflops {achieved:g} is past {roof / 1e9:g} GFLOP/s, what {devices} "
                         f"{kind} device(s) can compute at the fastest such device's rate")
    if r.training_cost_usd is not None:
        if r.time_to_accuracy_s is None or r.cost_per_hour is None:
            raise ValueError("training_cost_usd without a time to accuracy and a cost_per_hour: the cost is one "
                             "times the other")
        cost = r.cost_per_hour * r.time_to_accuracy_s / 3600
        if not math.isclose(r.training_cost_usd, cost, rel_tol=bounds.ROUNDING, abs_tol=1e-9):
            raise ValueError(f"training_cost_usd {r.training_cost_usd:g} is not cost_per_hour × time_to_accuracy_s "
                             f"({cost:g})")
    return r


Record = Annotated[RunResult, AfterValidator(_consistent), AfterValidator(_physical)]   # result.json as the door reads it


def check_record(doc: Any, path: Path, fix: str = FIX) -> dict[str, Any]:
    """``doc`` if it is a run record every field of which can be true (the declaration above); a located
    error otherwise, ending with ``fix``."""
    if not isinstance(doc, dict):
        raise FileError(path, "not a JSON object; this is not a dawnbench run record.")
    missing = [k for k in ("task", "entry", "threshold", "status") if k not in doc]
    if missing:
        raise FileError(path, f"field(s) {', '.join(missing)} missing; this is not a dawnbench run record.")
    schema.load(Record, doc, path, fix=fix)
    return doc


def read_result(run_dir: Path) -> dict[str, Any]:
    """A run's ``result.json``, checked: a clear error names the file when it is not one."""
    run_dir = Path(run_dir)
    path = run_dir / "result.json"
    if not run_dir.is_dir():
        raise DawnbenchError(f"{run_dir}: no such run directory. Pass a directory made by `dawnbench run`.")
    if not path.exists() and not path.is_symlink():
        raise DawnbenchError(f"{path}: missing. {run_dir} is not a run directory made by `dawnbench run`.")
    return agrees_with_its_log(check_record(read_json(path, "run record"), path), run_dir)


# What a run's events.log says that its record says too: a disagreement is an edit of one of them (docs/reference/
# documents.md, "Physics": "A record agrees with its evidence").
_LOGGED = {"submission_benchmark": "task", "entry": "entry", "seed": "seed", "eval_target": "threshold",
           "dawnbench_official": "official"}


def agrees_with_its_log(doc: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """``doc`` (a checked record read from ``run_dir``) if it agrees with the run's own evidence — its command line
    (``software.argv``: the task it ran, an official run without --quick, --target or --subset), its ``epochs.tsv``
    (the hours of each evaluation) and its ``events.log``: the task, entry, seed, target and officialness the log
    states at the start, the split an epoch is of (``train_samples``), every evaluation the record holds (in order,
    the same epoch, value and timed seconds), and the status ``run_stop`` gives; a FileError naming both otherwise.
    A folder without a log, or with one that is not a run's (empty, foreign, an imported MLPerf log), is checked as
    far as its record and TSV go."""
    from dawnbench.tasks import TASKS

    path = Path(run_dir) / "result.json"
    argv = (doc.get("software") or {}).get("argv")
    said = [a for a in argv if a in ("--quick", "--target", "--subset")] if isinstance(argv, list) else []
    ran = argv[2] if isinstance(argv, list) and len(argv) > 2 and argv[1] == "run" else None
    if isinstance(ran, str) and ran in TASKS and ran != doc.get("task"):
        raise FileError(path, f"task is {json.dumps(doc.get('task'))}, but its command line (software.argv) ran "
                              f"{json.dumps(ran)}: the record and the run's command disagree. {FIX}")
    if doc.get("official") and said:
        raise FileError(path, f"official is true, but its command line (software.argv) says {said[0]}: such a run "
                              f"is unofficial. {FIX}")
    _agrees_with_its_tsv(doc, Path(run_dir) / "epochs.tsv", path)     # with or without its log
    log = Path(run_dir) / "events.log"
    if doc.get("imported") is not None or log.is_symlink() or not log.is_file():
        return doc
    firsts, evals, stop = _log_facts(log)
    if not firsts and not evals and stop is None:      # an empty or foreign log: no evidence of this run either way
        return doc
    for key, field_ in _LOGGED.items():
        if key in firsts and firsts[key] != doc.get(field_) and not (field_ == "official" and not doc.get(field_)):
            raise FileError(path, f"{field_} is {json.dumps(doc.get(field_))}, but its events.log says {key} "
                                  f"{json.dumps(firsts[key])}: the record and the run's log disagree. {FIX}")
    size = epoch_size(str(doc.get("task")), doc.get("subset"))
    if isinstance(firsts.get("train_samples"), int) and size and firsts["train_samples"] != size \
            and not (doc.get("hparams") or {}).get("train_subset"):
        raise FileError(path, f"its events.log says the run trained on {firsts['train_samples']:,} samples an epoch "
                              f"(train_samples), but the record's task and subset hold {size:,}: the record and the "
                              f"run's log disagree. {FIX}")
    for i, (mine, logged) in enumerate(zip(doc.get("evals") or [], evals)):
        if not (math.isclose(mine["value"], logged[1], rel_tol=1e-9, abs_tol=1e-9)
                and math.isclose(mine["epoch"], logged[0], rel_tol=1e-9, abs_tol=1e-12)
                and (logged[2] is None or math.isclose(mine["timed_s"], logged[2], rel_tol=1e-9, abs_tol=1e-9))):
            raise FileError(path, f"evals[{i}] is {mine['value']:g} at epoch {mine['epoch']:g}, {mine['timed_s']:g} "
                                  f"timed seconds, but its events.log has {logged[1]:g} at epoch {logged[0]:g}"
                                  + (f", {logged[2]:g} s" if logged[2] is not None else "")
                                  + f": the record and the run's log disagree. {FIX}")
    if len(doc.get("evals") or []) > len(evals):
        raise FileError(path, f"{len(doc['evals'])} evaluations, but its events.log holds {len(evals)}: the log "
                              f"takes each evaluation before the record does. {FIX}")
    if stop is not None and doc.get("status") != RUNNING and stop != doc.get("status"):
        raise FileError(path, f"status is {json.dumps(doc.get('status'))}, but its events.log's run_stop says "
                              f"{json.dumps(stop)}: the record and the run's log disagree. {FIX}")
    return doc


TSV_ROUNDING = 1e-3     # a TSV's hours are written to a few digits (dawnbench's nine decimals; others' fewer)


def _agrees_with_its_tsv(doc: dict[str, Any], tsv: Path, path: Path) -> None:
    """Each row of the run's ``epochs.tsv`` at an epoch the record has an evaluation at was taken when that
    evaluation was (its hours, to the precision the TSV keeps): the TSV is what ``export`` hands on as the
    submission's log, and its hours are the time it ranks by. A TSV that is not the table the run wrote (missing,
    a link, another header) is no evidence either way."""
    if tsv.is_symlink() or not tsv.is_file():
        return
    try:
        lines = [line.split("\t") for _, line in read_foreign_lines(tsv, "training log")]
        at = {name: lines[0].index(name) for name in ("epoch", "hours")}
        rows = [(float(r[at["epoch"]]), float(r[at["hours"]])) for r in lines[1:] if any(r)]
    except (FileError, ValueError, IndexError):
        return
    for epoch, hours in rows:                   # each row is an evaluation of the record's at its epoch
        same = [(i, e) for i, e in enumerate(doc.get("evals") or []) if math.isclose(e["epoch"], epoch, rel_tol=1e-5,
                                                                                       abs_tol=1e-9)]
        if same and not any(math.isclose(e["timed_s"], hours * 3600, rel_tol=TSV_ROUNDING, abs_tol=0.01)
                            for _, e in same):
            i, mine = same[0]
            raise FileError(path, f"evals[{i}] is at epoch {mine['epoch']:g} after {mine['timed_s']:g} timed seconds, "
                                  f"but its epochs.tsv has that epoch after {hours * 3600:g} s: the record and the "
                                  f"run's training log disagree. {FIX}")


def _log_facts(log: Path) -> tuple[dict[str, Any], list[tuple[float, float, float | None]], str | None]:
    """What a run's events.log states (each key's first value), its evaluations (epoch, value, timed seconds) and run_stop's
    status; lines that are not an MLLOG record of a run are passed over (the record is what is checked)."""
    firsts: dict[str, Any] = {}
    evals, stop = [], None
    for _, line in read_foreign_lines(log, "event log"):
        try:
            event = parse_line(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(event, dict) or not isinstance(event.get("metadata", {}), dict):
            continue
        key, value, meta = event.get("key"), event.get("value"), event.get("metadata") or {}
        if key == "eval_accuracy" and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                          for v in (meta.get("epoch_num"), value)):
            timed = meta.get("timed_s")
            evals.append((meta["epoch_num"], value, timed if isinstance(timed, (int, float))
                          and not isinstance(timed, bool) else None))
        elif key == "run_stop" or key == STATUS_CORRECTED:    # the launcher's or the scheduler's correction last
            stop = meta.get("status") if key == "run_stop" else value
        elif isinstance(key, str):
            firsts.setdefault(key, value)
    return firsts, evals, stop


def new_run_dir(out_dir: Path, task: str, entry: str, seed: int) -> Path:
    """A new, empty folder for one run, made here: created exclusively, so two runs started in the same second
    (two processes, two trackers) never share one — the second gets ``-2``; a name already taken by anything, a
    dangling link included, is passed over."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = output_dir(Path(out_dir)) / f"{task}-{entry}-{stamp}-seed{seed}"
    path, n = base, 1
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1
            path = base.with_name(f"{base.name}-{n}")
        except OSError as err:
            raise DawnbenchError(f"{path}: cannot make the run's folder ({err.strerror or err}). Pass a folder you can "
                                 "write to.") from None
