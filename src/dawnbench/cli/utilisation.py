"""Why a run is as fast as it is (SPEC §14, §19): `profile`, `machine`, `similarity`, `roofline`, `classes`."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from dawnbench import bounds
from dawnbench.cli.common import EXIT_OK, add_trust_option, parse_set, print_json, ranged
from dawnbench.errors import DawnbenchError
from dawnbench.precision import PRECISIONS
from dawnbench.tasks import DEFAULT_TASK, TASKS


def cmd_profile(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.cli.display import profile_table
    from dawnbench.cli.figures import profile_figures
    from dawnbench.experiments.profile import (
        ProfileOptions,
        options_from_run,
        run_profile,
        with_changes,
    )

    bounds.PROFILE["top"].check("--top", args.top)
    without = tuple(m for m in (args.without or "").split(",") if m)
    changes = {"steps": args.steps, "without": without or None, "device": args.device,
               "out": Path(args.out) if args.out else None, "subset": args.subset}
    if Path(args.target).is_dir():
        opts = options_from_run(Path(args.target), args.trust_entry, precision=args.precision, **changes)
    elif args.target not in TASKS:
        raise DawnbenchError(f"{args.target}: neither a task ({', '.join(TASKS)}) nor a run directory. Pass a task "
                             "name, or the folder of a finished run.")
    else:
        opts = with_changes(ProfileOptions(task=args.target, entry=args.entry, precision=args.precision or "fp32",
                                           overrides=parse_set(args.set), seed=args.seed), **changes)
    with err.status(Text("profiling")) as status:
        summary = run_profile(opts, status=lambda msg: status.update(Text(msg)))
    profile_figures(summary)
    if args.json:
        print_json(summary)
        return EXIT_OK
    out.print(profile_table(summary, Path(summary["out"]), args.top))
    return EXIT_OK


def cmd_roofline(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis.roofline import roofline
    from dawnbench.cli.figures import roofline_figure_of
    from dawnbench.io import atomic_write_json, output_dir

    doc = roofline(args.paths)
    folder = output_dir(Path(args.out))
    doc["figure"] = str(roofline_figure_of(doc, folder))
    atomic_write_json(folder / "roofline.json", doc, indent=1)
    if args.json:
        print_json(doc)
        return EXIT_OK
    kernels = [p for p in doc["points"] if p["kind"] == "kernel"]
    for p in (p for p in doc["points"] if p["kind"] == "application"):
        out.print(f"{p['label']}: {p['intensity']:.1f} FLOP/B, {p['flops_per_s'] / 1e9:.1f} GFLOP/s", highlight=False)
    out.print(f"{len(kernels)} kernel rows · figure: {doc['figure']}", highlight=False)
    for note in doc["notes"]:
        out.print(note, style="dim", highlight=False)
    return EXIT_OK


def cmd_classes(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis.kernel_classes import class_tables
    from dawnbench.cli.display import classes_table

    doc = class_tables(args.profiles)
    if args.json:
        print_json(doc)
    else:
        out.print(classes_table(doc))
    return EXIT_OK


def cmd_machine(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.cli.display import machine_table, topology_table
    from dawnbench.harness.options import resolve_device
    from dawnbench.profiling.machine import describe_machine

    with err.status(Text("measuring the roofs")):
        machine = describe_machine(resolve_device(args.device))
    if args.json:
        print_json(machine)
    else:
        out.print(machine_table(machine))
        out.print(topology_table(machine["topology"]))
    return EXIT_OK


def cmd_similarity(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis.similarity import similarity
    from dawnbench.cli.display import similarity_table
    from dawnbench.cli.figures import similarity_figures

    bounds.PICK.check("--pick", args.pick)
    doc = similarity(args.paths, pick=args.pick, out=Path(args.out), per_problem=args.kernel_problems)
    doc["figures"] = [str(p) for p in similarity_figures(doc, Path(args.out))]
    if args.json:
        print_json(doc)
        return EXIT_OK
    out.print(similarity_table(doc))
    for note in doc["notes"]:
        out.print(note, style="dim")
    out.print(f"figures: {', '.join(doc['figures'])}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    prof = sub.add_parser("profile", help="per-op profile, roofline and throughput CDF of a training window")
    prof.add_argument("target", nargs="?", default=DEFAULT_TASK, metavar="TASK|RUN_DIR",
                      help=f"a task ({', '.join(TASKS)}) or a finished run whose configuration to profile")
    prof.add_argument("--entry", help="built-in entry name or path to your entry .py (default: the task's)")
    prof.add_argument("--precision", choices=PRECISIONS, help="fp32 (default; a run's own with RUN_DIR), tf32, bf16, fp16")
    prof.add_argument("--steps", type=int, help=ranged("optimizer steps in the profiled window (default 10)",
                                                       bounds.PROFILE["steps"]))
    prof.add_argument("--without", metavar="CLASSES",
                      help="also profile with these module classes replaced by identities, e.g. BatchNorm2d,GELU")
    prof.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                      help="override an entry hyperparameter (JSON value), repeatable")
    prof.add_argument("--seed", type=int, default=0, help=ranged("the seed", bounds.RUN["seed"]))
    prof.add_argument("--device", help="auto (default), cpu, cuda or cuda:N")
    prof.add_argument("--subset", metavar="NAME", help="imagenet, squad: the tree imported under this name (as `run`)")
    prof.add_argument("--out", metavar="DIR", help="folder for the profile (default: RUN_DIR/profile, or "
                                                    "profiles/TASK-ENTRY-PRECISION)")
    prof.add_argument("--top", type=int, default=12, help=ranged("ops shown on the terminal (default 12)",
                                                                 bounds.PROFILE["top"]))
    add_trust_option(prof)
    prof.add_argument("--json", action="store_true")
    prof.set_defaults(func=cmd_profile)

    machine = sub.add_parser("machine", help="the hardware and its roofs measured now (FLOP/s per precision, bandwidth)")
    machine.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    machine.add_argument("--json", action="store_true")
    machine.set_defaults(func=cmd_machine)

    sim = sub.add_parser("similarity", help="PCA and clustering of configurations by their characteristics")
    sim.add_argument("paths", nargs="+", metavar="PATH", help="folders of runs and/or profiles")
    sim.add_argument("--pick", type=int, metavar="K", help=ranged("choose K representative configurations "
                                                                  "(at most the configurations found)", bounds.PICK))
    sim.add_argument("--kernel-problems", action="store_true",
                     help="a kernel result as one workload per problem, not one per suite and precision")
    sim.add_argument("--out", default="similarity", metavar="DIR", help="folder for the figures and JSON")
    sim.add_argument("--json", action="store_true")
    sim.set_defaults(func=cmd_similarity)

    roof = sub.add_parser("roofline", help="kernel results and applications' training steps on one roofline")
    roof.add_argument("paths", nargs="+", metavar="PATH", help="kernels.json (or its folder), profiles, runs with a "
                                                             "profile")
    roof.add_argument("--out", default="roofline", metavar="DIR", help="folder for roofline.png and roofline.json")
    roof.add_argument("--json", action="store_true")
    roof.set_defaults(func=cmd_roofline)

    classes = sub.add_parser("classes", help="a profile's ops grouped into kernel classes; two profiles side by side")
    classes.add_argument("profiles", nargs="+", metavar="PROFILE_DIR", help="one or two profile folders (or run "
                                                                          "folders with a profile)")
    classes.add_argument("--json", action="store_true")
    classes.set_defaults(func=cmd_classes)
