"""Many workers: `scale` (launch 1..N workers, tabulate), `jobs` (the same devices as one
distributed run, independent runs, a mix) and `schedule` (a job mix on G accelerators)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dawnbench.cli.common import (
    EXIT_OK,
    add_command,
    add_executor_options,
    add_run_options,
    add_worker_options,
    emit,
    figure_path,
    int_list,
    options_argv,
    run_argv,
    run_options,
    slurm_options,
)
from dawnbench.cli.display import format_number, format_seconds
from dawnbench.tasks import DEFAULT_TASK, TASKS


def cmd_scale(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench import prepare
    from dawnbench.cli.figures import scale_resources_figure
    from dawnbench.experiments.scale import SCALE_FILE, ScaleOptions, run_scale
    from dawnbench.reports.plots import scale_figure

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
    def show() -> None:
        out.print(scale_table(doc))
        out.print(f"table: {Path(args.out) / SCALE_FILE} · figures: {figure}, {resources}", highlight=False)
    emit(args, {**doc, "figure": str(figure), "resources_figure": str(resources)}, show)
    return EXIT_OK


def cmd_schedule(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis.schedule import schedule
    from dawnbench.reports.plots import gantt_figure

    figure_file = figure_path(args.figure, "--figure")
    doc = schedule([Path(p) for p in args.tables], args.accelerators)
    figure = gantt_figure(doc, figure_file)
    def show() -> None:
        out.print(schedule_table(doc))
        out.print(f"Gantt chart: {figure}", highlight=False)
    emit(args, {**doc, "figure": str(figure)}, show)
    return EXIT_OK


def cmd_jobs(args: argparse.Namespace, out: Console, err: Console) -> int:
    import dataclasses

    import torch

    from dawnbench import prepare
    from dawnbench.cli.figures import jobs_figure
    from dawnbench.experiments.jobs import JOBS_FILE, JobsOptions, check, run_jobs

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
    def show() -> None:
        out.print(jobs_table(doc))
        out.print(f"table: {Path(args.out) / JOBS_FILE} · figure: {figure}", highlight=False)
    emit(args, {**doc, "figure": str(figure)}, show)
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    scale = add_command(sub, "scale", cmd_scale, "time per epoch, TTA and communication against the number of workers")
    scale.add_argument("task", nargs="?", default=DEFAULT_TASK, help=f"one of {', '.join(TASKS)}")
    scale.add_argument("--workers", type=int_list, default=[1, 2], metavar="1,2,4",
                       help="worker counts to launch, each under torchrun (default 1,2)")
    add_run_options(scale, runs=3, out="scale")
    add_worker_options(scale, launcher=False)
    add_executor_options(scale)

    jobs = add_command(sub, "jobs", cmd_jobs, "the same devices as one distributed run, independent runs, and a mix")
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
    jobs.set_defaults(collective_timeout=300.0)

    plan = add_command(sub, "schedule", cmd_schedule, "schedule a mix of jobs on G accelerators from their scale tables")
    plan.add_argument("tables", nargs="+", metavar="SCALE.json", help="one scale table per job")
    plan.add_argument("--accelerators", type=int, required=True, metavar="G",
                      help="accelerators the jobs share")
    plan.add_argument("--figure", default="schedule.png", help="where to write the Gantt chart (.png, .svg, .pdf)")


# --- tables ---------------------------------------------------------------------------

def scale_table(doc: dict) -> Table:
    """`dawnbench scale`: per worker count, medians over runs and speedups against the fewest workers."""
    base = doc["baseline_workers"]
    threads = f", {doc['threads_per_worker']} thread(s) per worker" if doc.get("threads_per_worker") else ""
    table = Table(title=f"scaling of {doc['job']} ({doc['scaling']} scaling{threads}, median of {doc['runs']} "
                        f"run(s); speedups against {base} worker{'s' if base > 1 else ''})")
    system = [(key, label, fmt) for key, label, fmt in SYSTEM_COLUMNS if any(r.get(key) is not None for r in doc["rows"])]
    for col in ("workers", "global batch", "reached", "time/epoch", "epochs to target", "TTA",
                "speedup epoch", "speedup TTA", "efficiency epoch", "efficiency TTA", "comm overhead",
                "accounted", *(label for _, label, _ in system)):
        table.add_column(col, justify="right")
    for r in doc["rows"]:
        table.add_row(str(r["workers"]), format_number(r["global_batch_size"], "{:.0f}"), f"{r['successes']}/{r['runs']}",
                      format_seconds(r["time_per_epoch_s"]), format_number(r["epochs_to_target"], "{:.3g}"),
                      format_seconds(r["tta_s"]), format_number(r["speedup_epoch"], "{:.2f}×"),
                      format_number(r["speedup_tta"], "{:.2f}×"), format_number(r["efficiency_epoch"], "{:.0%}"),
                      format_number(r["efficiency_tta"], "{:.0%}"), format_number(r["comm_overhead_pct"], "{:.1f} %"),
                      format_number(r["accounted_pct"], "{:.0f} %"), *(format_number(r.get(key), fmt) for key, _, fmt in system))
    table.caption = ("CPU: the run's processes summed, 100 % = one core; host memory: their summed resident memory "
                     "(peak); accelerators summed over the devices used; traffic in MB/s, both directions")
    return table


def jobs_table(doc: dict) -> Table:
    """`dawnbench jobs`: per job type, what the runs achieved together and asked of the machine."""
    system = [(key, label, fmt) for key, label, fmt in SYSTEM_COLUMNS if any(r.get(key) is not None for r in doc["rows"])]
    shares = "; ".join(f"GPU {s['gpu']}" if "gpu" in s else f"CPUs {','.join(map(str, s['cpus']))}" for s in doc["shares"])
    table = Table(title=f"{doc['task']}: {doc['slots']} slots ({shares}) three ways")
    for col in ("type", "runs", "reached", "samples/s", "TTA (median)", "wall", *(label for _, label, _ in system)):
        table.add_column(col, justify="left" if col == "type" else "right")
    for r in doc["rows"]:
        table.add_row(r["type"], str(r["runs"]), f"{r['successes']}/{r['runs']}", format_number(r["samples_per_s"], "{:,.0f}"),
                      format_seconds(r["tta_median_s"]), format_seconds(r["wall_s"]),
                      *(format_number(r.get(key), fmt) for key, _, fmt in system))
    table.caption = ("samples/s: all the type's runs together; CPU and accelerators: each run's mean weighted by "
                     "its length, over the type's wall time; memory: each run's peak, summed; every run over all its "
                     "processes (CPU 100 % = one core)")
    return table


# The system-level columns (SPEC §20) of the scale and jobs tables: key, header, format; shown where known.
SYSTEM_COLUMNS = (("cpu_util_pct", "CPU %", "{:.0f}"), ("cpu_machine_pct", "machine CPU %", "{:.0f}"),
                  ("host_mem_mib", "host MiB", "{:,.0f}"), ("accel_util_pct", "accel %", "{:.0f}"),
                  ("accel_mem_mib", "accel MiB", "{:,.0f}"), ("pcie_mbps", "PCIe MB/s", "{:,.0f}"),
                  ("nvlink_mbps", "NVLink MB/s", "{:,.0f}"))


def schedule_table(doc: dict) -> Table:
    """`dawnbench schedule`: where each job runs in the best schedule, and both makespans."""
    best, naive = doc["best"], doc["naive"]
    table = Table(title=f"best schedule on {doc['accelerators']} accelerators",
                  caption=f"makespan {format_seconds(best['makespan_s'])} against "
                          f"{format_seconds(naive['makespan_s'])} for each job on all accelerators in turn "
                          f"(saves {format_seconds(doc['saved_s'])}); lower bound "
                          f"{format_seconds(doc['lower_bound_s'])}; {doc['candidates']:,} candidates"
                          + {"orders": "", "counts": ", jobs longest first",
                             "heuristic": ", too many to try all: a heuristic search (longest first, then "
                                          "single-job changes)"}[doc["search"]])
    for col in ("job", "workers", "accelerators", "start", "end"):
        table.add_column(col, justify="left" if col == "job" else "right")
    for p in sorted(best["placements"], key=lambda p: (p["start_s"], p["accelerators"])):
        table.add_row(Text(p["job"]), str(p["workers"]), ",".join(map(str, p["accelerators"])),
                      format_seconds(p["start_s"]), format_seconds(p["end_s"]))
    return table
