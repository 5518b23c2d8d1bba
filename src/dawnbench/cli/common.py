"""What every command family shares: exit codes, JSON output, `--set`, the run options."""

from __future__ import annotations

import argparse
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


def add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="fp32 (TF32 off), tf32, bf16 or fp16 (autocast; fp16 with loss scaling)")
    parser.add_argument("--compile", nargs="?", const="default", metavar="MODE",
                        help="torch.compile the entry's network during warm-up (mode: default, "
                             "reduce-overhead, max-autotune, ...)")
    parser.add_argument("--org", help="submission_org in events.log (default: your login name)")
    parser.add_argument("--platform", help="submission_platform in events.log (default: the hardware)")
    parser.add_argument("--resource-interval", type=float, default=0.5, metavar="S",
                        help="seconds between samples of the resource monitor (resources.tsv; default 0.5)")



def add_worker_options(parser: argparse.ArgumentParser) -> None:
    """Many workers (SPEC §13): torchrun's flags, and how the batch scales."""
    from dawnbench.distributed.world import DEFAULT_COLLECTIVE_TIMEOUT_S, SCALINGS

    group = parser.add_argument_group("many workers (re-runs the command under torchrun)")
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
