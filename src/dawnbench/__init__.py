"""dawnbench: time-to-accuracy benchmarking for deep-learning training.

The CLI (``dawnbench``) is a thin layer over this API::

    from dawnbench import run, get_task
    result = run("mnist")                       # default entry, seed 0
    print(result.status, result.time_to_accuracy_s)

    with dawnbench.track("mnist", predict=my_predict) as run:   # your own loop (tracking/)
        ...

Names are imported on first use, so commands that never train (``validate``,
``leaderboard``, ``analyze``) start without loading PyTorch. The CLI reaches the harness, ``io`` and
``distributed`` only through these names (an import-linter contract in pyproject.toml).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "DawnbenchError": "dawnbench.errors",
    "RunOptions": "dawnbench.harness.options",
    "RunResult": "dawnbench.records.record",
    "read_result": "dawnbench.records.record",
    "run": "dawnbench.harness.runner",
    "run_many": "dawnbench.harness.runner",
    "TASKS": "dawnbench.tasks",
    "Task": "dawnbench.tasks",
    "get_task": "dawnbench.tasks",
    "track": "dawnbench.tracking",
    "Tracker": "dawnbench.tracking",
    # what a front end (the CLI is one) needs around a run: checking options, watching progress, launching workers
    "prepare": "dawnbench.harness.options",
    "resolve_device": "dawnbench.harness.options",
    "RunObserver": "dawnbench.harness.observer",
    "Progress": "dawnbench.entries",
    "ProgressProbe": "dawnbench.harness.progress",
    "TrainingStatus": "dawnbench.harness.progress",
    "LaunchOptions": "dawnbench.distributed.launch",
    "World": "dawnbench.distributed.world",
    "under_launcher": "dawnbench.distributed.world",
    "SCALINGS": "dawnbench.bounds",
    "DEFAULT_COLLECTIVE_TIMEOUT_S": "dawnbench.bounds",
    # how dawnbench reads what it is handed and writes what it makes (the same rules for a caller's own tools)
    "read_json": "dawnbench.io",
    "dumps": "dawnbench.io",
    "output_dir": "dawnbench.io",
    "atomic_write_json": "dawnbench.io",
    "replacing_nothing": "dawnbench.io",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in ("data", "environment", "profiling"):  # submodules used as attributes
        return importlib.import_module(f"dawnbench.{name}")
    raise AttributeError(f"module 'dawnbench' has no attribute {name!r}")


__all__ = [*_LAZY, "__version__"]
