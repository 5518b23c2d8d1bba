"""`run` and `sweep`: training under the clock."""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dawnbench import data
from dawnbench.cli.common import (
    EXIT_FAILED_RUN,
    EXIT_INTERRUPTED,
    EXIT_OK,
    add_command,
    add_executor_options,
    add_run_options,
    add_worker_options,
    emit,
    launch_options,
    options_argv,
    run_options,
    slurm_options,
)
from dawnbench.cli.display import format_number, format_seconds, format_spread
from dawnbench.records.record import Status
from dawnbench.tasks import DEFAULT_TASK, TASKS


def cmd_run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from torch.distributed.elastic.multiprocessing.errors import record

    from dawnbench import World, run_many, under_launcher
    from dawnbench.cli.display import LiveProgress

    options = run_options(args)
    workers = launch_options(args)  # checked even without --nproc: out of range is refused, never ignored
    slurm = slurm_options(args)
    if slurm is not None:
        return _on_slurm(args, options, slurm, out, err)
    if args.nproc is not None and not World.launched():
        return _launch(args, options, workers, out, err)
    leader = int(os.environ.get("RANK", 0)) == 0
    live = LiveProgress(err) if leader else None

    def ensure(name: str) -> None:
        if not data.is_ready(name):
            with err.status(Text(f"preparing {name}")) as spinner:
                data.ensure(name, status=lambda msg: spinner.update(Text(f"preparing {name}: {msg}")))

    # Under torchrun, an exception that ends this worker goes to torchrun's error file,
    # so the launcher can name it in the record.
    runner = record(run_many) if World.launched() else run_many
    try:
        results = runner(options, observer=live, ensure_data=ensure)
    finally:
        if live is not None:
            live.close()
    if not leader or under_launcher():
        # The launcher reports rank 0's record and judges the run. The exit code only tells
        # torchrun whether to stop the other workers: they may be hung (the reason this one
        # aborted), and torchrun waits for every worker unless one fails.
        return EXIT_FAILED_RUN if any(r.status in (Status.ABORTED, Status.TIMEOUT) for r in results) else EXIT_OK
    return _report(results, args, out, err)


def _launch(args: argparse.Namespace, options: Any, workers: Any, out: Console, err: Console) -> int:
    """``run --nproc N``: checked and prepared here, then run again under torchrun (experiments/launch.py)."""
    from dawnbench.experiments.launch import launch_run

    def ensure(name: str) -> None:
        if not data.is_ready(name):
            with err.status(Text(f"preparing {name}")):
                data.ensure(name)

    launched = launch_run(options, args.argv, workers, args.nproc * args.nnodes, ensure)
    for failure in launched.failures:
        err.print(failure, style="red", highlight=False, soft_wrap=True)
    if not launched.results:
        if launched.signal:
            return EXIT_INTERRUPTED
        if launched.failures:
            return EXIT_FAILED_RUN
        err.print(f"this machine's {args.nproc} worker(s) finished; rank 0 (on node 0) wrote the record.",
                  highlight=False)
        return EXIT_OK
    code = _report(launched.results, args, out, err)
    return EXIT_INTERRUPTED if launched.signal else code


def _batch_argv(options: Any) -> list[str]:
    """The run options every job of a batch gets (its task, seed and --out are the batch's to set)."""
    return [*(["--scaling", options.scaling] if options.scaling != "weak" else []),
            *options_argv(dataclasses.replace(options, seed=0))]


def _slurm_progress(err: Console, status: Any, what: str) -> Any:
    return lambda counts: status.update(Text(f"{what}: " + ", ".join(f"{n} {k}" for k, n in counts.items())))


def _on_slurm(args: argparse.Namespace, options: Any, slurm: Any, out: Console, err: Console) -> int:
    """``run --runs N --executor slurm``: one job per seed (an array), then the statistics as here."""
    from dawnbench import prepare
    from dawnbench.experiments.slurm import PlannedRun, run_batch

    prepare(options)  # every option checked before anything is submitted
    base = _batch_argv(options)
    planned = [PlannedRun(f"seed={seed}", ["run", args.task, "--seed", str(seed), *base], Path(args.out) / f"seed-{seed}",
                          workers=args.nproc or 1) for seed in range(options.seed, options.seed + options.runs)]
    with err.status(Text("submitting")) as status:
        results = run_batch(planned, slurm, Path(args.out), args.resume, _slurm_progress(err, status, "jobs"))
    return _report([r for run in planned for r in results[run.key]], args, out, err)


def _report(results: list[Any], args: argparse.Namespace, out: Console, err: Console) -> int:
    """Each run's card and the §7 summary over the runs every command counts (records/selection.py)."""
    from dawnbench.cli.display import result_card, runs_table
    from dawnbench.records.selection import disturbance, flagged_counted, select
    from dawnbench.statistics import summarize

    chosen = select(results, args.include_suspect)
    summary = summarize(chosen.counted)
    disturbed = disturbance(chosen.counted, chosen.left_out)
    _warn_first_run(summary, chosen.counted, err)
    def show() -> None:
        for r in results:
            out.print(result_card(r))
        if len(results) > 1:
            out.print(runs_table(results, summary, disturbed))
        if chosen.sentence():
            err.print(Text.assemble(("note:", "yellow"), f" {chosen.sentence()} The summary is over the runs counted, "
                                    "as `analyze`, `compare`, `report` and `export` count them."),
                      highlight=False, soft_wrap=True)
    emit(args, {"runs": [r.to_dict() for r in results], "summary": summary,
                "left_out": [{"run": r.run_dir, "reason": why} for r, why in chosen.left_out],
                "disturbed": disturbed, "flagged_counted": flagged_counted(chosen.counted)}, show)
    if any(r.status == Status.INTERRUPTED for r in results):
        return EXIT_INTERRUPTED
    return EXIT_OK if all(r.succeeded for r in results) else EXIT_FAILED_RUN


def _warn_first_run(summary: dict[str, Any], counted: list[Any], err: Console) -> None:
    from dawnbench.statistics import FIRST_RUN_WARNING

    ratio = summary.get("first_run_ratio")
    if ratio is not None and ratio > FIRST_RUN_WARNING and (counted[0].resources or {}).get("interference"):
        err.print(Text.assemble(("warning:", "yellow"), f" the first run's time per epoch was {ratio:.2f}× the median "
                                "of the later runs', and other processes took the CPU while its clock ran (its record "
                                "says so): the slowdown says nothing about the entry's warm-up."), highlight=False,
                  soft_wrap=True)
    elif ratio is not None and ratio > FIRST_RUN_WARNING:
        err.print(Text.assemble(("warning:", "yellow"), f" the first run's time per epoch was {ratio:.2f}× the median "
                                "of the later runs': one-time costs (start-up, autotuning, compilation) fell inside "
                                "its timed region. The entry's warm-up should pay them."), highlight=False,
                  soft_wrap=True)


def cmd_sweep(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench import prepare
    from dawnbench.analysis.sweep import config_name, parse_grid
    from dawnbench.cli.display import LiveProgress
    from dawnbench.experiments.sweep import options_for, run_sweep
    from dawnbench.reports.plots import sweep_figure

    configs = parse_grid(args.grid)
    options = run_options(args)
    for config in configs:  # every configuration is checked before the first run
        prepare(options_for(options, config))
    workers = launch_options(args)
    slurm = slurm_options(args)
    if slurm is not None:
        sweep = _sweep_on_slurm(args, options, configs, slurm, err)
    else:
        launch = workers if args.nproc is not None else None  # each configuration is one `run --nproc` launch
        live = LiveProgress(err) if launch is None else None
        try:
            sweep = run_sweep(options, configs, observer=live, config_started=lambda i, c: err.print(
                f"configuration {i + 1}/{len(configs)}: {config_name(c)}", highlight=False),
                launch=(launch, lambda opts: ["run", args.task, "--runs", str(opts.runs), "--scaling", opts.scaling,
                                              "--out", str(opts.out_dir), *options_argv(opts)]) if launch else None)
        finally:
            if live is not None:
                live.close()
    varying = [k for k in configs[0] if len({repr(c[k]) for c in configs}) > 1]
    x_key = varying[0] if len(varying) == 1 else None
    figure = sweep_figure(sweep.rows, [c[x_key] for c in sweep.configs] if x_key else [r["name"] for r in sweep.rows],
                          x_key or "configuration", Path(args.out) / "sweep.png")
    def show() -> None:
        out.print(sweep_table(sweep.rows, sweep.rows[0]["name"]))
        out.print(f"figure: {figure}", highlight=False)
    emit(args, {"configurations": sweep.rows, "figure": str(figure)}, show)
    return EXIT_OK


def _sweep_on_slurm(args: argparse.Namespace, options: Any, configs: list[dict[str, Any]], slurm: Any,
                    err: Console) -> Any:
    """``sweep --executor slurm``: one job per configuration and seed, then the sweep's table as here."""
    from dawnbench.analysis.sweep import config_name, sweep_rows
    from dawnbench.experiments.slurm import PlannedRun, run_batch
    from dawnbench.experiments.sweep import Sweep, options_for
    from dawnbench.records.selection import select
    from dawnbench.statistics import summarize

    planned = []
    for config in configs:
        opts = options_for(options, config)
        planned += [PlannedRun(f"{config_name(config)}/seed={seed}", ["run", args.task, "--seed", str(seed),
                                                                      *_batch_argv(opts)],
                               Path(args.out) / config_name(config) / f"seed-{seed}", workers=args.nproc or 1)
                    for seed in range(options.seed, options.seed + options.runs)]
    with err.status(Text("submitting")) as status:
        results = run_batch(planned, slurm, Path(args.out), args.resume, _slurm_progress(err, status, "jobs"))
    per_config = [[r for run in planned if run.key.startswith(config_name(c) + "/") for r in results[run.key]]
                  for c in configs]
    return Sweep(configs, per_config, sweep_rows([config_name(c) for c in configs],
                                                 [summarize(select(rs).counted) for rs in per_config]))


def register(sub: argparse._SubParsersAction) -> None:
    run = add_command(sub, "run", cmd_run, "train an entry until it reaches the task's threshold")
    run.add_argument("task", nargs="?", default=DEFAULT_TASK, help=f"one of {', '.join(TASKS)}")
    add_run_options(run)
    add_worker_options(run)
    add_executor_options(run)
    run.add_argument("--include-suspect", action="store_true",
                     help="count runs the monitor flagged as disturbed by other processes in the summary")

    sweep = add_command(sub, "sweep", cmd_sweep, "run a grid of hyperparameters, N seeds each")
    sweep.add_argument("task", nargs="?", default=DEFAULT_TASK)
    sweep.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...", required=True,
                       help="values to sweep (repeatable: the cartesian product is run)")
    add_run_options(sweep, runs=3, out="sweeps/sweep")
    add_worker_options(sweep)
    add_executor_options(sweep)


# --- tables ---------------------------------------------------------------------------

def sweep_table(rows: list[dict], baseline: str) -> Table:
    table = Table(title=f"sweep (speedups relative to {baseline})")
    for col in ("configuration", "success", "epochs to target", "samples/s", "time/epoch", "TTA median",
                "throughput speedup", "TTA speedup"):
        table.add_column(col, justify="left" if col == "configuration" else "right")
    for r in rows:
        table.add_row(Text(r["name"]), f"{r['successes']}/{r['runs']}",
                      format_spread(r["epochs_mean"], r["epochs_std"]),
                      format_number(r["samples_per_s_mean"], "{:,.0f}"), format_seconds(r["time_per_epoch_mean_s"]),
                      format_seconds(r["tta_median_s"]), format_number(r["throughput_speedup"], "{:.2f}×"),
                      format_number(r["tta_speedup"], "{:.2f}×"))
    return table
