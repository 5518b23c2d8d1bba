"""`kernels`: DeepBench's GEMM, convolution, RNN and all-reduce on this machine."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from dawnbench.cli.common import (
    EXIT_FAILED_RUN,
    EXIT_INTERRUPTED,
    EXIT_OK,
    add_command,
    add_worker_options,
    emit,
    print_notes,
)


def _precisions(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(p.strip() for p in text.split(",") if p.strip())


def options_from(args: argparse.Namespace) -> Any:
    from dawnbench.kernels import KernelOptions
    from dawnbench.records.problems import APPLICATIONS, SUITES

    suites = SUITES if args.suite == "all" else tuple(s for s in args.suite.split(",") if s)
    compare = tuple(c for item in args.compare for c in item.split(","))   # an empty one is refused
    set_name = APPLICATIONS if suites == ("memory",) else args.set      # the memory suite's problems are its
    return KernelOptions(suites=suites, set_name=set_name, precisions=_precisions(args.precision),
                         device=args.device, quick=args.quick, cap_s=args.cap, max_seconds=args.max_seconds,
                         out=Path(args.out), compare=compare)


def cmd_kernels(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.kernels import launch

    options = options_from(args)
    if launch.under_torchrun():
        launch.worker(options, args.collective_timeout)
        return EXIT_OK
    options.check()
    workers = launch.launch_options(args.nproc, args.nnodes, args.node_rank, args.rdzv_endpoint,
                                    args.threads_per_worker) if "allreduce" in options.suites else None
    if workers is not None and workers.node_rank != 0:
        return _joined(launch.join(options, workers), workers, err)
    from dawnbench.kernels.run import compared, run_kernels
    from dawnbench.records.problems import PUBLISHED_SET

    bar, announce, progress = _progress_bar(err)
    with bar, terminated_as_interrupt():   # `kill` or a timeout: the rows so far kept, the file marked interrupted
        document = run_kernels(options, progress=progress, announce=announce)
    try:
        if workers is not None:
            launch.launch(document, options, workers, say=lambda line: err.print(line, highlight=False))
    except KeyboardInterrupt:
        document.doc["interrupted"] = True
        document.finish()
        raise
    deepbench = any(s != "memory" for s in options.suites)      # the published sheets have no memory-bound rows
    targets = options.compare or (_published_devices() if options.set_name == PUBLISHED_SET and deepbench else ())
    doc = compared(document, targets)
    document.finish()
    from dawnbench.cli.figures import kernel_figures

    doc["figures"] = [str(p) for p in kernel_figures(doc, document.out)]
    document.write()
    def show() -> None:
        out.print(kernels_table(doc))
        for comparison in doc.get("comparison", []):
            if comparison["left_out"]:   # why a device column says less than it could
                out.print(f"{comparison['against']}: {len(comparison['left_out'])} row(s) left out of the comparison, "
                          f"e.g. {comparison['left_out'][0]['reason']} (all of them: comparison[].left_out in "
                          "kernels.json)", style="dim", highlight=False)
        figures = f" · figures: {', '.join(doc['figures'])}" if doc["figures"] else ""
        out.print(f"rows: {document.path} · table: {document.out / 'kernels.csv'}{figures}", highlight=False)
        if document.kept is not None:
            err.print(f"the kernels.json that was in {document.out} is kept as {document.kept}", highlight=False)
        print_notes(doc.get("notes", []), err)
    emit(args, doc, show)
    return EXIT_INTERRUPTED if doc.get("interrupted") else EXIT_OK

def _progress_bar(err: Console) -> tuple[Progress, Callable[[float, int], None], Callable[..., None]]:
    """The bar of rows measured, the line that announces them, and what each measured row says on it."""
    bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TimeRemainingColumn(), TextColumn("{task.fields[line]}", markup=False), console=err,
                   transient=False)
    task = None

    def announce(estimate_s: float, rows: int) -> None:
        nonlocal task
        err.print(f"{rows} rows; about {estimate_s:.0f} s at this machine's roofs (a lower bound)", highlight=False)
        task = bar.add_task("kernels", total=rows, line="")

    def progress(done: int, total: int, eta_s: float, row: dict[str, Any]) -> None:
        what = f"{row['suite']} {row['pass']} {row['precision']}"
        if row.get("skipped"):
            line = f"{what}: skipped"
        else:
            line = f"{what}: " + (f"{row['gbps']:.1f} GB/s" if row["suite"] == "memory" else f"{row['gflops']:.1f} GFLOP/s")
        bar.update(task, completed=done, line=line)
    return bar, announce, progress



@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt for the moment (the main thread only): a killed command ends as an
    interrupted one does, its file marked ``interrupted``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _published_devices() -> tuple[str, ...]:
    from dawnbench.records.published import DEVICES

    return DEVICES


def _joined(outcome: Any, workers: Any, err: Console) -> int:
    """What another machine of a multi-node all-reduce says once its ranks are done."""
    for failure in outcome.failures:
        err.print(failure, style="red", highlight=False, soft_wrap=True)
    if outcome.signal:
        return EXIT_INTERRUPTED
    err.print(f"node {workers.node_rank}'s ranks finished; node 0 writes kernels.json.", highlight=False)
    return EXIT_FAILED_RUN if outcome.failures else EXIT_OK


def kernels_table(doc: dict[str, Any]) -> Table:
    """Per suite and precision: rows run and skipped, the median GFLOP/s (GB/s for all-reduce and the memory suite)
    and the geometric-mean time ratio against each device compared."""
    from dawnbench.kernels.compare import group

    table = Table(title=f"DeepBench kernels · {doc['set']}{' (quick)' if doc['quick'] else ''} · "
                        f"{doc['hardware'].get('accelerator') or doc['hardware'].get('cpu')}")
    devices = [c["against"] for c in doc.get("comparison", [])]
    for column in ("suite", "precision", "rows", "skipped", "median GFLOP/s or GB/s", *devices):
        table.add_column(column, justify="left" if column in ("suite", "precision") else "right")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in doc["rows"]:
        groups.setdefault((row["suite"], row["precision"]), []).append(row)
    for (suite, precision), rows in groups.items():
        ran = [r for r in rows if not r.get("skipped")]
        figure = "busbw_gbps" if suite == "allreduce" else "gbps" if suite == "memory" else "gflops"
        values = sorted(r[figure] for r in ran)
        median = f"{values[len(values) // 2]:.1f}" + (" GB/s" if suite in ("allreduce", "memory") else "") \
            if values else "—"
        shares = sorted(r["fraction_of_bandwidth"] for r in ran if r.get("fraction_of_bandwidth"))
        if suite == "memory" and shares:      # of the copy bandwidth the roofs measured
            median += f" ({shares[len(shares) // 2]:.0%} of the copy)"
        ratios = []
        for comparison in doc.get("comparison", []):
            mine = group(comparison, suite, precision)
            ratios.append("—" if not mine or mine["geomean_time_ratio"] is None else
                          f"{mine['geomean_time_ratio']:.2f}× ({mine['rows']}"
                          + (f", {mine['left_out']} left out" if mine["left_out"] else "") + ")")
        table.add_row(suite, precision, str(len(ran)), str(len(rows) - len(ran)), median, *ratios)
    table.caption = ("device columns: this machine's time / the device's, geometric mean per suite and precision "
                     "(rows compared; published rows that failed their checks left out, reasons in kernels.json); "
                     "below 1 this machine is faster")
    return table


def register(sub: argparse._SubParsersAction) -> None:
    from dawnbench.records.problems import SETS

    k = add_command(sub, "kernels", cmd_kernels,
                    "DeepBench's GEMM, convolution, RNN and all-reduce, and the memory-bound suite, beside the "
                    "published devices")
    k.add_argument("suite", nargs="?", default="all", help="gemm, conv, rnn, allreduce, memory, several with commas, "
                                                          "or all (default)")
    k.add_argument("--set", default="training", choices=SETS, help="DeepBench's problem set (default training: the "
                                                                    "one with published results), or applications: "
                                                                    "the reference entries' own op calls (the memory "
                                                                    "suite's, always)")
    k.add_argument("--precision", metavar="P[,P…]", help="fp32, tf32, bf16, fp16, or several (default: every one, "
                                                         "those this device has no fast path for skipped; fp32 with "
                                                         "--quick)")
    k.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    k.add_argument("--quick", action="store_true", help="the documented subset, fp32 unless --precision says "
                                                       "otherwise: a few minutes on two cores")
    k.add_argument("--cap", type=float, metavar="S", help="seconds a row may take (default 30, 10 with --quick): "
                                                         "longer ones are skipped, an RNN shortened")
    k.add_argument("--max-seconds", type=float, metavar="S", help="for the whole command, shared out among the suites "
                                                                 "and precisions: rows past their share are skipped")
    k.add_argument("--compare", action="append", default=[], metavar="DEVICE|FILE",
                   help="V100, P100, TitanXp, 1080Ti, M40, T4, KNL7250 or another machine's kernels.json, "
                        "repeatable (default for the training set: every published device)")
    k.add_argument("--out", default="kernels", metavar="DIR", help="kernels.json, kernels.csv and the figures "
                                                                  "(default ./kernels)")
    add_worker_options(k, scaling=False)

