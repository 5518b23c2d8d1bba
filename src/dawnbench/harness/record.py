"""The run record (SPEC §4): one directory per run, safe against a kill at any instant.

* ``events.log``  – ``:::MLLOG`` lines, appended and flushed as they happen;
* ``epochs.tsv``  – the DAWNBench training log: one row per evaluation;
* ``result.json`` – the summary, rewritten after every evaluation.

``epochs.tsv`` and ``result.json`` are replaced atomically (:mod:`dawnbench.io`), so a reader sees
either the previous or the new version, never a torn one. While a run is in progress ``result.json`` says ``"status": "running"``;
a record left with that status belongs to a process that was killed without a
chance to write its end (SIGKILL, power loss): its evaluations are still valid.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError, FileError
from dawnbench.harness.mllog import EventLog
from dawnbench.io import DiskReserve, atomic_write_json, atomic_write_text, read_json


class Status(str, Enum):
    """A run's status (SPEC §4): a string, so ``result.json`` holds and is compared with its text."""

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


@dataclass
class Evaluation:
    epoch: float
    samples: int
    timed_s: float
    value: float                                            # the task's deciding metric
    extra: dict[str, float] = field(default_factory=dict)  # the metric's other values (top-1 beside top-5, EM)
    stopped_by: str | None = None   # taken because a budget (max_seconds, max_epochs) or a signal ended training
                                    # between the entry's evaluation points; never a time to accuracy


@dataclass
class RunResult:
    """The content of ``result.json``; field names are the SPEC §4 keys."""

    task: str
    entry: str
    seed: int
    status: str
    official: bool
    metric: str
    threshold: float
    time_to_accuracy_s: float | None = None
    wall_s: float = 0.0
    timed_s: float = 0.0
    eval_s: float = 0.0
    init_s: float = 0.0
    log_s: float = 0.0
    checkpoint_s: float = 0.0
    compile_s: float | None = None      # torch.compile time inside init_s (None: not compiled)
    graphs_compiled_timed: int | None = None  # graphs compiled after run_start (should be 0)
    precision: str = "fp32"
    compile: str | None = None          # torch.compile mode
    epochs_to_target: float | None = None
    samples_to_target: int | None = None
    evals: list[Evaluation] = field(default_factory=list)
    hparams: dict[str, Any] = field(default_factory=dict)
    budget: dict[str, Any] = field(default_factory=dict)
    hardware: dict[str, Any] = field(default_factory=dict)
    software: dict[str, Any] = field(default_factory=dict)
    instance: str | None = None
    cost_per_hour: float | None = None
    training_cost_usd: float | None = None
    checkpoint: str | None = None       # model file saved at the first pass, relative to run_dir
    checkpoint_final: str | None = None  # with --continue: the model after the last evaluation
    subset: str | None = None           # a tree imported under a name, not the official one (unofficial)
    data_pipeline: str | None = None    # a streamed dataset's decoding: cpu, gpu (nvJPEG) or dali (SPEC §16)
    loader_workers: int | None = None   # a streamed dataset's DataLoader workers per rank (the first epoch's)
    memory_plan: dict[str, Any] | None = None  # the batches planned before the warm-up (harness/memory.py)
    interconnect: dict[str, Any] | None = None  # --p2p off: the NCCL switches set (SPEC §20)
    scheduler: dict[str, Any] | None = None  # run as a cluster job: its id, nodes, final state (SPEC §21)
    entry_facts: dict[str, Any] | None = None  # what the entry reports of how it ran (Entry.facts)
    generalization: dict[str, Any] | None = None  # `dawnbench generalize` (SPEC §15)
    harness: dict[str, Any] | None = None  # the harness's own cost while timed, as shares (harness/cost.py)
    inference: dict[str, Any] | None = None
    throughput: dict[str, Any] | None = None
    resources: dict[str, Any] | None = None  # the resource monitor's summary (SPEC §14)
    distributed: dict[str, Any] | None = None  # world, batch sizes, communication (SPEC §13)
    error: str | None = None
    started_at: str = ""
    run_dir: str = ""

    @property
    def succeeded(self) -> bool:
        return self.status == Status.SUCCESS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunResult:
        """Rebuild from ``result.json`` (keys this version does not know are ignored)."""
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known["evals"] = [Evaluation(**e) for e in d.get("evals") or []]
        return cls(**known)


class RunRecord:
    """The files of one run. It holds a :class:`~dawnbench.io.DiskReserve`: when the disk fills
    up, :meth:`release_reserve` frees room for the final status.

    ``columns``: the metric's DAWNBench TSV columns as (key, column, scale), the deciding key
    first — e.g. ``top5Accuracy`` and ``top1Accuracy`` for ImageNet, ``f1Score`` (0–1) for SQuAD.
    """

    def __init__(self, run_dir: Path, columns: tuple[tuple[str, str, float], ...]):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.reserve = DiskReserve(self.dir)
        self.events = EventLog(self.dir / "events.log")
        self._columns = columns

    def write(self, result: RunResult) -> None:
        """Flush everything measured so far (called after every evaluation)."""
        self.events.sync()
        deciding = self._columns[0][0]
        rows = ["\t".join(["epoch", "hours", *(column for _, column, _ in self._columns)])]
        for e in result.evals:
            values = {**e.extra, deciding: e.value}
            cells = [f"{values[key] * scale:.6g}" if key in values else "" for key, _, scale in self._columns]
            rows.append("\t".join([f"{e.epoch:g}", f"{e.timed_s / 3600:.9f}", *cells]))
        atomic_write_text(self.dir / "epochs.tsv", "\n".join(rows) + "\n")
        atomic_write_json(self.dir / "result.json", result.to_dict())

    def release_reserve(self) -> bool:
        """Free the reserved space (True if there was some): the disk is full and the final
        status must still be written."""
        return self.reserve.release()

    def close(self) -> None:
        self.events.close()
        self.reserve.release()


# The type of every result.json field a command reads (absent fields are allowed: records
# of older versions lack some). A record that breaks these is refused with the field named.
_NUMBER = (int, float)
_FIELD_TYPES: dict[str, tuple[tuple[type, ...], bool]] = {  # field -> (types, may be null)
    "task": ((str,), False), "entry": ((str,), False), "status": ((str,), False), "metric": ((str,), True),
    "seed": ((int,), True), "official": ((bool,), True), "threshold": (_NUMBER, False),
    "time_to_accuracy_s": (_NUMBER, True), "wall_s": (_NUMBER, True), "timed_s": (_NUMBER, True),
    "eval_s": (_NUMBER, True), "init_s": (_NUMBER, True), "log_s": (_NUMBER, True),
    "checkpoint_s": (_NUMBER, True), "compile_s": (_NUMBER, True), "graphs_compiled_timed": ((int,), True),
    "precision": ((str,), True), "compile": ((str,), True), "epochs_to_target": (_NUMBER, True),
    "samples_to_target": ((int,), True), "evals": ((list,), False), "hparams": ((dict,), True),
    "budget": ((dict,), True), "hardware": ((dict,), True), "software": ((dict,), True),
    "instance": ((str,), True), "cost_per_hour": (_NUMBER, True), "training_cost_usd": (_NUMBER, True),
    "checkpoint": ((str,), True), "checkpoint_final": ((str,), True), "generalization": ((dict,), True),
    "inference": ((dict,), True), "throughput": ((dict,), True), "resources": ((dict,), True),
    "distributed": ((dict,), True), "error": ((str,), True), "started_at": ((str,), True),
    "run_dir": ((str,), True), "data_pipeline": ((str,), True), "subset": ((str,), True),
    "memory_plan": ((dict,), True), "loader_workers": ((int,), True), "interconnect": ((dict,), True),
    "scheduler": ((dict,), True), "entry_facts": ((dict,), True), "harness": ((dict,), True),
}
_EVAL_FIELDS = {"epoch": _NUMBER, "samples": (int,), "timed_s": _NUMBER, "value": _NUMBER}
_EVAL_OPTIONAL = {"extra", "stopped_by"}   # {key: number}: the metric's other values; why training stopped


def _type_name(types: tuple[type, ...]) -> str:
    return {(str,): "a string", (int,): "an integer", (bool,): "true or false", _NUMBER: "a number",
            (list,): "a list", (dict,): "an object"}.get(types, "/".join(t.__name__ for t in types))


def check_record(doc: Any, path: Path) -> dict[str, Any]:
    """``doc`` if it is a run record whose fields have their types; a located error otherwise."""
    if not isinstance(doc, dict):
        raise FileError(path, "not a JSON object; this is not a dawnbench run record.")
    missing = [k for k in ("task", "entry", "threshold", "status") if k not in doc]
    if missing:
        raise FileError(path, f"field(s) {', '.join(missing)} missing; this is not a dawnbench run record.")
    for key, (types, nullable) in _FIELD_TYPES.items():
        if key not in doc or (doc[key] is None and nullable):
            continue
        value = doc[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise FileError(path, f"field '{key}' must be {_type_name(types)}, not {json.dumps(value)[:60]}. The run "
                                  "record was edited or damaged; re-run training.")
    for i, e in enumerate(doc["evals"]):
        bad = (not isinstance(e, dict) or not set(_EVAL_FIELDS) <= set(e) <= set(_EVAL_FIELDS) | _EVAL_OPTIONAL
               or any(not isinstance(e[k], t) or isinstance(e[k], bool) for k, t in _EVAL_FIELDS.items())
               or not all(isinstance(v, _NUMBER) and not isinstance(v, bool) and isinstance(k, str)
                          for k, v in (e.get("extra") or {}).items()) or not isinstance(e.get("extra", {}), dict)
               or not isinstance(e.get("stopped_by", ""), (str, type(None))))
        if bad:
            raise FileError(path, f"evals[{i}] must be {{epoch, samples, timed_s, value}} with numbers, not "
                                  f"{json.dumps(e)[:80]}. The run record was edited or damaged; re-run training.")
    return doc


def read_result(run_dir: Path) -> dict[str, Any]:
    """A run's ``result.json``, checked: a clear error names the file when it is not one."""
    run_dir = Path(run_dir)
    path = run_dir / "result.json"
    if not run_dir.is_dir():
        raise DawnbenchError(f"{run_dir}: no such run directory. Pass a directory made by `dawnbench run`.")
    if not path.exists() and not path.is_symlink():
        raise DawnbenchError(f"{path}: missing. {run_dir} is not a run directory made by `dawnbench run`.")
    return check_record(read_json(path, "run record"), path)
