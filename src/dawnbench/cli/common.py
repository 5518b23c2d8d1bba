"""What every command family shares: exit codes, JSON output, `--set`, the run options."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from dawnbench import bounds, dumps, output_dir
from dawnbench.errors import DawnbenchError, printable
from dawnbench.precision import PRECISIONS

EXIT_OK, EXIT_FAILED_RUN, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


class ShownConsole(Console):
    """A console that reads no Rich markup in what it prints and passes no terminal control through: a hand-edited
    field, a folder's name or a log line may hold escapes (ESC [ 2 J clears the screen; others retitle the window or
    hide text), and every segment this console renders — tables, progress lines, errors — has its control characters
    written out. Rich's own styling travels in segments' styles and control codes, which pass untouched."""

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, **options)
        self._depth = threading.local()

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        # Only the outermost render writes controls out: a table cell laid out at its own width would be cut to it
        # after the text grew (a misaligned border shows the name whole instead).
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        try:
            for segment in super().render(renderable, options):
                yield segment if depth or segment.control else Segment(printable(segment.text), segment.style)
        finally:
            self._depth.n = depth


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
    sys.stdout.write(dumps(obj) + "\n")


# The options every command has: its answer as one JSON document on stdout (nothing else goes there), and --force.
_JSON = argparse.ArgumentParser(add_help=False)
_JSON.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of the tables")
_JSON.add_argument("--force", action="store_true", help="replace files this command did not write (by default it "
                   "refuses to replace any and names them; data fetch: prepare again even if cached)")


def add_command(sub: argparse._SubParsersAction, name: str, func: Callable[..., int], help: str,
                **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand that runs ``func(args, out, err)`` and takes ``--json``."""
    parser = sub.add_parser(name, help=help, parents=[_JSON], **kwargs)
    parser.set_defaults(func=func)
    return parser


def emit(args: argparse.Namespace, doc: Any, show: Callable[[], object]) -> None:
    """The command's answer: ``doc`` on stdout under ``--json``, else ``show()`` (its tables and lines)."""
    if args.json:
        print_json(doc)
    else:
        show()


def int_list(text: str) -> list[int]:
    try:
        return [bounds.parse_int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write integers separated by commas, e.g. 1,16,64") from None


def add_run_options(parser: argparse.ArgumentParser, runs: int = 1, out: str = "runs") -> None:
    """Every option of ``dawnbench run`` that decides how a run trains — shared, so that ``sweep``
    and ``scale`` take each of them too (``runs`` and ``out``: this command's defaults)."""
    parser.add_argument("--entry", help="built-in entry name or path to your entry .py (default: the task's)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    parser.add_argument("--runs", type=int, default=runs, help=f"seeds seed, seed+1, ... one after another "
                                                                        f"(default {runs})")
    parser.add_argument("--target", type=float, help="another threshold; marks the run unofficial (within the "
                                                     "metric's range, e.g. 0 to 100 for accuracy)")
    parser.add_argument("--max-epochs", type=float, help="stop as not_reached after this many epochs")
    parser.add_argument("--max-seconds", type=float, help="stop as not_reached after this many timed seconds, even inside a step")
    parser.add_argument("--max-wall-seconds", type=float, help="stop as timeout after this much wall time, counted from the "
                        "command's start (setup and warm-up included; a later run's from the previous run's end)")
    parser.add_argument("--max-init-seconds", type=float, default=1800.0,
                        help="stop as timeout if the warm-up (init, untimed) takes longer (default 1800)")
    parser.add_argument("--continue", dest="continue_", action="store_true",
                        help="keep training after the target is reached (TTA is still the first pass)")
    parser.add_argument("--eval-on-interrupt", action="store_true",
                        help="on Ctrl-C between evaluations, evaluate the model as it is before stopping "
                             "(untimed; --max-seconds and --max-epochs always do)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--out", default=out, help=f"folder for the run records (default: ./{out})")
    parser.add_argument("--instance", help="price the run with this on-demand instance (see `dawnbench prices`)")
    parser.add_argument("--cost-per-hour", type=float, help="on-demand USD per hour of the hardware")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override an entry hyperparameter (JSON value of the default's type), repeatable")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="fp32 (TF32 off), tf32, bf16 or fp16 (autocast; fp16 with loss scaling)")
    parser.add_argument("--compile", nargs="?", const="default", metavar="MODE",
                        help="torch.compile the entry's network during warm-up (mode: default, "
                             "reduce-overhead, max-autotune, ...)")
    parser.add_argument("--org", help="submission_org in events.log (default: your login name)")
    parser.add_argument("--platform", help="submission_platform in events.log (default: the hardware)")
    parser.add_argument("--resource-interval", type=float, default=0.5, metavar="S",
                        help="seconds between samples of the resource monitor (resources.tsv; default 0.5)")
    parser.add_argument("--subset", metavar="NAME", help="imagenet, squad: train on the tree imported under this "
                                                         "name (`data fetch TASK --from DIR --subset NAME`); unofficial")
    parser.add_argument("--quick", action="store_true",
                        help="a quick trial (mnist, fashion-mnist, cifar10): the first few thousand training items "
                             "and a lower default target, a few minutes on 2 cores; unofficial (docs/rules.md)")
    parser.add_argument("--p2p", choices=("on", "off"), default="on",
                        help="off: disable NCCL's peer-to-peer transport between GPUs (what the links are worth); "
                             "recorded, a no-op on CPUs")


def options_argv(options: Any) -> list[str]:
    """:class:`~dawnbench.harness.options.RunOptions` as ``dawnbench run`` arguments — the inverse of
    :func:`run_options` — less what a launching command sets itself (task, --runs, --out, --scaling).
    Options at their default are left out (``run`` has the same defaults)."""
    argv = [a for key, value in options.overrides.items() for a in ("--set", f"{key}={json.dumps(value)}")]
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if f.name in ("task", "runs", "out_dir", "scaling", "overrides") or value is None or value == f.default:
            continue
        if isinstance(value, bool):  # a flag: present when true (every boolean option defaults to false)
            argv.append("--continue" if f.name == "continue_after_target" else f"--{f.name.replace('_', '-')}")
        else:
            argv += [f"--{f.name.replace('_', '-')}", str(value)]
    return argv


def run_argv(args: argparse.Namespace) -> list[str]:
    """``args``' run options as ``dawnbench run`` arguments, for each run a command launches."""
    return options_argv(run_options(args))


def run_options(args: argparse.Namespace) -> Any:
    """The :class:`~dawnbench.harness.options.RunOptions` the parsed run options ask for."""
    from dawnbench import RunOptions

    return RunOptions(task=args.task, entry=args.entry, seed=args.seed, runs=args.runs,
                      target=args.target, max_epochs=args.max_epochs, max_seconds=args.max_seconds,
                      max_wall_seconds=args.max_wall_seconds, max_init_seconds=args.max_init_seconds,
                      continue_after_target=args.continue_, eval_on_interrupt=args.eval_on_interrupt,
                      device=args.device, out_dir=Path(args.out), instance=args.instance,
                      cost_per_hour=args.cost_per_hour, overrides=parse_set(args.set),
                      precision=args.precision, compile=args.compile, org=args.org, platform=args.platform,
                      resource_interval=args.resource_interval, scaling=getattr(args, "scaling", "weak"),
                      collective_timeout=args.collective_timeout, subset=args.subset, quick=args.quick,
                      p2p=args.p2p)


def add_worker_options(parser: argparse.ArgumentParser, launcher: bool = True, scaling: bool = True) -> None:
    """Many workers: torchrun's flags, and how the batch scales (``launcher=False``:
    ``scale``, which chooses the worker counts itself, takes only the last two; ``scaling=False``:
    a command with no batch to scale, ``kernels``)."""
    from dawnbench import DEFAULT_COLLECTIVE_TIMEOUT_S, SCALINGS

    group = parser.add_argument_group("many workers (re-runs the command under torchrun)")
    if launcher:
        group.add_argument("--nproc", type=int, metavar="N", help="workers on this machine: DDP with gloo on CPUs (cores "
                           "shared out as threads), NCCL on GPUs (one GPU each)")
        group.add_argument("--nnodes", type=int, default=1, metavar="M",
                           help="machines taking part (default 1)")
        group.add_argument("--node-rank", type=int, default=0, metavar="R", help="this machine's index, 0..M-1")
        group.add_argument("--rdzv-endpoint", metavar="HOST:PORT",
                           help="node 0's address, the same on every machine (needed with --nnodes > 1)")
    group.add_argument("--threads-per-worker", type=int, metavar="T",
                       help="CPU threads of each worker (default: the cores shared out equally)")
    if scaling:
        group.add_argument("--scaling", choices=SCALINGS, default="weak",
                           help="weak: the entry's batch size per worker (default); strong: divide it among them")
    group.add_argument("--collective-timeout", type=float, default=DEFAULT_COLLECTIVE_TIMEOUT_S, metavar="S",
                       help="a worker silent this long ends the run as aborted "
                                   f"(default {DEFAULT_COLLECTIVE_TIMEOUT_S:g} s)")


def launch_options(args: argparse.Namespace) -> Any:
    """The :class:`~dawnbench.distributed.launch.LaunchOptions` the worker flags ask for, checked —
    also when ``--nproc`` is absent, so a value out of range is refused rather than ignored."""
    from dawnbench import LaunchOptions

    options = LaunchOptions(1 if args.nproc is None else args.nproc, args.nnodes, args.node_rank, args.rdzv_endpoint,
                            args.threads_per_worker)
    options.check()
    return options


def add_trust_option(parser: argparse.ArgumentParser) -> None:
    """``--trust-entry``: the one way a command imports code a run folder names (see entries/saved.py)."""
    parser.add_argument("--trust-entry", action="store_true",
                        help="if the run's entry is not built in, import the entry file its record names "
                             "(a run folder is data: without this flag no code is run from it)")


def figure_path(path: str | Path, flag: str) -> Path:
    """Where a command draws a figure: a .png, .svg or .pdf, its folder made if missing."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise DawnbenchError(f"{flag} {path}: a figure is written as .png, .svg or .pdf; end the name with one.")
    if path.is_dir():
        raise DawnbenchError(f"{flag} {path}: that is a folder; name the figure file, e.g. {path / 'figure.png'}.")
    output_dir(path.parent or Path("."), flag)
    return path


def add_executor_options(parser: argparse.ArgumentParser) -> None:
    """Where a batch command's runs go: this machine, one after another (default), or a Slurm
    cluster's jobs through submitit."""
    group = parser.add_argument_group("executor (where the runs go)")
    group.add_argument("--executor", choices=("local", "slurm"), default="local",
                       help="local: here, one after another (default); slurm: one job per run, through submitit")
    group.add_argument("--partition", help="slurm: the partition")
    group.add_argument("--account", help="slurm: the account to charge")
    group.add_argument("--time-limit", type=int, default=60, metavar="MIN", help="slurm: each job's time limit in "
                                                                                "minutes (default 60)")
    group.add_argument("--gpus-per-run", type=int, default=0, metavar="G", help="slurm: GPUs per worker (default 0)")
    group.add_argument("--cpus-per-run", type=int, metavar="C", help="slurm: CPUs per worker (default: the cluster's)")
    group.add_argument("--workers-per-node", type=int, metavar="K",
                       help="slurm: a run of more workers spans several nodes, K per node (default: one node)")
    group.add_argument("--rdzv-port", type=int, metavar="PORT",
                       help="slurm: the rendezvous port on a multi-node job's first node (default: 29400 + the job "
                            "id modulo 10,000, so jobs sharing a first node do not collide)")
    group.add_argument("--array-parallelism", type=int, default=256, metavar="N",
                       help="slurm: at most N jobs of an array at once (default 256)")
    group.add_argument("--sbatch", action="append", default=[], metavar="--KEY=VALUE",
                       help="slurm: any other sbatch option, repeatable (e.g. --sbatch=--qos=high)")
    group.add_argument("--resume", action="store_true",
                       help="slurm: in the same --out, submit only the runs without a finished record")


def slurm_options(args: argparse.Namespace) -> Any:
    """The :class:`~dawnbench.experiments.slurm.SlurmOptions` of the executor flags, checked (None: local)."""
    if args.executor != "slurm":
        if args.resume:
            raise DawnbenchError("--resume goes with --executor slurm (a local batch runs everything it is asked).")
        return None
    from dawnbench.experiments.slurm import SlurmOptions, check

    options = SlurmOptions(partition=args.partition, gpus_per_run=args.gpus_per_run, cpus_per_run=args.cpus_per_run,
                           workers_per_node=args.workers_per_node, time_limit_min=args.time_limit,
                           account=args.account, array_parallelism=args.array_parallelism, sbatch=list(args.sbatch),
                           rdzv_port=args.rdzv_port)
    check(options)
    return options


def print_notes(notes: list[str], err: Console) -> None:
    """A measuring command's notes — load while it measured, a roof far from the machine's last — where they are
    seen: in yellow on the error stream, so --json stays the document alone."""
    for note in notes:
        err.print(Text.assemble(("note:", "yellow"), f" {note}"), highlight=False, soft_wrap=True)
