"""What to do with finished runs and submissions: statistics, comparisons, reports, logs, boards."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from dawnbench import bounds
from dawnbench.cli.common import (
    EXIT_FAILED_RUN,
    EXIT_OK,
    add_trust_option,
    print_json,
    ranged,
)
from dawnbench.errors import DawnbenchError


def cmd_export(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.submissions import export_inference, export_training

    notes: list[str] = []
    if args.inference:
        written = [export_inference(d, args.out, args.author, args.email, args.code_url) for d in args.run_dirs]
    else:
        written = export_training(args.run_dirs, args.out, args.author, args.email, args.code_url,
                                  args.include_suspect, args.instance, args.cost_per_hour, notes)
    if args.json:
        print_json({"files": [str(p) for p in written], "notes": notes})
    else:
        for p in written:
            out.print(f"wrote {p}")
        for note in notes:
            err.print(f"note: {note}", style="yellow", highlight=False, soft_wrap=True, markup=False)
    return EXIT_OK


def cmd_score(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.data import squad

    result = squad.score_files(Path(args.data), Path(args.predictions))
    if args.json:
        print_json(result)
        return EXIT_OK
    out.print(Text(f"exact_match {result['exact_match']:.4f} · f1 {result['f1']:.4f} over {result['total']:,} "
                   f"questions ({result['answered']:,} answered)"))
    if result["answered"] < result["total"]:
        err.print(Text(f"{result['total'] - result['answered']:,} question(s) had no prediction and scored 0, "
                       "as in the official script."))
    if result["unknown_ids"]:
        err.print(Text(f"{result['unknown_ids']:,} prediction(s) name ids that are not in the data file; ignored."))
    return EXIT_OK


def cmd_analyze(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis import analyze
    from dawnbench.cli.display import groups_table

    doc = analyze(args.path, args.include_suspect)
    if args.json:
        print_json(doc)
        return EXIT_OK
    out.print(groups_table(doc["groups"], f"runs under {args.path}"))
    for g in doc["groups"]:
        for e in g["excluded"]:
            err.print(f"kept out of {g['name']}: {e['run']}: {e['reason']}",
                      style="yellow", highlight=False, soft_wrap=True, markup=False)
    for p in doc["problems"]:
        err.print(f"problem: {p['file']}{':' + str(p['line']) if p['line'] else ''}: {p['message']}",
                  style="yellow", highlight=False, soft_wrap=True, markup=False)
    return EXIT_OK


def cmd_compare(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis import collect
    from dawnbench.harness.selection import Selection
    from dawnbench.statistics import compare

    sides, left_out, notes = [], {}, []
    for side, path in (("a", args.a), ("b", args.b)):
        groups, problems = collect(path, args.include_suspect)
        samples = [s for g in groups for s in g.samples]
        chosen = Selection([r for g in groups for r in g.results], [x for g in groups for x in g.left_out])
        if not samples:
            why = chosen.sentence() or (f"{len(problems)} file(s) could not be read, first: {problems[0].file}: "
                                        f"{problems[0].message}" if problems else "no run folder or MLPerf log here.")
            raise DawnbenchError(f"{path}: no runs counted. {why}")
        if chosen.sentence():
            notes.append(f"{side.upper()}: {path}: {chosen.sentence()}")
        left_out[side] = [{"run": r.run_dir, "reason": why} for r, why in chosen.left_out]
        sides.append(samples)
    doc = {"a": args.a, "b": args.b, **compare(*sides), "left_out": left_out}
    if args.json:
        print_json(doc)
    else:
        for note in notes:
            err.print(f"note: {note}", style="yellow", highlight=False, soft_wrap=True, markup=False)
        out.print(f"A: {args.a} — {doc['runs_a']} runs, {doc['failures_a']} failed, median TTA "
                  f"{doc['tta_median_a_s']:.2f} s", highlight=False)
        out.print(f"B: {args.b} — {doc['runs_b']} runs, {doc['failures_b']} failed, median TTA "
                  f"{doc['tta_median_b_s']:.2f} s", highlight=False)
        out.print(doc["verdict"], style="bold", highlight=False)
    return EXIT_OK


def cmd_report(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.reports.html import build_report

    with err.status(Text("building the report")):
        index = build_report(args.paths, args.out, args.include_suspect)
    if args.json:
        print_json({"report": str(index)})
    else:
        out.print(f"report: {index}", highlight=False)
    return EXIT_OK


def cmd_check_log(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.harness.compliance import check_log

    verdicts = [check_log(Path(d)) for d in args.run_dirs]
    if args.json:
        print_json({"logs": verdicts})
    else:
        for v in verdicts:
            out.print(Text.assemble(("PASS", "green") if v["valid"] else ("FAIL", "red"),
                                    f" {v['log']} ({v['lines']} lines, {v['ruleset']})"), highlight=False)
            for message in v["messages"]:
                out.print(f"  {message}", style="red", markup=False, highlight=False, soft_wrap=True)
    return EXIT_OK if all(v["valid"] for v in verdicts) else EXIT_FAILED_RUN


def cmd_validate(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.submissions.validate import (
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
    if args.json:
        print_json({"files": len(found), "errors": errors, "warnings": len(problems) - errors,
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

    from dawnbench.cli.display import board_table
    from dawnbench.leaderboard import BOARDS, build_boards

    bounds.TOP.check("--top", args.top)
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
        print_json(boards.to_json())
        return EXIT_OK
    for task, task_boards in boards.tasks.items():
        for board in BOARDS:
            out.print(board_table(task, board, task_boards[board][:args.top]))
    errors = sum(p.severity == "error" for p in boards.problems)
    out.print(f"{len(boards.submissions)} submissions read; {errors} with errors left off the boards, "
              f"{len(boards.problems) - errors} warnings (see `dawnbench validate {args.dir}`)", highlight=False)
    return EXIT_OK


def cmd_generalize(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.cli.display import generalization_table
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
    if args.json:
        print_json(doc)
        return EXIT_OK
    out.print(generalization_table(doc))
    bad = [m for m in doc["models"] if not m["recheck"]]
    for m in bad:
        err.print(Text.assemble(("re-check differs", "yellow"), f": {m['run_dir']} ({m['variant']}) scored "
                                f"{m['scored']:.4f} on the scored split, the run recorded {m['recorded']:.4f}"))
    if doc.get("figures"):
        out.print(f"figures: {', '.join(doc['figures'])}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    gen = sub.add_parser("generalize", help="score saved models on shifted and unseen data (SPEC §15)")
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
    gen.add_argument("--json", action="store_true")
    gen.set_defaults(func=cmd_generalize)

    export = sub.add_parser("export", help="write DAWNBench v1.0 submission files from run directories")
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
    export.add_argument("--json", action="store_true")
    export.set_defaults(func=cmd_export)

    analyze = sub.add_parser("analyze", help="statistics over runs: run directories or MLPerf training logs")
    analyze.add_argument("path", metavar="PATH")
    analyze.add_argument("--include-suspect", action="store_true",
                        help="count runs whose resource monitor flagged other work on the machine (left out by default)")
    analyze.add_argument("--json", action="store_true")
    analyze.set_defaults(func=cmd_analyze)

    compare = sub.add_parser("compare", help="speedup of B over A, with a confidence interval and p-value")
    compare.add_argument("a", metavar="A", help="folder of runs (or MLPerf logs) of configuration A")
    compare.add_argument("b", metavar="B", help="folder of runs of configuration B")
    compare.add_argument("--include-suspect", action="store_true",
                        help="count runs whose resource monitor flagged other work on the machine (left out by default)")
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(func=cmd_compare)

    report = sub.add_parser("report", help="one self-contained HTML page of tables and figures")
    report.add_argument("paths", nargs="+", metavar="PATH",
                        help="folders of runs (or MLPerf logs); several: a comparison section beside the tables")
    report.add_argument("--out", required=True, metavar="DIR")
    report.add_argument("--include-suspect", action="store_true",
                        help="count runs whose resource monitor flagged other work on the machine (left out by default)")
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

    score = sub.add_parser("score", help="the official SQuAD v1.1 F1 and EM of a predictions file")
    score.add_argument("task", choices=["squad"], help="squad (SQuAD v1.1)")
    score.add_argument("data", metavar="DATA.json", help="the dataset file, e.g. dev-v1.1.json")
    score.add_argument("predictions", metavar="PREDICTIONS.json", help='{"question id": "answer", ...}')
    score.add_argument("--json", action="store_true")
    score.set_defaults(func=cmd_score)

    board = sub.add_parser("leaderboard", help="the four rankings per task, and optionally the website")
    board.add_argument("dir", metavar="DIR", help="a folder laid out like dawnbench-entries (<Task>/train, <Task>/inference)")
    board.add_argument("--until", metavar="YYYY-MM-DD", help="the board as it stood on this date")
    board.add_argument("--top", type=int, default=10, help=ranged("rows per board on the terminal (default 10)",
                                                                  bounds.TOP))
    board.add_argument("--html", metavar="OUT", help="also build the static website into OUT")
    board.add_argument("--json", action="store_true")
    board.set_defaults(func=cmd_leaderboard)
