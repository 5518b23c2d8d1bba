"""``dawnbench sweep``: run every configuration of a grid, N seeds each (what the rows mean:
:mod:`dawnbench.analysis.sweep`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dawnbench import data
from dawnbench.analysis.sweep import config_name, sweep_rows
from dawnbench.distributed.launch import LaunchOptions
from dawnbench.experiments.launch import launch as launch_run
from dawnbench.harness.observer import RunObserver
from dawnbench.harness.options import RunOptions
from dawnbench.harness.runner import run_many
from dawnbench.records.record import RunResult, Status
from dawnbench.records.selection import select
from dawnbench.statistics import summarize

RUN_OPTION_KEYS = ("precision", "compile")


def options_for(options: RunOptions, config: dict[str, Any]) -> RunOptions:
    """The run options of one configuration: run-option keys set fields, the rest are hparams."""
    fields = {k: v for k, v in config.items() if k in RUN_OPTION_KEYS}
    if fields.get("compile") in ("off", "none", False):
        fields["compile"] = None
    hparams = {k: v for k, v in config.items() if k not in RUN_OPTION_KEYS}
    return replace(options, overrides={**options.overrides, **hparams}, **fields)



@dataclass
class Sweep:
    configs: list[dict[str, Any]]
    results: list[list[RunResult]]          # per configuration, per seed
    rows: list[dict[str, Any]]              # per configuration: §7 summary + speedups


def run_sweep(options: RunOptions, configs: list[dict[str, Any]], observer: RunObserver | None = None,
              ensure_data: Callable[[str], Any] = data.ensure,
              config_started: Callable[[int, dict[str, Any]], None] = lambda i, c: None,
              launch: tuple[LaunchOptions, Callable[[RunOptions], list[str]]] | None = None,
              config_done: Callable[[Sweep], None] = lambda sweep: None) -> Sweep:
    """Every configuration in turn, in this process or, with ``launch`` = (the launch options, what
    turns a configuration's run options into ``dawnbench`` arguments), as one torchrun launch each.
    ``config_done`` gets the sweep so far after each configuration (a caller that must keep what was
    measured if it is stopped stores it there)."""
    out_root = Path(options.out_dir)
    all_results = []
    for i, config in enumerate(configs):
        config_started(i, config)
        opts = replace(options_for(options, config), out_dir=out_root / config_name(config))
        if launch is None:
            all_results.append(run_many(opts, observer, ensure_data))
        else:
            launch_options, argv = launch
            outcome = launch_run(argv(opts), launch_options)
            if outcome.signal:
                raise KeyboardInterrupt  # the user stopped the sweep: what was recorded stays on disk
            all_results.append(outcome.results)
        if any(r.status == Status.INTERRUPTED for r in all_results[-1]):
            break
        config_done(_sweep(configs, all_results))
    return _sweep(configs, all_results)


def _sweep(configs: list[dict[str, Any]], all_results: list[list[RunResult]]) -> Sweep:
    """The sweep of the configurations run so far (the first ``len(all_results)``)."""
    names = [config_name(c) for c in configs[:len(all_results)]]
    rows = sweep_rows(names, [summarize(select(rs).counted) for rs in all_results])   # the runs every command counts
    return Sweep(configs[:len(all_results)], all_results, rows)
