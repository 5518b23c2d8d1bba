"""A run's options and everything that can fail on them, checked before anything is measured.

:class:`RunOptions` is what a caller asks for (the CLI builds it from ``dawnbench run``'s
flags, which ``sweep`` and ``scale`` share); :func:`prepare` turns it into a
:class:`PreparedRun` — task, entry class, device, price, precision and compile mode
resolved — or raises a :class:`~dawnbench.errors.DawnbenchError` that says what to fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from dawnbench import bounds, environment
from dawnbench.bounds import DEFAULT_COLLECTIVE_TIMEOUT_S, SCALINGS
from dawnbench.entries import Entry, load_entry_class
from dawnbench.errors import DawnbenchError
from dawnbench.harness.core import COMPILE_MODES
from dawnbench.precision import check_precision
from dawnbench.records import prices
from dawnbench.tasks import QUICK, QUICK_TRIALS, Task, get_task, quick

# RunOptions' numeric fields and the options they come from (bounds.py holds their ranges)
RUN_OPTIONS = bounds.fields_of("--seed", "--runs", "--max-epochs", "--max-seconds", "--max-wall-seconds",
                               "--max-init-seconds", "--resource-interval", "--collective-timeout", "--cost-per-hour")

@dataclass
class RunOptions:
    """What ``dawnbench run`` asks for, as Python: each field is the flag of its name (``--max-epochs`` is
    ``max_epochs``), but for ``--out`` (``out_dir``), ``--set K=V`` (``overrides={"K": V}``) and ``--continue``
    (``continue_after_target``). :func:`prepare` checks them all before anything runs."""

    task: str | Task = "mnist"          # a registered name, or a Task object
    entry: str | type[Entry] | None = None  # built-in name, path to a .py, or a class; None: the task's default
    seed: int = 0
    runs: int = 1                       # seeds seed, seed+1, ... one after another
    target: float | None = None         # another threshold: makes the run unofficial
    max_epochs: float | None = None
    max_seconds: float | None = None    # timed seconds
    max_wall_seconds: float | None = None
    max_init_seconds: float | None = 1800.0  # the warm-up's budget (a longer one ends the run as timeout)
    continue_after_target: bool = False
    eval_on_interrupt: bool = False     # a Ctrl-C between evaluations evaluates first (budgets always do)
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
    subset: str | None = None           # ImageNet, SQuAD: a tree imported under this name (unofficial)
    quick: bool = False                 # a quick trial: the first training items, a lower target (tasks.QUICK_TRIALS)
    p2p: str = "on"                     # off: NCCL's peer-to-peer transport disabled (SPEC §20, interconnect)


P2P = ("on", "off")
# NCCL's own switch for its peer-to-peer transport (NVLink, PCIe): off sends GPU-to-GPU traffic through the host.
P2P_OFF_ENV = {"NCCL_P2P_DISABLE": "1"}


def interconnect(options: RunOptions, backend: str | None) -> dict[str, Any] | None:
    """What a run records of ``--p2p off``: NCCL's switches it set, or why they change nothing."""
    if options.p2p == "on":
        return None
    note = None if backend == "nccl" else (f"no effect: {backend or 'one process'} has no peer-to-peer transport "
                                           "to disable (NCCL between GPUs has)")
    return {"p2p": "off", "set": dict(P2P_OFF_ENV), **({"note": note} if note else {})}


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
    memory_plan: dict[str, Any] | None = None   # what harness.memory decided, recorded in every run
    eval_batch_size: int | None = None         # the planned evaluation batch (None: the entry's own)
    emulated: str | None = None                # why the precision is not native here (prepare(emulated_ok=True))


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise DawnbenchError(f"--device {name!r} is not a device name; use auto, cpu, cuda or cuda:N.") from None
    if device.type not in ("cpu", "cuda") or (device.type == "cpu" and device.index not in (None, 0)):
        raise DawnbenchError(f"--device {name}: dawnbench measures on cpu or cuda[:N] devices; use auto, cpu, "
                             "cuda or cuda:N.")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DawnbenchError(f"--device {name}: no CUDA device is available here; use --device cpu.")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise DawnbenchError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                                 f"cuda:0 to cuda:{torch.cuda.device_count() - 1}.")
    return device


def prepare(options: RunOptions, emulated_ok: bool = False) -> PreparedRun:
    """Everything that can fail on bad input, checked before any measurement (``emulated_ok``: a
    precision this CPU only emulates is let through, for ``profile --emulated``)."""
    task = options.task if isinstance(options.task, Task) else get_task(options.task, options.subset)
    if options.quick and task.subset != QUICK:
        if task.subset is not None:
            raise DawnbenchError(f"--quick and --subset {task.subset}: a quick trial uses the task's own data; "
                                 "give one of the two.")
        task = quick(task)
    target = options.target if options.target is not None or task.subset != QUICK else QUICK_TRIALS[task.name][1]
    entry = options.entry or task.default_entry
    entry_cls = entry if isinstance(entry, type) else load_entry_class(entry)
    if entry_cls.tasks and task.name not in entry_cls.tasks:
        raise DawnbenchError(f"entry '{entry_cls.name}' is made for {', '.join(entry_cls.tasks)}, "
                             f"not '{task.name}'. Pick another --entry or --task.")
    unknown = sorted(set(options.overrides) - set(entry_cls.hparams) - set(entry_cls.hparams_by_task.get(task.name, {})))
    if unknown:
        raise DawnbenchError(f"--set {', '.join(unknown)}: not a hyperparameter of entry "
                             f"'{entry_cls.name}'. Its hyperparameters: {', '.join(sorted(entry_cls.hparams))}.")
    entry_cls.check_hparams(task, options.overrides)
    bounds.check_fields(options, RUN_OPTIONS)  # every numeric option in its range
    if options.p2p not in P2P:
        raise DawnbenchError(f"--p2p {options.p2p!r}: use on or off.")
    if options.scaling not in SCALINGS:
        raise DawnbenchError(f"--scaling {options.scaling!r}: use {' or '.join(SCALINGS)} (how the batch is shared "
                             "among workers).")
    if Path(options.out_dir).exists() and not Path(options.out_dir).is_dir():
        raise DawnbenchError(f"--out {options.out_dir}: that is a file; pass a folder for the run records.")
    task.metric_bound.check("--target", target)
    instance, price = prices.resolve(options.instance, options.cost_per_hour)
    device = resolve_device(options.device)
    emulated = check_precision(options.precision, device, entry_cls, emulated_ok)
    if options.compile is not None and options.compile not in COMPILE_MODES:
        raise DawnbenchError(f"--compile {options.compile!r}: not a torch.compile mode; use one of "
                             f"{', '.join(COMPILE_MODES)}, or leave --compile out.")
    official = (target is None or target == task.threshold) and task.subset is None
    return PreparedRun(task, entry_cls, device, instance, price, official,
                       task.threshold if target is None else target,
                       environment.hardware_info(device), environment.software_info(entry_cls),
                       options.precision, options.compile, emulated=emulated)
