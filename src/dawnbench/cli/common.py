"""What every command family shares: exit codes, JSON output, `--set`, the run options."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.precision import PRECISIONS

EXIT_OK, EXIT_FAILED_RUN, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def parse_set(items: list[str]) -> dict[str, Any]:
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


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


def int_list(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write integers separated by commas, e.g. 1,16,64") from None


def add_run_options(parser: argparse.ArgumentParser, runs: int = 1, out: str = "runs") -> None:
    """Every option of ``dawnbench run`` that decides how a run trains — shared, so that ``sweep``
    and ``scale`` take each of them too (``runs`` and ``out``: this command's defaults)."""
    parser.add_argument("--entry", help="built-in entry name or path to your entry .py (default: the task's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=runs, help=f"seeds seed, seed+1, ... one after another "
                                                                 f"(default {runs})")
    parser.add_argument("--target", type=float, help="another threshold; marks the run unofficial")
    parser.add_argument("--max-epochs", type=float, help="stop as not_reached after this many epochs")
    parser.add_argument("--max-seconds", type=float, help="stop as not_reached after this many timed seconds")
    parser.add_argument("--max-wall-seconds", type=float, help="stop as timeout after this much wall time")
    parser.add_argument("--continue", dest="continue_", action="store_true",
                        help="keep training after the target is reached (TTA is still the first pass)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--out", default=out, help=f"folder for the run records (default: ./{out})")
    parser.add_argument("--instance", help="price the run with this on-demand instance (see `dawnbench prices`)")
    parser.add_argument("--cost-per-hour", type=float, help="on-demand USD per hour of the hardware")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override an entry hyperparameter (JSON value), repeatable")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="fp32 (TF32 off), tf32, bf16 or fp16 (autocast; fp16 with loss scaling)")
    parser.add_argument("--compile", nargs="?", const="default", metavar="MODE",
                        help="torch.compile the entry's network during warm-up (mode: default, "
                             "reduce-overhead, max-autotune, ...)")
    parser.add_argument("--org", help="submission_org in events.log (default: your login name)")
    parser.add_argument("--platform", help="submission_platform in events.log (default: the hardware)")
    parser.add_argument("--resource-interval", type=float, default=0.5, metavar="S",
                        help="seconds between samples of the resource monitor (resources.tsv; default 0.5)")


def options_argv(options: Any) -> list[str]:
    """:class:`~dawnbench.harness.options.RunOptions` as ``dawnbench run`` arguments — the inverse of
    :func:`run_options` — less what a launching command sets itself (task, --runs, --out, --scaling).
    Options at their default are left out (``run`` has the same defaults)."""
    argv = [a for key, value in options.overrides.items() for a in ("--set", f"{key}={json.dumps(value)}")]
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if f.name in ("task", "runs", "out_dir", "scaling", "overrides") or value is None or value == f.default:
            continue
        argv += ["--continue"] if f.name == "continue_after_target" else [f"--{f.name.replace('_', '-')}", str(value)]
    return argv


def run_argv(args: argparse.Namespace) -> list[str]:
    """``args``' run options as ``dawnbench run`` arguments, for each run a command launches."""
    return options_argv(run_options(args))


def run_options(args: argparse.Namespace) -> Any:
    """The :class:`~dawnbench.harness.options.RunOptions` the parsed run options ask for."""
    from pathlib import Path

    from dawnbench.harness.options import RunOptions

    return RunOptions(task=args.task, entry=args.entry, seed=args.seed, runs=args.runs,
                      target=args.target, max_epochs=args.max_epochs, max_seconds=args.max_seconds,
                      max_wall_seconds=args.max_wall_seconds, continue_after_target=args.continue_,
                      device=args.device, out_dir=Path(args.out), instance=args.instance,
                      cost_per_hour=args.cost_per_hour, overrides=parse_set(args.set),
                      precision=args.precision, compile=args.compile, org=args.org, platform=args.platform,
                      resource_interval=args.resource_interval, scaling=getattr(args, "scaling", "weak"),
                      collective_timeout=args.collective_timeout)


def add_worker_options(parser: argparse.ArgumentParser, launcher: bool = True) -> None:
    """Many workers (SPEC §13): torchrun's flags, and how the batch scales (``launcher=False``:
    ``scale``, which chooses the worker counts itself, takes only the last two)."""
    from dawnbench.distributed.world import DEFAULT_COLLECTIVE_TIMEOUT_S, SCALINGS

    group = parser.add_argument_group("many workers (re-runs the command under torchrun)")
    if launcher:
        group.add_argument("--nproc", type=int, metavar="N",
                           help="workers on this machine: DDP with gloo on CPUs (cores shared out as threads), "
                                "NCCL on GPUs (one GPU each)")
        group.add_argument("--nnodes", type=int, default=1, metavar="M", help="machines taking part (default 1)")
        group.add_argument("--node-rank", type=int, default=0, metavar="R", help="this machine's index, 0..M-1")
        group.add_argument("--rdzv-endpoint", metavar="HOST:PORT",
                           help="node 0's address, the same on every machine (needed with --nnodes > 1)")
    group.add_argument("--threads-per-worker", type=int, metavar="T",
                       help="CPU threads of each worker (default: the cores shared out equally)")
    group.add_argument("--scaling", choices=SCALINGS, default="weak",
                       help="weak: the entry's batch size per worker (default); strong: divide it among them")
    group.add_argument("--collective-timeout", type=float, default=DEFAULT_COLLECTIVE_TIMEOUT_S, metavar="S",
                       help="a worker silent this long ends the run as aborted "
                            f"(default {DEFAULT_COLLECTIVE_TIMEOUT_S:g} s)")
