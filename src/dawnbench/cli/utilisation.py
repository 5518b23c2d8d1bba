"""Why a run is as fast as it is: `profile`, `machine`, `similarity`, `roofline`, `classes`."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dawnbench.cli.common import EXIT_OK, add_command, add_trust_option, emit, parse_set, print_notes
from dawnbench.cli.display import format_seconds
from dawnbench.environment import describe_hardware
from dawnbench.errors import DawnbenchError
from dawnbench.precision import PRECISIONS, labelled
from dawnbench.tasks import DEFAULT_TASK, TASKS


def cmd_profile(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.cli.figures import profile_figures
    from dawnbench.experiments.profile import options_for, run_profile

    if args.census:
        return _census(args, out, err)
    for flag in ("batch", "seqlen", "mode", "optimizer"):
        if getattr(args, flag) is not None:
            raise DawnbenchError(f"--{flag} is the census's (`dawnbench profile MODEL --census --batch B`); a measured "
                                 "profile runs the entry's own batch (--set batch_size=N changes it).")
    without = tuple(m for m in (args.without or "").split(",") if m)
    changes = {"steps": args.steps, "without": without or None, "device": args.device, "emulated": args.emulated,
               "out": Path(args.out) if args.out else None, "subset": args.subset}
    opts = options_for(args.target, args.entry, parse_set(args.set), args.precision, args.seed, args.trust_entry,
                       **changes)
    with err.status(Text("profiling")) as status:
        summary = run_profile(opts, status=lambda msg: status.update(Text(msg)))
    profile_figures(summary)

    def show() -> None:
        out.print(profile_table(summary, Path(summary["out"]), args.top))
        print_notes(summary["notes"], err)
    emit(args, summary, show)
    return EXIT_OK


def cmd_roofline(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis.roofline import roofline
    from dawnbench.cli.figures import roofline_figure_of

    doc = roofline(args.paths, out=args.out)
    roofline_figure_of(doc, Path(doc["figure"]).parent)

    def show() -> None:
        for p in (p for p in doc["points"] if p["kind"] == "application"):
            out.print(f"{p['label']}: {p['intensity']:.1f} FLOP/B, {p['flops_per_s'] / 1e9:.1f} GFLOP/s",
                      highlight=False)
        out.print(f"{sum(p['kind'] == 'kernel' for p in doc['points'])} kernel rows · figure: {doc['figure']}",
                  highlight=False)
        for note in doc["notes"]:
            out.print(note, style="dim", highlight=False)
    emit(args, doc, show)
    return EXIT_OK


def cmd_classes(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis.classes import class_tables

    doc = class_tables(args.profiles)

    def show() -> None:
        out.print(classes_table(doc))
        print_notes(doc["notes"], err)
    emit(args, doc, show)
    return EXIT_OK


def cmd_machine(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench import resolve_device
    from dawnbench.profiling.machine import describe_machine

    with err.status(Text("measuring the roofs")):
        machine = describe_machine(resolve_device(args.device))
    def show() -> None:
        out.print(machine_table(machine))
        out.print(topology_table(machine["topology"]))
        print_notes(machine["notes"], err)
    emit(args, machine, show)
    return EXIT_OK


def cmd_similarity(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.analysis.similarity import similarity
    from dawnbench.cli.figures import similarity_figures

    doc = similarity(args.paths, pick=args.pick, out=Path(args.out), per_problem=args.kernel_problems)
    doc["figures"] = [str(p) for p in similarity_figures(doc, Path(args.out))]

    def show() -> None:
        out.print(similarity_table(doc))
        for note in doc["notes"]:
            out.print(note, style="dim")
        out.print(f"figures: {', '.join(doc['figures'])}")
    emit(args, doc, show)
    return EXIT_OK


def _census(args: argparse.Namespace, out: Console, err: Console) -> int:
    """``profile MODEL --census``: a step counted on the meta device (``experiments.census.count``), nothing run.
    A mode of ``profile`` rather than its own verb because it answers profile's question — a step's ops, FLOPs and
    bytes — for a model that need not run here; the flags of a measured window do not apply to it."""
    from dawnbench.experiments.census import count

    for flag in ("steps", "without", "device", "subset", "set"):
        if getattr(args, flag):
            raise DawnbenchError(f"--{flag} does not apply to a census: nothing runs, and it counts the entry's own "
                                 "configuration (drop it, or profile without --census).")
    with err.status(Text("counting")) as status:
        summary = count(args.target, args.batch, args.seqlen, args.mode or "train", args.precision or "fp32",
                        optimizer=args.optimizer, head=args.head, entry=args.entry, out=args.out, force=args.force,
                        progress=lambda phase: status.update(Text(f"counting the {phase}")))

    def show() -> None:
        c, folder = summary["census"], summary["out"]
        memory = c["memory"]
        out.print(f"{c['model']} · {c['mode']} · batch {c['batch']}" + (f" × {c['seqlen']} tokens" if c["seqlen"] else "")
                  + f" · {c['precision']}: {c['parameters']:,} parameters, {summary['rows']:,} op rows "
                  f"in {c['seconds']:.1f} s", highlight=False)
        for phase, p in c["phases"].items():
            if p["calls"]:
                out.print(f"  {phase:<10} {p['calls']:>7,} calls  {p['flops'] / 1e9:>12,.1f} GFLOP  "
                          f"{p['bytes'] / 1e9:>10,.2f} GB moved", highlight=False)
        out.print(f"  memory at its peak ≈ {memory['total_bytes'] / 2**30:,.2f} GiB ({memory['how']})",
                  highlight=False)
        out.print(f"written: {folder}/ops.tsv, summary.json — predict it: dawnbench predict {folder} --device gpus",
                  highlight=False)
    emit(args, summary, show)
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    prof = add_command(sub, "profile", cmd_profile, "per-op profile, roofline and throughput CDF of a training window")
    prof.add_argument("target", nargs="?", default=DEFAULT_TASK, metavar="TASK|RUN_DIR|CONFIG_JSON",
                      help=f"a task ({', '.join(TASKS)}) or a finished run whose configuration to profile; with "
                           "--census also a Hugging Face config.json")
    prof.add_argument("--census", action="store_true",
                      help="count every op of one step on the meta device without running it (forward, loss, "
                           "backward, optimizer apart): needs --batch; a config.json also --seqlen")
    prof.add_argument("--batch", type=int, metavar="B", help="--census: samples a step")
    prof.add_argument("--seqlen", type=int, metavar="S", help="--census: tokens a sequence (a language model)")
    prof.add_argument("--mode", choices=("train", "inference"), help="--census: train (default: forward, loss, "
                                                                      "backward, optimizer) or inference (forward)")
    prof.add_argument("--entry", help="built-in entry name or path to your entry .py (default: the task's)")
    prof.add_argument("--optimizer", choices=("adamw", "sgd", "none"),
                      help="--census: the optimizer stepped (default: AdamW for a Hugging Face config, SGD for a "
                           "task's entry); adamw: two states a weight; sgd: Nesterov momentum 0.9, one state a "
                           "weight; none: forward and backward only")
    prof.add_argument("--head", choices=("pretraining", "lm", "qa", "classification"),
                      help="--census of a config: the head counted (default: NeuSight's — pretraining for BERT in "
                           "training, classification in inference, lm for the rest); qa: SQuAD fine-tuning")
    prof.add_argument("--precision", choices=PRECISIONS, help="fp32 (default; a run's own with RUN_DIR), tf32, bf16, fp16")
    prof.add_argument("--emulated", action="store_true",
                      help="let through a precision this CPU only emulates (bf16 without AVX512-BF16 or AMX, fp16 "
                           "without AVX512-FP16 or AMX-FP16): its times are the emulation's, its op census what "
                           "predict reads for another device")
    prof.add_argument("--steps", type=int, help="optimizer steps in the profiled window (default 10)")
    prof.add_argument("--without", metavar="CLASSES",
                      help="also profile with these module classes replaced by identities, e.g. BatchNorm2d,GELU")
    prof.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                      help="override an entry hyperparameter (JSON value), repeatable")
    prof.add_argument("--seed", type=int, default=0, help="the seed")
    prof.add_argument("--device", help="auto (default), cpu, cuda or cuda:N")
    prof.add_argument("--subset", metavar="NAME", help="imagenet, squad: the tree imported under this name (as `run`)")
    prof.add_argument("--out", metavar="DIR", help="folder for the profile (default: RUN_DIR/profile, or "
                                                    "profiles/TASK-ENTRY-PRECISION)")
    prof.add_argument("--top", type=int, default=12, help="ops shown on the terminal (default 12)")
    add_trust_option(prof)

    machine = add_command(sub, "machine", cmd_machine,
                          "the hardware and its roofs measured now (FLOP/s per precision, bandwidth)")
    machine.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")

    sim = add_command(sub, "similarity", cmd_similarity, "PCA and clustering of configurations by their characteristics")
    sim.add_argument("paths", nargs="+", metavar="PATH", help="folders of runs and/or profiles")
    sim.add_argument("--pick", type=int, metavar="K", help="choose K representative configurations "
                                                                  "(at most the configurations found)")
    sim.add_argument("--kernel-problems", action="store_true",
                     help="a kernel result as one workload per problem, not one per suite and precision")
    sim.add_argument("--out", default="similarity", metavar="DIR", help="folder for the figures and JSON")

    roof = add_command(sub, "roofline", cmd_roofline, "kernel results and applications' training steps on one roofline")
    roof.add_argument("paths", nargs="+", metavar="PATH", help="kernels.json (or its folder), profiles, runs with a "
                                                             "profile")
    roof.add_argument("--out", default="roofline", metavar="DIR", help="folder for roofline.png and roofline.json")

    classes = add_command(sub, "classes", cmd_classes,
                          "a profile's ops grouped into kernel classes; two profiles side by side")
    classes.add_argument("profiles", nargs="+", metavar="PROFILE_DIR", help="one or two profile folders (or run "
                                                                          "folders with a profile)")


# --- tables ---------------------------------------------------------------------------

def machine_table(machine: dict) -> Table:
    roofs = machine["roofs"]
    table = Table(title=f"{describe_hardware(machine['hardware'])} · torch {machine['torch']} · "
                        f"{machine['torch_threads']} threads",
                  caption=f"bandwidth (large copy, read + written): {roofs['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s")
    for col in ("precision", "roof GFLOP/s", "probes (GFLOP/s)", "ridge FLOP/byte"):
        table.add_column(col, justify="right" if col != "probes (GFLOP/s)" else "left")
    for precision, flops in roofs["flops"].items():
        probes = ", ".join(f"{k} {v / 1e9:.0f}" for k, v in roofs["probes"][precision].items())
        table.add_row(precision, f"{flops / 1e9:,.0f}", probes, f"{roofs['ridge_flop_per_byte'][precision]:.1f}")
    return table


def topology_table(topology: dict) -> Table:
    """The machine's layout: its cores and NUMA nodes, and how its accelerators are joined — a small
    matrix as ``nvidia-smi topo -m`` draws it, with each device's PCIe link, NUMA node and CPU affinity."""
    cpu = topology["cpu"]
    nodes = "; ".join(f"node {n['node']}: CPUs {n['cpus']}" for n in cpu.get("numa_nodes") or [])
    title = (f"{cpu.get('sockets') or '?'} socket(s), {cpu.get('physical_cores')} cores, {cpu.get('logical_cpus')} "
             f"logical CPUs · {nodes or 'no NUMA information'}")
    accel = topology.get("accelerators")
    table = Table(title=title)
    if not accel:
        table.add_column("accelerators")
        table.add_row(topology.get("accelerators_absent", "none"))
        return table
    devices = accel["devices"]
    table.add_column("")
    for d in devices:
        table.add_column(f"GPU{d['index']}", justify="center")
    for col in ("PCIe (now / max)", "NUMA", "CPU affinity"):
        table.add_column(col)
    for d, row, p2p in zip(devices, accel["links"], accel["p2p_read"]):
        pcie = d["pcie"]
        cells = [link + ("" if ok is not False else " (no P2P)") for link, ok in zip(row, p2p)]
        table.add_row(f"GPU{d['index']}", *cells, f"gen{pcie['gen']} x{pcie['width']} / gen{pcie['max_gen']} "
                      f"x{pcie['max_width']}", str(d["numa_node"] if d["numa_node"] is not None else "—"),
                      d["cpu_affinity"] or "—")
    table.caption = "; ".join(f"{k}: {v}" for k, v in accel["legend"].items())
    return table


def profile_table(summary: dict, out_dir, top: int = 12) -> Table:
    """The top ops of a profile, with the window's figures in the caption."""
    step = summary["step"]
    per_s = summary.get("samples_per_s")
    rate = f"{per_s:,.0f} samples/s · " if per_s and per_s >= 100 else f"{per_s:.3g} samples/s · " if per_s else ""
    peak = summary.get("fraction_of_peak")
    precision = labelled(summary["precision"], summary.get("emulated"))
    caption = (f"{rate}{step['flops_per_s'] / 1e9:,.1f} GFLOP/s = "
               f"{'—' if peak is None else f'{100 * peak:.0f} %'} of the {precision} roof · "
               f"memory-bound ops {100 * summary['memory_bound_share']:.0f} % of op time · ops "
               f"{100 * summary['op_time_share_of_window']:.0f} % of the window · files in {out_dir}")
    if summary.get("without"):
        w = summary["without"]
        caption += (f"\nwithout {', '.join(w['modules'])} ({w['removed']} modules): step "
                    f"{format_seconds(w['step_s'])}, {w['speedup']:.2f}× the throughput (no accuracy claimed)")
    steps = summary["steps"]
    table = Table(title=f"{summary['task']} · {summary['entry']} · {precision} · "
                        f"{steps} step{'s' if steps != 1 else ''}, {format_seconds(summary['window_s'])}", caption=caption)
    for col in ("op", "input shapes", "calls", "time %", "GFLOP/s", "GB/s", "FLOP/B", "bound"):
        table.add_column(col, justify="left" if col in ("op", "input shapes", "bound") else "right")
    from dawnbench.records.ops import read_ops

    for r in read_ops(out_dir)[:top]:
        def num(key: str, scale: float = 1.0, fmt: str = "{:,.1f}") -> str:
            return "—" if r[key] is None else fmt.format(r[key] / scale)
        table.add_row(r["op"].removeprefix("aten::"), r["shapes"][:48], num("calls", fmt="{:,.0f}"),
                      num("share", 0.01), num("flops_per_s", 1e9), num("bytes_per_s", 1e9), num("intensity"),
                      r["bound"])
    return table


def classes_table(doc: dict) -> Table:
    """Kernel classes of one profile, or two side by side (classes in the first's order of time)."""
    profiles = doc["profiles"]
    order = [r["class"] for r in profiles[0]["classes"]]
    order += [r["class"] for p in profiles[1:] for r in p["classes"] if r["class"] not in order]
    table = Table(title="kernel classes" + (" · " + " | ".join(Path(p["profile"]).name for p in profiles)))
    table.add_column("class")
    table.add_column("suite")
    for n, _ in enumerate(profiles, 1):
        tag = f" ({n})" if len(profiles) > 1 else ""
        for col in ("time %", "cum. %", "calls", "shapes", "GFLOP/s", "FLOP/B"):
            table.add_column(col + tag, justify="right")
    for cls in order:
        cells = []
        for p in profiles:
            r = next((r for r in p["classes"] if r["class"] == cls), None)
            if r is None:
                cells += ["—"] * 6
                continue
            cells += [f"{100 * r['time_share']:.1f}", f"{100 * r['cumulative_share']:.1f}", f"{r['calls']:,}",
                      str(r["shapes"]), "—" if r["flops_per_s"] is None else f"{r['flops_per_s'] / 1e9:,.1f}",
                      "—" if r["intensity"] is None else f"{r['intensity']:,.1f}"]
        suite = next((r["suite"] for p in profiles for r in p["classes"] if r["class"] == cls), None)
        table.add_row(cls, suite or "", *cells)
    if len(profiles) > 1:
        table.caption = " · ".join(f"({n}) {p['profile']}" for n, p in enumerate(profiles, 1))
    return table


def similarity_table(doc: dict) -> Table:
    var = doc["explained_variance"]
    cum = np.cumsum(var)
    caption = "explained variance: " + ", ".join(f"PC{i + 1} {100 * v:.0f} %" for i, v in enumerate(var[:4]))
    caption += f" (first two {100 * cum[min(1, len(cum) - 1)]:.0f} %)"
    if doc.get("coverage"):
        caption += "\npicks span of each characteristic's range: " + ", ".join(
            f"{k} {100 * v:.0f} %" for k, v in doc["coverage"].items())
    table = Table(title="workload similarity", caption=caption)
    table.add_column("configuration", no_wrap=True)
    for col in doc["characteristics"]:
        table.add_column(col.replace("_", " "), justify="right")
    if doc.get("clusters"):
        table.add_column("cluster", justify="right")
        table.add_column("pick")
    picks = set(doc.get("picks") or [])
    for k, name in enumerate(doc["configurations"]):
        cells = [name, *(f"{v:,.3g}" for v in doc["values"][k])]
        if doc.get("clusters"):
            cells += [str(doc["clusters"][k]), "★" if name in picks else ""]
        table.add_row(*cells)
    return table
