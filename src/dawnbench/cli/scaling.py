"""Many workers (SPEC §13, §20): `scale` (launch 1..N workers, tabulate), `jobs` (the same devices as one
distributed run, independent runs, a mix) and `schedule` (a job mix on G accelerators)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from dawnbench import bounds
from dawnbench.cli.common import (
    EXIT_OK,
    add_executor_options,
    add_run_options,
    add_worker_options,
    figure_path,
    int_list,
    options_argv,
    print_json,
    ranged,
    run_argv,
    run_options,
    slurm_options,
)
from dawnbench.tasks import DEFAULT_TASK, TASKS


def cmd_scale(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.cli.display import scale_table
    from dawnbench.experiments.scale import SCALE_FILE, ScaleOptions, run_scale
    from dawnbench.cli.figures import scale_resources_figure
    from dawnbench.reports.plots import scale_figure

    from dawnbench.harness.options import prepare

    prepare(run_options(args))  # every run option checked here, before any worker is launched
    slurm = slurm_options(args)
    options = ScaleOptions(task=args.task, workers=args.workers, runs=args.runs, scaling=args.scaling,
                           out=Path(args.out), run_args=run_argv(args), threads_per_worker=args.threads_per_worker,
                           seed=args.seed)

    def launched(workers: int, outcome) -> None:
        reached = sum(r.succeeded for r in outcome.results)
        err.print(Text.assemble(f"{workers} worker(s): {reached}/{len(outcome.results)} run(s) reached the target",
                                *((f"\n  {f}", "red") for f in outcome.failures)), highlight=False)

    if slurm is None:
        doc = run_scale(options, launched)
    else:
        with err.status(Text("submitting")) as status:
            doc = run_scale(options, slurm=slurm, resume=args.resume, progress=lambda counts: status.update(
                Text("jobs: " + ", ".join(f"{n} {k}" for k, n in counts.items()))))
    figure = scale_figure(doc, Path(args.out) / "scale.png")
    resources = scale_resources_figure(doc, Path(args.out))
    if args.json:
        print_json({**doc, "figure": str(figure), "resources_figure": str(resources)})
    else:
        out.print(scale_table(doc))
        out.print(f"table: {Path(args.out) / SCALE_FILE} · figures: {figure}, {resources}", highlight=False)
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


def cmd_jobs(args: argparse.Namespace, out: Console, err: Console) -> int:
    import dataclasses

    import torch

    from dawnbench.cli.display import jobs_table
    from dawnbench.experiments.jobs import JOBS_FILE, JobsOptions, check, run_jobs
    from dawnbench.harness.options import prepare
    from dawnbench.cli.figures import jobs_figure

    options = run_options(args)
    prepare(options)  # every run option checked here, before any run starts
    jobs = JobsOptions(task=args.task, slots=args.slots, types=tuple(t for t in args.types.split(",") if t),
                       mix=tuple(args.mix.split(",")) if args.mix is not None else (), entry=args.entry, seed=args.seed,
                       gpus=torch.cuda.device_count() if options.device != "cpu" and torch.cuda.is_available() else 0,
                       run_args=options_argv(dataclasses.replace(options, entry=None, seed=0)), out=Path(args.out))
    slurm = slurm_options(args)
    if slurm is None:
        check(jobs)
    with err.status(Text("jobs")) as status:
        doc = run_jobs(jobs, lambda msg: status.update(Text(msg)), slurm=slurm, resume=args.resume)
    figure = jobs_figure(doc, Path(args.out))
    if args.json:
        print_json({**doc, "figure": str(figure)})
    else:
        out.print(jobs_table(doc))
        out.print(f"table: {Path(args.out) / JOBS_FILE} · figure: {figure}", highlight=False)
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    scale = sub.add_parser("scale", help="time per epoch, TTA and communication against the number of workers")
    scale.add_argument("task", nargs="?", default=DEFAULT_TASK, help=f"one of {', '.join(TASKS)}")
    scale.add_argument("--workers", type=int_list, default=[1, 2], metavar="1,2,4", help=ranged(
        "worker counts to launch, each under torchrun (default 1,2), each", bounds.WORKERS["nproc"]))
    add_run_options(scale, runs=3, out="scale")
    add_worker_options(scale, launcher=False)
    add_executor_options(scale)
    scale.add_argument("--json", action="store_true")
    scale.set_defaults(func=cmd_scale)

    jobs = sub.add_parser("jobs", help="the same devices as one distributed run, independent runs, and a mix")
    jobs.add_argument("task", nargs="?", default=DEFAULT_TASK, help=f"one of {', '.join(TASKS)}")
    jobs.add_argument("--slots", type=int, required=True, metavar="N",
                      help="shares of the machine: one GPU each, or an equal set of cores each")
    jobs.add_argument("--types", default="distributed,multiple,mixed",
                      help="any of distributed (one run of N workers), multiple (N independent runs, other "
                           "seeds), mixed (N different configurations); default all three, in that order")
    jobs.add_argument("--mix", metavar="TASK[:ENTRY],…", help="the mixed slots' configurations, in turn "
                                                            "(default: the task's built-in entries)")
    add_run_options(jobs, out="jobs")
    add_executor_options(jobs)
    jobs.add_argument("--json", action="store_true")
    jobs.set_defaults(func=cmd_jobs, collective_timeout=300.0)

    plan = sub.add_parser("schedule", help="schedule a mix of jobs on G accelerators from their scale tables")
    plan.add_argument("tables", nargs="+", metavar="SCALE.json", help="one scale table per job")
    plan.add_argument("--accelerators", type=int, required=True, metavar="G",
                      help=ranged("accelerators the jobs share", bounds.ACCELERATORS))
    plan.add_argument("--figure", default="schedule.png", help="where to write the Gantt chart (.png, .svg, .pdf)")
    plan.add_argument("--json", action="store_true")
    plan.set_defaults(func=cmd_schedule)
