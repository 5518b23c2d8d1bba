"""What to do with finished runs and submissions: statistics, comparisons, reports, logs, boards."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dawnbench.cli.common import (
    EXIT_FAILED_RUN,
    EXIT_OK,
    add_command,
    add_trust_option,
    emit,
    print_notes,
)
from dawnbench.cli.display import format_number, format_seconds, format_spread
from dawnbench.errors import DawnbenchError, printable


def _note(err: Console, line: str) -> None:
    err.print(line, style="yellow", highlight=False, soft_wrap=True, markup=False)


def cmd_export(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.submissions import export_inference, export_training

    notes: list[str] = []
    if args.inference:
        written = [export_inference(d, args.out, args.author, args.email, args.code_url) for d in args.run_dirs]
    else:
        written = export_training(args.run_dirs, args.out, args.author, args.email, args.code_url,
                                  args.include_suspect, args.instance, args.cost_per_hour, notes)
    def show() -> None:
        for p in written:
            out.print(f"wrote {p}")
        print_notes(notes, err)
    emit(args, {"files": [str(p) for p in written], "notes": notes}, show)
    return EXIT_OK


def cmd_import_log(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis.imported import import_log

    folders = [import_log(Path(log), Path(args.out), args.task, args.scale) for log in args.logs]

    def show() -> None:
        for folder in folders:
            out.print(Text(f"imported {folder} (self-reported: the log's own accuracy, MLPerf's clock)"))
    emit(args, {"run_dirs": [str(f) for f in folders]}, show)
    return EXIT_OK


def cmd_score(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.data import squad

    result = squad.score_files(Path(args.data), Path(args.predictions))
    emit(args, result, lambda: _show_score(result, out, err))
    return EXIT_OK


def _show_score(result: dict, out: Console, err: Console) -> None:
    out.print(Text(f"exact_match {result['exact_match']:.4f} · f1 {result['f1']:.4f} over {result['total']:,} "
                   f"questions ({result['answered']:,} answered)"))
    if result["answered"] < result["total"]:
        err.print(Text(f"{result['total'] - result['answered']:,} question(s) had no prediction and scored 0, "
                       "as in the official script."))
    if result["unknown_ids"]:
        err.print(Text(f"{result['unknown_ids']:,} prediction(s) name ids that are not in the data file; ignored."))


def cmd_analyze(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis import analyze

    doc = analyze(args.path, args.include_suspect)

    def show() -> None:
        counted = [g for g in doc["groups"] if g["runs"]]
        if counted:
            out.print(groups_table(counted, f"runs under {args.path}"))
        for g in doc["groups"]:         # a group with no run counted is a sentence, not a row of zeros
            if not g["runs"]:
                out.print(Text(f"{g['name']}: no run counted — {len(g['excluded'])} left out, each below"
                               + (f" ({g['disturbed']})" if g["disturbed"] else "")), highlight=False)
        for g in doc["groups"]:
            for e in g["excluded"]:
                _note(err, f"kept out of {g['name']}: {e['run']}: {e['reason']}")
        for p in doc["problems"]:
            _note(err, f"problem: {p['file']}{':' + str(p['line']) if p['line'] else ''}: {p['message']}")
    emit(args, doc, show)
    return EXIT_OK


def cmd_compare(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis import compare_paths

    doc = compare_paths(args.a, args.b, args.include_suspect)

    def show() -> None:
        print_notes(doc["notes"], err)
        for side in ("a", "b"):
            runs, tta = doc["runs_" + side], doc["tta_median_" + side + "_s"]
            target = doc["targets"][side] or "the target"          # each line whole, as the verdict is
            median = (f"median TTA {tta:.2f} s to {target}" if tta is not None and math.isfinite(tta) else
                      f"no median TTA: at least half its runs did not reach {target}")   # not "inf s"
            flag = f"; {doc['disturbed'][side]}" if doc["disturbed"][side] else ""
            out.print(f"{side.upper()}: {doc[side]} — {runs} run{'' if runs == 1 else 's'}, "
                      f"{doc['failures_' + side]} failed, {median}{flag}", highlight=False)
        out.print(doc["verdict"], style="bold", highlight=False, soft_wrap=True)   # one line to copy
    emit(args, doc, show)
    return EXIT_OK


def cmd_report(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.reports.html import build_report

    notes: list[str] = []
    with err.status(Text("building the report")):
        index = build_report(args.paths, args.out, args.include_suspect, notes)

    def show() -> None:
        out.print(f"report: {index}", highlight=False)
        print_notes(notes, err)
    emit(args, {"report": str(index), "notes": notes}, show)
    return EXIT_OK


def cmd_check_log(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.records.compliance import check_log

    verdicts = [check_log(Path(d)) for d in args.run_dirs]

    def show() -> None:
        for v in verdicts:
            out.print(Text.assemble(("PASS", "green") if v["valid"] else ("FAIL", "red"),
                                    f" {v['log']} ({v['lines']} lines, {v['ruleset']})"), highlight=False)
            for message in v["messages"]:
                out.print(f"  {message}", style="red", markup=False, highlight=False, soft_wrap=True)
    emit(args, {"logs": verdicts}, show)
    return EXIT_OK if all(v["valid"] for v in verdicts) else EXIT_FAILED_RUN


def cmd_validate(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.records.submission import (
        find_submissions,
        orphan_tsvs,
        read_submission,
    )

    skipped: list = []
    found = find_submissions(args.paths, skipped)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        raise DawnbenchError(f"{missing[0]}: no such file or folder. Pass submission JSON files or folders.")
    if not found and not skipped:
        raise DawnbenchError(f"no submission JSON files under {', '.join(args.paths)}.")
    problems = skipped + [p for path, root in found for p in read_submission(path, root).problems]
    problems += [p for d in args.paths if Path(d).is_dir() for p in orphan_tsvs(Path(d))]
    errors = sum(p.severity == "error" for p in problems)

    def show() -> None:
        for p in problems:
            # one line each: a newline in a file's name must not print a line that reads as another problem
            out.print(printable(str(p), one_line=True), style="red" if p.severity == "error" else "yellow", markup=False,
                      highlight=False, soft_wrap=True)
        out.print(f"{len(found)} submission(s): {errors} error(s), {len(problems) - errors} warning(s)",
                  highlight=False)
    emit(args, {"files": len(found), "errors": errors, "warnings": len(problems) - errors,
                "problems": [p.to_dict() for p in problems]}, show)
    return EXIT_FAILED_RUN if errors else EXIT_OK


def cmd_leaderboard(args: argparse.Namespace, out: Console, err: Console) -> int:
    import datetime as dt

    from dawnbench.leaderboard import BOARDS, build_boards

    until = None
    if args.until:
        try:
            until = dt.date.fromisoformat(args.until)
        except ValueError:
            raise DawnbenchError(f"--until {args.until}: not a date; write YYYY-MM-DD, e.g. 2018-04-20.") from None
    if args.html is not None and not args.html.strip():
        raise DawnbenchError("--html needs a folder to build the website in, e.g. --html site.")
    boards = build_boards(args.dir, until)
    if args.html:
        from dawnbench.leaderboard.site import build_site

        index = build_site(boards, args.html, until)
        err.print(f"website: {index}", highlight=False)

    def show() -> None:
        for task, task_boards in ({} if args.html else boards.tasks).items():   # --html: the site holds the boards
            for board in BOARDS:
                out.print(board_table(task, board, task_boards[board][:args.top]))
        errors = sum(p.severity == "error" for p in boards.problems)
        out.print(f"{len(boards.submissions)} submissions read; {errors} with errors left off the boards, "
                  f"{len(boards.problems) - errors} warnings (see `dawnbench validate {args.dir}`)", highlight=False)
    emit(args, boards.to_json(), show)
    return EXIT_OK


def cmd_generalize(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.cli.figures import generalization_figures
    from dawnbench.data.corruptions import FAMILIES
    from dawnbench.experiments.generalization import (
        GeneralizeOptions,
        generalize,
        parse_severities,
    )

    families = tuple(f for f in (args.families or ",".join(FAMILIES)).split(",") if f)
    options = GeneralizeOptions(suite=args.suite == "shifted", families=families,
                                severities=parse_severities(args.severities),
                                unseen=tuple(Path(p) for p in args.source), device=args.device, out=Path(args.out),
                                trust_entry=args.trust_entry)
    with err.status(Text("generalize")) as status:
        doc = generalize(args.run_dirs, options, status=lambda msg: status.update(Text(msg)))
    doc["figures"] = [str(p) for p in generalization_figures(doc, Path(args.out))]

    def show() -> None:
        out.print(generalization_table(doc))
        for m in (m for m in doc["models"] if not m["recheck"]):
            err.print(Text.assemble(("re-check differs", "yellow"), f": {m['run_dir']} ({m['variant']}) scored "
                                    f"{m['scored']:.4f} on the scored split, the run recorded {m['recorded']:.4f}"))
        if doc.get("figures"):
            out.print(f"figures: {', '.join(doc['figures'])}")
    emit(args, doc, show)
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    # Long: argparse's declarations, one flag per statement.
    gen = add_command(sub, "generalize", cmd_generalize, "score saved models on shifted and unseen data (SPEC §15)")
    gen.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories, or folders of them")
    gen.add_argument("--suite", choices=["shifted", "none"], default="shifted",
                     help="score the shifted suite (default) or only the scored split and unseen sets")
    gen.add_argument("--families", metavar="A,B", help="corruption families (default: all ten)")
    gen.add_argument("--severities", default="1-5", help="e.g. 1-5 (default) or 1,3,5")
    gen.add_argument("--from", dest="source", action="append", default=[], metavar="PATH",
                     help="unseen sets in their official files: CIFAR-10.1 .npy, QMNIST IDX, an ImageNetV2 "
                          "folder (repeatable)")
    gen.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    gen.add_argument("--out", default="generalization", metavar="DIR", help="folder for the figure and JSON")
    add_trust_option(gen)

    export = add_command(sub, "export", cmd_export, "write DAWNBench v1.0 submission files from run directories")
    export.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="runs of one configuration (or a folder of them); with --inference, measured runs")
    export.add_argument("--inference", action="store_true", help="the inference JSON (after `dawnbench infer`)")
    export.add_argument("--out", default="submissions", help="folder for the files (default: ./submissions)")
    export.add_argument("--author", help="author name (default: git config user.name)")
    export.add_argument("--email", help="author e-mail (default: git config user.email)")
    export.add_argument("--code-url", help="codeURL field")
    export.add_argument("--instance", help="price the runs at export: an on-demand instance of the catalog "
                                           "(`dawnbench prices`); its $/h becomes costPerHour")
    export.add_argument("--cost-per-hour", type=float, metavar="USD",
                        help="price the runs at export: on-demand USD per hour (costPerHour)")
    export.add_argument("--include-suspect", action="store_true",
                        help="export runs the monitor flagged as disturbed by other processes (refused by default)")

    imp = add_command(sub, "import-log", cmd_import_log, "an MLPerf training log (:::MLLOG) as a run folder: export, "
                      "compare and report read it (self-reported)")
    imp.add_argument("logs", nargs="+", metavar="LOG", help="MLPerf log file(s), as mlperf_logging.mllog writes them")
    imp.add_argument("--task", help="the dawnbench task (default: the log's submission_benchmark)")
    imp.add_argument("--out", default="runs", help="folder for the run folders (default: ./runs)")
    imp.add_argument("--scale", type=float, default=1.0,
                     help="multiply each eval_accuracy by this onto the task's scale (100: a log of fractions)")

    analyze = add_command(sub, "analyze", cmd_analyze, "statistics over runs: run directories or MLPerf training logs")
    analyze.add_argument("path", metavar="PATH", help="a folder of run folders (or one run folder, or its result.json) "
                         "and/or MLPerf logs")
    analyze.add_argument("--include-suspect", action="store_true",
                        help="count runs whose resource monitor flagged other work on the machine (left out by default)")

    compare = add_command(sub, "compare", cmd_compare, "speedup of B over A, with a confidence interval and p-value")
    compare.add_argument("a", metavar="A", help="folder of runs (or MLPerf logs) of configuration A")
    compare.add_argument("b", metavar="B", help="folder of runs of configuration B")
    compare.add_argument("--include-suspect", action="store_true",
                        help="count runs whose resource monitor flagged other work on the machine (left out by default)")

    report = add_command(sub, "report", cmd_report, "one self-contained HTML page of tables and figures")
    report.add_argument("paths", nargs="+", metavar="PATH",
                        help="folders of runs (or MLPerf logs); several: a comparison section beside the tables")
    report.add_argument("--out", required=True, metavar="DIR")
    report.add_argument("--include-suspect", action="store_true",
                        help="count runs whose resource monitor flagged other work on the machine (left out by default)")

    check = add_command(sub, "check-log", cmd_check_log, "run MLCommons' compliance checker (common rules) on run logs")
    check.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (or events.log files)")

    validate = add_command(sub, "validate", cmd_validate, "check DAWNBench submission files: every problem, file and line")
    validate.add_argument("paths", nargs="+", metavar="PATH", help="submission JSON files or folders")

    score = add_command(sub, "score", cmd_score, "the official SQuAD v1.1 F1 and EM of a predictions file")
    score.add_argument("task", choices=["squad"], help="squad (SQuAD v1.1)")
    score.add_argument("data", metavar="DATA.json", help="the dataset file, e.g. dev-v1.1.json")
    score.add_argument("predictions", metavar="PREDICTIONS.json", help='{"question id": "answer", ...}')

    board = add_command(sub, "leaderboard", cmd_leaderboard, "the four rankings per task, and optionally the website")
    board.add_argument("dir", metavar="DIR", help="a folder laid out like dawnbench-entries (<Task>/train, <Task>/inference)")
    board.add_argument("--until", metavar="YYYY-MM-DD", help="the board as it stood on this date")
    board.add_argument("--top", type=int, default=10, help="rows per board on the terminal (default 10)")
    board.add_argument("--html", metavar="OUT", help="build the static website into OUT "
                       "(the terminal then shows only where it is and the count)")


# --- tables ---------------------------------------------------------------------------

def groups_table(groups: list[dict], title: str) -> Table:
    """`dawnbench analyze`: one row per group, the columns of the DAWNBench analysis of MLPerf v0.5."""
    table = Table(title=title)
    for col in ("group", "runs", "success", "TTA mean", "TTA median", "CV", "olympic mean",
                "epochs", "time/epoch", "std ratio"):
        table.add_column(col, justify="left" if col == "group" else "right")
    for g in groups:
        name = Text(g["name"])
        if g["disturbed"]:      # on the group's own row: the line a reader copies
            name.append(f"\n⚠ {g['disturbed']}", style="yellow")
        table.add_row(name, str(g["runs"]), f"{g['successes']}/{g['runs']}",
                      format_seconds(g["tta_mean_s"]), format_seconds(g["tta_median_s"]),
                      format_number(g["tta_cov"] and 100 * g["tta_cov"], "{:.2f} %") if g["tta_cov"] is not None else "—",
                      format_seconds(g["olympic_mean_s"]),
                      format_spread(g["epochs_mean"], g["epochs_std"]),
                      format_spread(g["time_per_epoch_mean_s"], g["time_per_epoch_std_s"], " s"),
                      format_number(g["std_ratio"]))
    table.caption = ("TTA mean, median and CV are over successful runs (`compare` counts a failure as infinitely "
                     "slow); CV = population std / mean; std ratio = CV(epochs) / "
                     "CV(time per epoch): > 1 means variance comes from convergence, < 1 from speed")
    return table


def board_table(task: str, board: str, rows: list[dict]) -> Table:
    """One leaderboard ranking (the first rows)."""
    table = Table(title=f"{task} · {board.replace('_', ' ')}")
    for col in ("rank", "value", "model", "author", "hardware", "framework", "date"):
        table.add_column(col, justify="right" if col in ("rank", "value") else "left", overflow="fold")
    for r in rows:
        model = Text(r["model"])   # Text: submitted strings are never read as rich markup
        if r.get("flagged"):
            model.append(f" ⚠ {r['flagged']} run(s) disturbed", style="yellow")
        if r.get("self_reported"):
            model.append(" · self-reported", style="yellow")
        table.add_row(str(r["rank"]), r["display"], model, *(Text(r[k]) for k in ("author", "hardware", "framework")),
                      r["date"])
    return table


def generalization_table(doc: dict) -> Table:
    """Per configuration: the scored split, the shifted suite and the unseen sets (mean ± std over runs)."""
    unseen = sorted({u for r in doc["configurations"] for u in r.get("unseen", {})})
    table = Table(title="generalisation (mean ± std over runs)",
                  caption="drop = scored split − set; the re-check must equal the run's own evaluation")
    for col in ("task", "entry", "model", "runs", "scored split", "re-check", "shifted suite", "drop",
                *(f"{u}" for u in unseen), *(f"{u} drop" for u in unseen)):
        table.add_column(col, justify="left" if col in ("task", "entry", "model") else "right")

    def ms(stat: dict | None) -> str:
        return "—" if not stat else f"{stat['mean']:.2f} ± {stat['std']:.2f}"
    for r in doc["configurations"]:
        u = r.get("unseen", {})
        table.add_row(r["task"], r["entry"], r["variant"], str(r["models"]), ms(r["scored"]),
                      f"{r['rechecks_ok']}/{r['models']}", ms(r.get("suite_mean")), ms(r.get("suite_drop")),
                      *(ms(u[n]["value"]) if n in u else "—" for n in unseen),
                      *(ms(u[n]["drop"]) if n in u else "—" for n in unseen))
    return table
