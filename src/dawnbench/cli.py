"""The `dawnbench` command: a thin layer over the Python API.

Exit codes: 0 every run reached its target (or the command succeeded); 1 some run
did not; 2 bad input (the message says what to fix); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from dawnbench import __version__, data, pricing
from dawnbench.errors import DawnbenchError
from dawnbench.harness.precision import PRECISIONS
from dawnbench.tasks import DEFAULT_TASK, TASKS

EXIT_OK, EXIT_FAILED_RUN, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def _parse_set(items: list[str]) -> dict[str, Any]:
    overrides = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise DawnbenchError(f"--set {item!r}: write it as KEY=VALUE, e.g. --set lr=0.05.")
        try:
            overrides[key] = json.loads(raw)
        except json.JSONDecodeError:
            overrides[key] = raw
    return overrides


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


def cmd_run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.display import LiveProgress, result_card, runs_table
    from dawnbench.harness.runner import RunOptions, run_many
    from dawnbench.statistics import summarize

    options = RunOptions(task=args.task, entry=args.entry, seed=args.seed, runs=args.runs,
                         target=args.target, max_epochs=args.max_epochs, max_seconds=args.max_seconds,
                         max_wall_seconds=args.max_wall_seconds, continue_after_target=args.continue_,
                         device=args.device, out_dir=Path(args.out), instance=args.instance,
                         cost_per_hour=args.cost_per_hour, overrides=_parse_set(args.set),
                         precision=args.precision, compile=args.compile, org=args.org, platform=args.platform)
    live = LiveProgress(err)

    def ensure(name: str) -> None:
        if not data.is_ready(name):
            with err.status(f"preparing {name}") as spinner:
                data.fetch(name, status=lambda msg: spinner.update(f"preparing {name}: {msg}"))

    try:
        results = run_many(options, observer=live, ensure_data=ensure)
    finally:
        live.close()
    summary = summarize(results)
    _warn_first_run(summary, err)
    if args.json:
        _print_json({"runs": [r.to_dict() for r in results], "summary": summary})
    else:
        for r in results:
            out.print(result_card(r))
        if len(results) > 1:
            out.print(runs_table(results, summary))
    if any(r.status == "interrupted" for r in results):
        return EXIT_INTERRUPTED
    return EXIT_OK if all(r.succeeded for r in results) else EXIT_FAILED_RUN


def _warn_first_run(summary: dict[str, Any], err: Console) -> None:
    from dawnbench.statistics import FIRST_RUN_WARNING

    ratio = summary.get("first_run_ratio")
    if ratio is not None and ratio > FIRST_RUN_WARNING:
        err.print(f"[yellow]warning:[/] the first run's time per epoch was {ratio:.2f}× the median of the "
                  "later runs': one-time costs (start-up, autotuning, compilation) fell inside its timed "
                  "region. The entry's warm-up should pay them.", highlight=False, soft_wrap=True)


def cmd_data_fetch(args: argparse.Namespace, out: Console, err: Console) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    if args.source and len(args.names) != 1:
        raise DawnbenchError("--from imports one dataset at a time; name exactly one dataset.")
    for name in args.names:
        data.get_spec(name)  # unknown names fail before anything is fetched
    done = []
    steps = ["downloading", "reading", "validating", "writing the cache"]
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[step]}"),
                  TimeElapsedColumn(), console=err, transient=args.json) as progress:
        for name in args.names:
            bar = progress.add_task(name, total=3, step="checking the cache")

            def status(msg: str, bar=bar) -> None:
                index = next((i for i, s in enumerate(steps) if msg.startswith(s)), 0)
                progress.update(bar, completed=max(index - 1, 0), step=msg)

            path = data.fetch(name, source=Path(args.source) if args.source else None,
                              force=args.force, status=status)
            progress.update(bar, completed=3, step=f"ready in {path}")
            done.append({"name": name, "path": str(path)})
    if args.json:
        _print_json({"datasets": done})
    return EXIT_OK


def cmd_data_list(args: argparse.Namespace, out: Console, err: Console) -> int:
    from rich.table import Table

    rows = data.listing()
    if args.json:
        _print_json({"data_root": str(data.data_root()), "datasets": rows})
        return EXIT_OK
    table = Table(title=f"datasets in {data.data_root()}")
    for col in ("name", "ready", "train", "test", "source"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], "[green]yes[/]" if r["ready"] else "no",
                      f"{r['counts'].get('train', 0):,}", f"{r['counts'].get('test', 0):,}", r["source"])
    out.print(table)
    return EXIT_OK


def cmd_tasks(args: argparse.Namespace, out: Console, err: Console) -> int:
    from rich.table import Table

    rows = [{"name": t.name, "dataset": t.dataset, "metric": t.metric.name, "threshold": t.threshold,
             "scored_split": t.scored_split, "default_entry": t.default_entry, "role": t.role}
            for t in TASKS.values()]
    if args.json:
        _print_json({"tasks": rows})
        return EXIT_OK
    table = Table(title="tasks")
    for col in rows[0]:
        table.add_column(col)
    for r in rows:
        table.add_row(*(str(v) for v in r.values()))
    out.print(table)
    return EXIT_OK


def cmd_prices(args: argparse.Namespace, out: Console, err: Console) -> int:
    from rich.table import Table

    cat = {**pricing.catalog(), "instances": pricing.filtered(args.accelerator)}
    if args.json:
        _print_json(cat)
        return EXIT_OK
    table = Table(title=f"on-demand prices, as of {cat['as_of']}", caption=cat["note"])
    for col in ("instance", "provider", "region", "accelerators", "$/h", "as of", "source"):
        table.add_column(col)
    for i in cat["instances"]:
        acc = f"{i['accelerator_count']}× {i['accelerator']}" if i["accelerator"] else f"{i['vcpus']} vCPU"
        table.add_row(i["name"], i["provider"], i["region"], acc, f"{i['usd_per_hour']:.4g}", i["as_of"], i["source"])
    out.print(table)
    for key in sorted({i["source"] for i in cat["instances"]}):
        out.print(f"[bold]{key}[/]: {cat['sources'][key]}")
    for machine, why in cat["not_on_demand"].items():
        out.print(f"[dim]not on demand: {machine}: {why}[/]")
    return EXIT_OK


def cmd_infer(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.display import inference_table
    from dawnbench.inference import InferenceOptions, measure_run

    options = InferenceOptions(batch_sizes=tuple(args.batch_sizes), threads=args.threads, device=args.device,
                               instance=args.instance, cost_per_hour=args.cost_per_hour,
                               warmup_items=args.warmup_items, max_items=args.max_items, task=args.task,
                               scenarios=tuple(args.scenario), scenario_seconds=args.scenario_seconds,
                               server_qps=args.server_qps, server_latency_ms=args.server_latency_ms,
                               precision=args.precision, overrides=_parse_set(args.set))
    with err.status("measuring inference") as spinner:
        inference = measure_run(Path(args.run_dir), options, status=spinner.update)
    if args.json:
        _print_json({"run_dir": args.run_dir, "inference": inference})
    else:
        out.print(inference_table(args.run_dir, inference))
    return EXIT_OK


def cmd_export(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.submissions import export_inference, export_training

    if args.inference:
        written = [export_inference(d, args.out, args.author, args.email, args.code_url) for d in args.run_dirs]
    else:
        written = export_training(args.run_dirs, args.out, args.author, args.email, args.code_url)
    if args.json:
        _print_json({"files": [str(p) for p in written]})
    else:
        for p in written:
            out.print(f"wrote {p}")
    return EXIT_OK


def cmd_analyze(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis import analyze
    from dawnbench.display import groups_table

    doc = analyze(args.path)
    if args.json:
        _print_json(doc)
        return EXIT_OK
    out.print(groups_table(doc["groups"], f"runs under {args.path}"))
    for p in doc["problems"]:
        err.print(f"problem: {p['file']}{':' + str(p['line']) if p['line'] else ''}: {p['message']}",
                  style="yellow", highlight=False, soft_wrap=True, markup=False)
    return EXIT_OK


def cmd_compare(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis import collect
    from dawnbench.statistics import compare

    sides = []
    for path in (args.a, args.b):
        groups, problems = collect(path)
        samples = [s for g in groups for s in g.samples]
        if not samples:
            raise DawnbenchError(f"{path}: no readable runs ({len(problems)} problem(s), first: "
                                 f"{problems[0].file}: {problems[0].message})." if problems else f"{path}: no runs.")
        sides.append(samples)
    doc = {"a": args.a, "b": args.b, **compare(*sides)}
    if args.json:
        _print_json(doc)
    else:
        out.print(f"A: {args.a} — {doc['runs_a']} runs, {doc['failures_a']} failed, median TTA "
                  f"{doc['tta_median_a_s']:.2f} s", highlight=False)
        out.print(f"B: {args.b} — {doc['runs_b']} runs, {doc['failures_b']} failed, median TTA "
                  f"{doc['tta_median_b_s']:.2f} s", highlight=False)
        out.print(f"[bold]{doc['verdict']}[/]", highlight=False)
    return EXIT_OK


def cmd_sweep(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis.sweep import config_name, options_for, parse_grid, run_sweep
    from dawnbench.display import LiveProgress, sweep_table
    from dawnbench.harness.runner import RunOptions, prepare
    from dawnbench.reports.plots import sweep_figure

    configs = parse_grid(args.grid)
    options = RunOptions(task=args.task, entry=args.entry, seed=args.seed, runs=args.runs,
                         max_epochs=args.max_epochs, max_seconds=args.max_seconds, device=args.device,
                         out_dir=Path(args.out), instance=args.instance, cost_per_hour=args.cost_per_hour,
                         overrides=_parse_set(args.set), precision=args.precision, compile=args.compile,
                         org=args.org, platform=args.platform)
    for config in configs:  # every configuration is checked before the first run
        prepare(options_for(options, config))
    live = LiveProgress(err)
    try:
        sweep = run_sweep(options, configs, observer=live, config_started=lambda i, c: err.print(
            f"configuration {i + 1}/{len(configs)}: {config_name(c)}", highlight=False))
    finally:
        live.close()
    varying = [k for k in configs[0] if len({repr(c[k]) for c in configs}) > 1]
    x_key = varying[0] if len(varying) == 1 else None
    figure = sweep_figure(sweep.rows, [c[x_key] for c in sweep.configs] if x_key else [r["name"] for r in sweep.rows],
                          x_key or "configuration", Path(args.out) / "sweep.png")
    if args.json:
        _print_json({"configurations": sweep.rows, "figure": str(figure)})
    else:
        out.print(sweep_table(sweep.rows, sweep.rows[0]["name"]))
        out.print(f"figure: {figure}", highlight=False)
    return EXIT_OK


def cmd_report(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.reports.html import build_report

    with err.status("building the report"):
        index = build_report(args.path, args.out)
    if args.json:
        _print_json({"report": str(index)})
    else:
        out.print(f"report: {index}", highlight=False)
    return EXIT_OK


def cmd_check_log(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.harness.compliance import check_log

    verdicts = [check_log(Path(d)) for d in args.run_dirs]
    if args.json:
        _print_json({"logs": verdicts})
    else:
        for v in verdicts:
            out.print(f"{'[green]PASS[/]' if v['valid'] else '[red]FAIL[/]'} {v['log']} ({v['lines']} lines, "
                      f"{v['ruleset']})", highlight=False)
            for message in v["messages"]:
                out.print(f"  {message}", style="red", markup=False, highlight=False, soft_wrap=True)
    return EXIT_OK if all(v["valid"] for v in verdicts) else EXIT_FAILED_RUN


def cmd_validate(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.submissions.validate import find_submissions, orphan_tsvs, read_submission

    found = find_submissions(args.paths)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        raise DawnbenchError(f"{missing[0]}: no such file or folder. Pass submission JSON files or folders.")
    if not found:
        raise DawnbenchError(f"no submission JSON files under {', '.join(args.paths)}.")
    problems = [p for path, root in found for p in read_submission(path, root).problems]
    problems += [p for d in args.paths if Path(d).is_dir() for p in orphan_tsvs(Path(d))]
    errors = sum(p.severity == "error" for p in problems)
    if args.json:
        _print_json({"files": len(found), "errors": errors, "warnings": len(problems) - errors,
                     "problems": [p.to_dict() for p in problems]})
    else:
        for p in problems:
            out.print(str(p), style="red" if p.severity == "error" else "yellow", markup=False,
                      highlight=False, soft_wrap=True)
        out.print(f"{len(found)} submission(s): {errors} error(s), {len(problems) - errors} warning(s)",
                  highlight=False)
    return EXIT_FAILED_RUN if errors else EXIT_OK


def cmd_leaderboard(args: argparse.Namespace, out: Console, err: Console) -> int:
    import datetime as dt

    from dawnbench.display import board_table
    from dawnbench.leaderboard import BOARDS, build_boards

    until = None
    if args.until:
        try:
            until = dt.date.fromisoformat(args.until)
        except ValueError:
            raise DawnbenchError(f"--until {args.until}: not a date; write YYYY-MM-DD, e.g. 2018-04-20.") from None
    boards = build_boards(args.dir, until)
    if args.html:
        from dawnbench.leaderboard.site import build_site

        index = build_site(boards, args.html, until)
        err.print(f"website: {index}", highlight=False)
    if args.json:
        _print_json(boards.to_json())
        return EXIT_OK
    for task, task_boards in boards.tasks.items():
        for board in BOARDS:
            out.print(board_table(task, board, task_boards[board][:args.top]))
    errors = sum(p.severity == "error" for p in boards.problems)
    out.print(f"{len(boards.submissions)} submissions read; {errors} with errors left off the boards, "
              f"{len(boards.problems) - errors} warnings (see `dawnbench validate {args.dir}`)", highlight=False)
    return EXIT_OK


def _int_list(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write integers separated by commas, e.g. 1,16,64") from None


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="fp32 (TF32 off), tf32, bf16 or fp16 (autocast; fp16 with loss scaling)")
    parser.add_argument("--compile", nargs="?", const="default", metavar="MODE",
                        help="torch.compile the entry's network during warm-up (mode: default, "
                             "reduce-overhead, max-autotune, ...)")
    parser.add_argument("--org", help="submission_org in events.log (default: your login name)")
    parser.add_argument("--platform", help="submission_platform in events.log (default: the hardware)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dawnbench", description="Time-to-accuracy benchmarking.")
    parser.add_argument("--version", action="version", version=f"dawnbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="train an entry until it reaches the task's threshold")
    run.add_argument("task", nargs="?", default=DEFAULT_TASK, help=f"one of {', '.join(TASKS)}")
    run.add_argument("--entry", help="built-in entry name or path to your entry .py (default: the task's)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--runs", type=int, default=1, help="run N seeds (seed, seed+1, ...) one after another")
    run.add_argument("--target", type=float, help="another threshold; marks the run unofficial")
    run.add_argument("--max-epochs", type=float, help="stop as not_reached after this many epochs")
    run.add_argument("--max-seconds", type=float, help="stop as not_reached after this many timed seconds")
    run.add_argument("--max-wall-seconds", type=float, help="stop as timeout after this much wall time")
    run.add_argument("--continue", dest="continue_", action="store_true",
                     help="keep training after the target is reached (TTA is still the first pass)")
    run.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    run.add_argument("--out", default="runs", help="folder for the run records (default: ./runs)")
    run.add_argument("--instance", help="price the run with this on-demand instance (see `dawnbench prices`)")
    run.add_argument("--cost-per-hour", type=float, help="on-demand USD per hour of the hardware")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override an entry hyperparameter (JSON value), repeatable")
    _add_run_options(run)
    run.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    run.set_defaults(func=cmd_run)

    infer = sub.add_parser("infer", help="measure inference latency, throughput and cost of a run's saved model")
    infer.add_argument("run_dir", metavar="RUN_DIR", help="a run directory whose run reached its target")
    infer.add_argument("--batch-sizes", type=_int_list, default=[1, 16, 64, 256, 1024],
                       help="batch sizes tried for throughput (default 1,16,64,256,1024)")
    infer.add_argument("--threads", type=int, help="torch threads while measuring (default: as configured)")
    infer.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    infer.add_argument("--instance", help="price with this on-demand instance (default: the run's price)")
    infer.add_argument("--cost-per-hour", type=float, help="on-demand USD per hour of the hardware")
    infer.add_argument("--warmup-items", type=int, default=100, help="items run before timing (excluded)")
    infer.add_argument("--max-items", type=int, help="measure only the first N items (marks it unofficial)")
    infer.add_argument("--task", help="fail unless the run is of this task")
    infer.add_argument("--scenario", action="append", default=[], choices=["singlestream", "offline", "server"],
                       help="also run this MLPerf LoadGen scenario (repeatable)")
    infer.add_argument("--scenario-seconds", type=float, default=10.0, help="LoadGen min duration per scenario")
    infer.add_argument("--server-qps", type=float, help="server scenario arrival rate (default: half the best throughput)")
    infer.add_argument("--server-latency-ms", type=float, help="server p99 bound (default: 10 × batch-1 p99)")
    infer.add_argument("--precision", choices=PRECISIONS, help="inference precision (default: the run's)")
    infer.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="change an entry hyperparameter for inference, e.g. tta_level=0 (repeatable)")
    infer.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    infer.set_defaults(func=cmd_infer)

    export = sub.add_parser("export", help="write DAWNBench v1.0 submission files from run directories")
    export.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="runs of one configuration (or a folder of them); with --inference, measured runs")
    export.add_argument("--inference", action="store_true", help="the inference JSON (after `dawnbench infer`)")
    export.add_argument("--out", default="submissions", help="folder for the files (default: ./submissions)")
    export.add_argument("--author", help="author name (default: git config user.name)")
    export.add_argument("--email", help="author e-mail (default: git config user.email)")
    export.add_argument("--code-url", help="codeURL field")
    export.add_argument("--json", action="store_true")
    export.set_defaults(func=cmd_export)

    analyze = sub.add_parser("analyze", help="statistics over runs: run directories or MLPerf training logs")
    analyze.add_argument("path", metavar="PATH")
    analyze.add_argument("--json", action="store_true")
    analyze.set_defaults(func=cmd_analyze)

    compare = sub.add_parser("compare", help="speedup of B over A, with a confidence interval and p-value")
    compare.add_argument("a", metavar="A", help="folder of runs (or MLPerf logs) of configuration A")
    compare.add_argument("b", metavar="B", help="folder of runs of configuration B")
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(func=cmd_compare)

    sweep = sub.add_parser("sweep", help="run a grid of hyperparameters, N seeds each")
    sweep.add_argument("task", nargs="?", default=DEFAULT_TASK)
    sweep.add_argument("--entry")
    sweep.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...", required=True,
                       help="values to sweep (repeatable: the cartesian product is run)")
    sweep.add_argument("--runs", type=int, default=3, help="seeds per configuration (default 3)")
    sweep.add_argument("--seed", type=int, default=0)
    sweep.add_argument("--max-epochs", type=float)
    sweep.add_argument("--max-seconds", type=float)
    sweep.add_argument("--device", default="auto")
    sweep.add_argument("--instance")
    sweep.add_argument("--cost-per-hour", type=float)
    sweep.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    _add_run_options(sweep)
    sweep.add_argument("--out", default="sweeps/sweep", help="folder for the runs and sweep.png")
    sweep.add_argument("--json", action="store_true")
    sweep.set_defaults(func=cmd_sweep)

    report = sub.add_parser("report", help="one self-contained HTML page of tables and figures")
    report.add_argument("path", metavar="PATH")
    report.add_argument("--out", required=True, metavar="DIR")
    report.add_argument("--json", action="store_true")
    report.set_defaults(func=cmd_report)

    check = sub.add_parser("check-log", help="run MLCommons' compliance checker (common rules) on run logs")
    check.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (or events.log files)")
    check.add_argument("--json", action="store_true")
    check.set_defaults(func=cmd_check_log)

    validate = sub.add_parser("validate", help="check DAWNBench submission files: every problem, file and line")
    validate.add_argument("paths", nargs="+", metavar="PATH", help="submission JSON files or folders")
    validate.add_argument("--json", action="store_true")
    validate.set_defaults(func=cmd_validate)

    board = sub.add_parser("leaderboard", help="the four rankings per task, and optionally the website")
    board.add_argument("dir", metavar="DIR", help="a folder laid out like dawnbench-entries (<Task>/train, <Task>/inference)")
    board.add_argument("--until", metavar="YYYY-MM-DD", help="the board as it stood on this date")
    board.add_argument("--top", type=int, default=10, help="rows per board on the terminal (default 10)")
    board.add_argument("--html", metavar="OUT", help="also build the static website into OUT")
    board.add_argument("--json", action="store_true")
    board.set_defaults(func=cmd_leaderboard)

    data_p = sub.add_parser("data", help="fetch and list datasets").add_subparsers(dest="data_command", required=True)
    fetch = data_p.add_parser("fetch", help="download (or import with --from) and cache datasets")
    fetch.add_argument("names", nargs="+", metavar="NAME", help=", ".join(data.DATASETS))
    fetch.add_argument("--from", dest="source", metavar="PATH", help="import the official files you already have")
    fetch.add_argument("--force", action="store_true", help="prepare again even if cached")
    fetch.add_argument("--json", action="store_true")
    fetch.set_defaults(func=cmd_data_fetch)
    lst = data_p.add_parser("list", help="show which datasets are ready")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=cmd_data_list)

    for name, func, text in [("tasks", cmd_tasks, "list the tasks"),
                             ("prices", cmd_prices, "show the bundled on-demand price catalog")]:
        p = sub.add_parser(name, help=text)
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)
        if name == "prices":
            p.add_argument("--accelerator", help="only instances with this accelerator (e.g. H100, A100-80GB, cpu)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # stdout stays pure JSON under --json; piped output gets room for the wide tables.
    out = Console(stderr=getattr(args, "json", False), width=None if sys.stdout.isatty() else 160)
    err = Console(stderr=True)
    try:
        return args.func(args, out, err)
    except DawnbenchError as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        err.print("[magenta]interrupted[/]")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
