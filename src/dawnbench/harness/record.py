"""The run record (SPEC §4): one directory per run, safe against a kill at any instant.

* ``events.log``  – ``:::MLLOG`` lines, appended and flushed as they happen;
* ``epochs.tsv``  – the DAWNBench training log: one row per evaluation;
* ``result.json`` – the summary, rewritten after every evaluation.

``epochs.tsv`` and ``result.json`` are replaced atomically (:mod:`dawnbench.io`), so a reader sees either the previous or the new version, never a
torn one. While a run is in progress ``result.json`` says ``"status": "running"``;
a record left with that status belongs to a process that was killed without a
chance to write its end (SIGKILL, power loss): its evaluations are still valid.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.harness.mllog import EventLog
from dawnbench.io import atomic_write_json, atomic_write_text

RUNNING = "running"
STATUSES = ("success", "not_reached", "diverged", "aborted", "interrupted", "timeout")


@dataclass
class Evaluation:
    epoch: float
    samples: int
    timed_s: float
    value: float


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
    generalization: dict[str, Any] | None = None  # `dawnbench generalize` (SPEC §15)
    inference: dict[str, Any] | None = None
    throughput: dict[str, Any] | None = None
    resources: dict[str, Any] | None = None  # the resource monitor's summary (SPEC §14)
    distributed: dict[str, Any] | None = None  # world, batch sizes, communication (SPEC §13)
    error: str | None = None
    started_at: str = ""
    run_dir: str = ""

    @property
    def succeeded(self) -> bool:
        return self.status == "success"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunResult:
        """Rebuild from ``result.json`` (keys this version does not know are ignored)."""
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known["evals"] = [Evaluation(**e) for e in d.get("evals") or []]
        return cls(**known)


class RunRecord:
    def __init__(self, run_dir: Path, dawnbench_column: str):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.events = EventLog(self.dir / "events.log")
        self._column = dawnbench_column

    def write(self, result: RunResult) -> None:
        """Flush everything measured so far (called after every evaluation)."""
        self.events.sync()
        rows = [f"epoch\thours\t{self._column}"]
        rows += [f"{e.epoch:g}\t{e.timed_s / 3600:.9f}\t{e.value:.4f}" for e in result.evals]
        atomic_write_text(self.dir / "epochs.tsv", "\n".join(rows) + "\n")
        atomic_write_json(self.dir / "result.json", result.to_dict())

    def close(self) -> None:
        self.events.close()


def read_result(run_dir: Path) -> dict[str, Any]:
    """A run's ``result.json``, checked: a clear error names the file when it is not one."""
    run_dir = Path(run_dir)
    path = run_dir / "result.json"
    if not run_dir.is_dir():
        raise DawnbenchError(f"{run_dir}: no such run directory. Pass a directory made by `dawnbench run`.")
    if not path.is_file():
        raise DawnbenchError(f"{path}: missing. {run_dir} is not a run directory made by `dawnbench run`.")
    try:
        result = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DawnbenchError(f"{path}: not valid JSON ({err}). The run record is damaged; "
                             "re-run training.") from None
    missing = [k for k in ("task", "entry", "threshold", "status") if k not in result] \
        if isinstance(result, dict) else ["all"]
    if missing:
        raise DawnbenchError(f"{path}: field(s) {', '.join(missing)} missing; this is not a "
                             "dawnbench run record.")
    return result
