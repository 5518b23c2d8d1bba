"""Terminal output: live progress during a run and the result card after it (rich)."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from dawnbench import RunObserver
from dawnbench.environment import describe_hardware
from dawnbench.records.record import RunResult, Status
from dawnbench.records.selection import disturbance, disturbed
from dawnbench.tasks import QUICK

if TYPE_CHECKING:
    from dawnbench import ProgressProbe, TrainingStatus
    from dawnbench.entries import Progress as TrainProgress

STATUS_STYLE = {Status.SUCCESS: "bold green", Status.NOT_REACHED: "yellow", Status.DIVERGED: "red",
                Status.ABORTED: "red", Status.INTERRUPTED: "magenta", Status.TIMEOUT: "red", Status.RUNNING: "cyan"}


def format_duration(seconds: float | None) -> str:
    """h:mm:ss, rounded up to the whole second as DAWNBench displays times."""
    if seconds is None:
        return "—"
    total = math.ceil(seconds)
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


def format_seconds(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds:.2f} s"


class LiveProgress(RunObserver):
    """A progress bar over the entry's schedule, a line at each evaluation, and in between
    the step count, epoch, samples/s and ETA (``harness/progress.py``).

    In a terminal the bar's line is redrawn at most once a second; into a log file or a
    pipe a plain line goes out every 30 s. A daemon thread does the drawing, so the
    training loop pays nothing but the step counter's increment.
    """

    def __init__(self, console: Console, terminal_interval: float = 1.0, log_interval: float = 30.0):
        self.console = console
        self.progress = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                                 TextColumn("{task.fields[line]}", markup=False), console=console,
                                 auto_refresh=False, transient=False)
        self.bar = None
        self.interval = terminal_interval if console.is_terminal else log_interval
        self._seed: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def preparing(self, what: str) -> None:
        self.console.print(what, highlight=False, soft_wrap=True)

    def run_started(self, index: int, total: int, result: RunResult) -> None:
        if index == 0:
            self.progress.start()
        epochs = result.budget.get("max_epochs") or result.hparams.get("epochs") or 1
        self._seed = result.seed
        self.bar = self.progress.add_task(f"run {index + 1}/{total} seed {result.seed}",
                                          total=float(epochs), line="warming up (untimed)")
        self.progress.refresh()

    def training_started(self, probe: ProgressProbe) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._report, args=(probe,), daemon=True, name="dawnbench-progress")
        self._thread.start()

    def _report(self, probe: ProgressProbe) -> None:
        while not self._stop.wait(self.interval):
            status = probe.snapshot()
            line = training_line(status)
            if self.console.is_terminal:
                self.progress.update(self.bar, line=line, **({} if status.epoch is None else {"completed": status.epoch}))
                self.progress.refresh()
            else:
                self.console.print(f"seed {self._seed} · {line}", highlight=False, soft_wrap=True)

    def _stop_reporting(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def evaluated(self, result: RunResult, progress: TrainProgress, samples_per_s: float | None) -> None:
        rate = f"{samples_per_s:,.0f} samples/s" if samples_per_s else "— samples/s"
        line = (f"epoch {progress.epoch:.2f} · {rate} · {result.metric} {result.evals[-1].value:.2f} · "
                f"timed {result.evals[-1].timed_s:.1f} s")
        self.progress.update(self.bar, completed=progress.epoch, line=line)
        if self.console.is_terminal:
            self.progress.refresh()
        else:  # a log file or pipe gets one line per evaluation instead of a redrawn bar
            self.console.print(f"seed {result.seed} · {line}", highlight=False, soft_wrap=True)

    def run_finished(self, result: RunResult) -> None:
        self._stop_reporting()
        if self.bar is None:   # it ended before it started (a wall budget the setup had spent): no bar to close
            return
        self.progress.update(self.bar, line=f"{result.status} · TTA {format_seconds(result.time_to_accuracy_s)}")
        self.progress.refresh()

    def close(self) -> None:
        self._stop_reporting()
        self.progress.stop()


def training_line(status: TrainingStatus) -> str:
    """``step 1,234 · epoch 2.47 · 812 samples/s · ETA 0:09:40 to schedule end · timed 183.2 s``."""
    parts = [f"step {status.steps:,}"]
    if status.epoch is not None:
        parts.append(f"epoch {status.epoch:.2f}")
    if status.samples_per_s:
        parts.append(f"{status.samples_per_s:,.0f} samples/s")
    if status.eta_s is not None:
        parts.append(f"ETA {format_duration(status.eta_s)} to schedule end")
    parts.append(f"timed {status.timed_s:.1f} s")
    return " · ".join(parts)


def format_throughput(t: dict | None) -> Text:
    if not t or not t.get("samples_per_s"):
        return Text("—")
    text = Text(f"{t['samples_per_s']:,.0f} samples/s")
    if t.get("flops_error"):
        text.append(f" ({t['flops_error']})", style="dim")
    elif t.get("achieved_gflops"):
        workers = t.get("roof_workers", 1)
        roof = (f"the measured {t.get('precision', 'fp32')} roof ({t['peak_gflops']:.0f} GFLOP/s"
                + (f", one worker's × {workers})" if workers > 1 else ")"))
        text += f" × {t['flops_per_sample'] / 1e6:,.1f} MFLOP/sample = {t['achieved_gflops']:.1f} GFLOP/s, "
        if t.get("fraction_of_peak") is not None:
            text.append(f"{100 * t['fraction_of_peak']:.0f} % of {roof}")
        else:
            text.append(f"above {roof}: accounting error", style="red")
    return text


def format_floor(t: dict | None) -> str:
    """The samples to target at the roof, and how far TTA is from it (a figure that holds on any machine)."""
    if not t or not t.get("compute_floor_s"):
        return "—"
    return (f"{format_seconds(t['compute_floor_s'])} = samples to target × FLOPs per sample / the "
            f"{t.get('precision', 'fp32')} roof; TTA is {t['tta_over_floor']:.2f}× the floor")


def format_resources(res: dict | None) -> Text:
    """CPU and memory of the run, and a warning when other processes took CPU while it was timed."""
    if not res or "proc_cpu_pct" not in res:
        return Text("—")
    text = Text(f"CPU {res['proc_cpu_pct']['mean']:.0f} % mean, {res['proc_cpu_pct']['max']:.0f} % max "
            f"(100 = one core of {res['cpu_count']}) · RSS max {res['proc_rss_bytes']['max'] / 2**30:.2f} GiB")
    gpu = res.get("gpu0_util_pct")
    if gpu:
        text.append(f" · GPU 0 {gpu['mean']:.0f} % busy")
    others = res.get("others_cpu_s_timed", 0.0)
    if res.get("interference"):
        return text.append("\n" + res["interference"], style="red")
    return text.append(f" · others {others:.1f} CPU-s while timed")


def format_workers(d: dict | None) -> str:
    """World, batch sizes and the communication accounting of a distributed run."""
    if not d:
        return "1 process"
    text = (f"{d['world_size']} × {d['backend']} ({d['nnodes']} node{'s' if d['nnodes'] > 1 else ''}"
            + (f", {d['threads_per_worker']} thread(s) each" if d.get("threads_per_worker") else "")
            + f") · batch {d['per_worker_batch_size']} per worker, {d['global_batch_size']} global "
            f"({d['scaling']} scaling)"
            + (f" · launch {format_seconds(d['launch_s'])} (untimed)" if d.get("launch_s") is not None else ""))
    if d.get("comm_overhead_pct") is not None:
        text += (f"\ncommunication {d['comm_overhead_pct']:.1f} % of time per epoch "
                 f"({format_seconds(d['comm_exposed_per_epoch_s'])} of {format_seconds(d['time_per_epoch_s'])} "
                 f"exposed; slowest worker's compute {format_seconds(d['compute_per_epoch_s'])}; "
                 f"accounted {d['accounted_pct']:.0f} %)")
    return text


def format_init(r: RunResult) -> Text:
    """Precision, compilation and what init cost: the knobs of SPEC §12 on one line."""
    text = Text(f"{r.precision}")
    if r.compile:
        text.append(f" · torch.compile ({r.compile}) {format_seconds(r.compile_s)} in init")
        if r.graphs_compiled_timed:
            text.append(f" · {r.graphs_compiled_timed} graph(s) compiled inside the timed region", style="yellow")
    return text.append(f" · init {format_seconds(r.init_s)} (warm-up on synthetic data, untimed)")


def result_card(r: RunResult) -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    style = STATUS_STYLE.get(r.status, "")
    why = (" (a quick trial: the first training items and a lower target, --quick)" if r.subset == QUICK else
           f" (on the subset {r.subset!r}, not the official data)" if r.subset else " (target differs from the task's)")
    official = Text("official") if r.official else Text.assemble(("unofficial", "yellow"), why)
    last = r.evals[-1].value if r.evals else None
    flagged = disturbance([r])       # on the result's own line: the one a reader copies
    rows = [
        ("status", Text.assemble((r.status, style), f" — {r.error}" if r.error else "",
                                 (f" · {flagged}: its time is suspect" if flagged else "", "red"))),
        ("task", Text.assemble(f"{r.task} · {r.metric} ≥ {r.threshold:g} · ", official)),
        ("entry", f"{r.entry} · seed {r.seed}"),
        ("time to accuracy", f"{format_seconds(r.time_to_accuracy_s)} ({format_duration(r.time_to_accuracy_s)})"
         if r.time_to_accuracy_s is not None else "∞ (target not reached)"),
        ("epochs to target", "—" if r.epochs_to_target is None else f"{r.epochs_to_target:.3f}"),
        ("precision", format_init(r)),
        ("last evaluation", "—" if last is None else f"{last:.2f} after {r.evals[-1].epoch:.3f} epochs"
         + (f" (stopped by {r.evals[-1].stopped_by}: not a time to accuracy)" if r.evals[-1].stopped_by else "")),
        ("memory", format_memory_plan(r.memory_plan)),
        ("wall time", f"{format_seconds(r.total_wall_s)} from the start: setup {format_seconds(r.setup_s)} "
                      f"(start-up, data, memory plan) + init {format_seconds(r.init_s)} (warm-up) + run "
                      f"{format_seconds(r.wall_s)} (wall_s: timed {format_seconds(r.timed_s)}, evaluation "
                      f"{format_seconds(r.eval_s)}, checkpoint {format_seconds(r.checkpoint_s)}, "
                      f"logging {format_seconds(r.log_s)})"),
        ("training cost", "—" if r.training_cost_usd is None else
         f"${r.training_cost_usd:.2f} at ${r.cost_per_hour:g}/h" + (f" (priced as {r.instance}: the price, not the "
                                                                   "hardware measured)" if r.instance else "")),
        ("throughput", format_throughput(r.throughput)),
        ("compute floor", format_floor(r.throughput)),
        ("resources", format_resources(r.resources)),
        ("workers", format_workers(r.distributed)),
        ("hardware", describe_hardware(r.hardware)),
        ("record", r.run_dir),
    ]
    for key, value in rows:
        grid.add_row(key, value)
    return Panel(grid, title="dawnbench result", expand=False)


def format_memory_plan(plan: dict | None) -> str:
    """The batch the memory plan chose and why, in one line."""
    if not plan:
        return "—"
    if not plan.get("planned"):
        return plan.get("note") or "not planned"
    need, free = plan["estimate_bytes"].get("cpu", 0), plan["free_bytes"].get("cpu", 0)
    line = (f"batch {plan['batch_size']} ({plan['source']}) · about {need / 2**30:.1f} GiB of the "
            f"{free / 2**30:.1f} GiB free · evaluation batch {plan['eval_batch_size']}")
    if "cuda" in plan["estimate_bytes"]:
        line += f" · GPU {plan['estimate_bytes']['cuda'] / 2**30:.1f} of {plan['free_bytes']['cuda'] / 2**30:.1f} GiB"
    return line + (f" — {plan['note']}" if plan.get("note") else "")


def runs_table(results: Sequence[RunResult], summary: dict, flagged: str | None = None) -> Table:
    # the title counts the rows shown; the caption's summary counts only the runs it keeps (a disturbed run is left out)
    reached = sum(r.succeeded for r in results)
    left_out = len(results) - summary["runs"]
    targets = ", ".join(sorted({f"{r.metric} ≥ {r.threshold:g}" for r in results})) or "the target"
    table = Table(title=f"{len(results)} runs · {reached}/{len(results)} reached {targets}"
                        + (f" · {left_out} left out of the summary below" if left_out else ""))
    for col in ("seed", "status", "TTA", "epochs", "last metric", "wall", "samples/s", "GFLOP/s", "% peak"):
        table.add_column(col, justify="right" if col != "status" else "left")
    for r in results:
        t = r.throughput or {}
        status = Text(r.status, style=STATUS_STYLE.get(r.status, ""))
        if disturbed(r):
            status.append(" ⚠ flagged", style="red")
        table.add_row(str(r.seed), status,
                      format_seconds(r.time_to_accuracy_s),
                      "—" if r.epochs_to_target is None else f"{r.epochs_to_target:.3f}",
                      f"{r.evals[-1].value:.2f}" if r.evals else "—", format_seconds(r.wall_s),
                      f"{t['samples_per_s']:,.0f}" if t.get("samples_per_s") else "—",
                      f"{t['achieved_gflops']:.1f}" if t.get("achieved_gflops") else "—",
                      f"{100 * t['fraction_of_peak']:.0f}" if t.get("fraction_of_peak") else "—")
    unknown = next((r.throughput["flops_error"] for r in results if (r.throughput or {}).get("flops_error")), None)
    table.caption = summary_line(summary, flagged) + (f"\nGFLOP/s, % peak: {unknown}" if unknown else "")
    return table


def format_number(value: float | None, fmt: str = "{:.2f}") -> str:
    return "—" if value is None else fmt.format(value)


def format_spread(mean: float | None, std: float | None, unit: str = "") -> str:
    """"1.48 ± 0.12 s"; one run's mean alone (no spread to tell), "—" for none."""
    return "—" if mean is None else f"{mean:.3g}" + ("" if std is None else f" ± {std:.2g}") + unit


def summary_line(s: dict, flagged: str | None = None) -> str:
    """The §7 summary of one configuration in two lines; ``flagged``: the flagged runs behind it, on its first."""
    tail = f" · {flagged}" if flagged else ""
    if not s["runs"]:
        return f"no run counted (see the note: why each was left out){tail}"
    if not s["successes"]:
        return f"no run reached the target ({s['runs']} runs){tail}"
    ci = s["tta_ci95_s"]
    # over the successes only, which a failure would not be among: `compare` counts a failure as infinitely slow
    of = "" if s["successes"] == s["runs"] else f" of the {s['successes']} successes:"
    return (f"success {s['successes']}/{s['runs']} · TTA{of} median {format_seconds(s['tta_median_s'])}, mean "
            f"{format_seconds(s['tta_mean_s'])}" + (f" (95 % CI {ci[0]:.2f}–{ci[1]:.2f} s)" if ci else "") +
            f", min {format_seconds(s['tta_min_s'])}, max {format_seconds(s['tta_max_s'])}{tail}\n"
            f"CV {format_number(s['tta_cov'] and 100 * s['tta_cov'], '{:.1f} %')} · olympic mean "
            f"{format_seconds(s['olympic_mean_s'])} · epochs {format_number(s['epochs_mean'], '{:.3g}')} ± "
            f"{format_number(s['epochs_std'], '{:.2g}')} · std ratio {format_number(s['std_ratio'])}")


