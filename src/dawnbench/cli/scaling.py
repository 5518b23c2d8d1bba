"""Many workers (SPEC §13): `scale` (launch 1..N workers, tabulate) and `schedule` (a job mix on G accelerators)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from dawnbench import bounds
from dawnbench.cli.common import (
    EXIT_OK,
    add_run_options,
    add_worker_options,
    figure_path,
    int_list,
    print_json,
    ranged,
    run_argv,
    run_options,
)
from dawnbench.tasks import DEFAULT_TASK, TASKS


def cmd_scale(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.cli.display import scale_table
    from dawnbench.experiments.scale import SCALE_FILE, ScaleOptions, run_scale
    from dawnbench.reports.plots import scale_figure

    from dawnbench.harness.options import prepare

    prepare(run_options(args))  # every run option checked here, before any worker is launched
    options = ScaleOptions(task=args.task, workers=args.workers, runs=args.runs, scaling=args.scaling,
                           out=Path(args.out), run_args=run_argv(args), threads_per_worker=args.threads_per_worker)

    def launched(workers: int, outcome) -> None:
        reached = sum(r.succeeded for r in outcome.results)
        err.print(Text.assemble(f"{workers} worker(s): {reached}/{len(outcome.results)} run(s) reached the target",
                                *((f"\n  {f}", "red") for f in outcome.failures)), highlight=False)

    doc = run_scale(options, launched)
    figure = scale_figure(doc, Path(args.out) / "scale.png")
    if args.json:
        print_json({**doc, "figure": str(figure)})
    else:
        out.print(scale_table(doc))
        out.print(f"table: {Path(args.out) / SCALE_FILE} · figure: {figure}", highlight=False)
    return EXIT_OK


def cmd_schedule(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis.schedule import schedule
    from dawnbench.cli.display import schedule_table
    from dawnbench.reports.plots import gantt_figure

    figure_file = figure_path(args.figure, "--figure")
    doc = schedule([Path(p) for p in args.tables], args.accelerators)
    figure = gantt_figure(doc, figure_file)
    if args.json:
        print_json({**doc, "figure": str(figure)})
    else:
        out.print(schedule_table(doc))
        out.print(f"Gantt chart: {figure}", highlight=False)
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    scale = sub.add_parser("scale", help="time per epoch, TTA and communication against the number of workers")
    scale.add_argument("task", nargs="?", default=DEFAULT_TASK, help=f"one of {', '.join(TASKS)}")
    scale.add_argument("--workers", type=int_list, default=[1, 2], metavar="1,2,4", help=ranged(
        "worker counts to launch, each under torchrun (default 1,2), each", bounds.WORKERS["nproc"]))
    add_run_options(scale, runs=3, out="scale")
    add_worker_options(scale, launcher=False)
    scale.add_argument("--json", action="store_true")
    scale.set_defaults(func=cmd_scale)

    plan = sub.add_parser("schedule", help="schedule a mix of jobs on G accelerators from their scale tables")
    plan.add_argument("tables", nargs="+", metavar="SCALE.json", help="one scale table per job")
    plan.add_argument("--accelerators", type=int, required=True, metavar="G",
                      help=ranged("accelerators the jobs share", bounds.ACCELERATORS))
    plan.add_argument("--figure", default="schedule.png", help="where to write the Gantt chart (.png, .svg, .pdf)")
    plan.add_argument("--json", action="store_true")
    plan.set_defaults(func=cmd_schedule)
