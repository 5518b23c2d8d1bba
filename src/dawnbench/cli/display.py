"""Terminal output: live progress during a run and the result card after it (rich)."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from dawnbench.environment import describe_hardware
from dawnbench.harness.observer import RunObserver
from dawnbench.harness.record import RunResult

if TYPE_CHECKING:
    from dawnbench.entries import Progress as TrainProgress
    from dawnbench.harness.progress import ProgressProbe, TrainingStatus

STATUS_STYLE = {"success": "bold green", "not_reached": "yellow", "diverged": "red",
                "aborted": "red", "interrupted": "magenta", "timeout": "red", "running": "cyan"}


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
    """World, batch sizes and the communication accounting of a distributed run (SPEC §13)."""
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
    why = f" (on the subset {r.subset!r}, not the official data)" if r.subset else " (target differs from the task's)"
    official = Text("official") if r.official else Text.assemble(("unofficial", "yellow"), why)
    last = r.evals[-1].value if r.evals else None
    rows = [
        ("status", Text.assemble((r.status, style), f" — {r.error}" if r.error else "")),
        ("task", Text.assemble(f"{r.task} · {r.metric} ≥ {r.threshold:g} · ", official)),
        ("entry", f"{r.entry} · seed {r.seed}"),
        ("time to accuracy", f"{format_seconds(r.time_to_accuracy_s)} ({format_duration(r.time_to_accuracy_s)})"
         if r.time_to_accuracy_s is not None else "∞ (target not reached)"),
        ("epochs to target", "—" if r.epochs_to_target is None else f"{r.epochs_to_target:.3f}"),
        ("precision", format_init(r)),
        ("last evaluation", "—" if last is None else f"{last:.2f} after {r.evals[-1].epoch:.3f} epochs"
         + (f" (stopped by {r.evals[-1].stopped_by}: not a time to accuracy)" if r.evals[-1].stopped_by else "")),
        ("memory", format_memory_plan(r.memory_plan)),
        ("wall time", f"{format_seconds(r.wall_s)} (evaluation {format_seconds(r.eval_s)}, "
                      f"init {format_seconds(r.init_s)}, checkpoint {format_seconds(r.checkpoint_s)}, logging {format_seconds(r.log_s)})"),
        ("training cost", "—" if r.training_cost_usd is None else
         f"${r.training_cost_usd:.2f} at ${r.cost_per_hour:g}/h" + (f" ({r.instance})" if r.instance else "")),
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


def runs_table(results: Sequence[RunResult], summary: dict) -> Table:
    table = Table(title=f"{len(results)} runs · {summary['successes']}/{summary['runs']} reached the target")
    for col in ("seed", "status", "TTA", "epochs", "last metric", "wall", "samples/s", "GFLOP/s", "% peak"):
        table.add_column(col, justify="right" if col != "status" else "left")
    for r in results:
        t = r.throughput or {}
        table.add_row(str(r.seed), Text(r.status, style=STATUS_STYLE.get(r.status, "")),
                      format_seconds(r.time_to_accuracy_s),
                      "—" if r.epochs_to_target is None else f"{r.epochs_to_target:.3f}",
                      f"{r.evals[-1].value:.2f}" if r.evals else "—", format_seconds(r.wall_s),
                      f"{t['samples_per_s']:,.0f}" if t.get("samples_per_s") else "—",
                      f"{t['achieved_gflops']:.1f}" if t.get("achieved_gflops") else "—",
                      f"{100 * t['fraction_of_peak']:.0f}" if t.get("fraction_of_peak") else "—")
    unknown = next((r.throughput["flops_error"] for r in results if (r.throughput or {}).get("flops_error")), None)
    table.caption = summary_line(summary) + (f"\nGFLOP/s, % peak: {unknown}" if unknown else "")
    return table


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "—" if value is None else fmt.format(value)


def summary_line(s: dict) -> str:
    """The §7 summary of one configuration in two lines."""
    if not s["runs"]:
        return "no run counted (see the note: why each was left out)"
    if not s["successes"]:
        return f"no run reached the target ({s['runs']} runs)"
    ci = s["tta_ci95_s"]
    return (f"success {s['successes']}/{s['runs']} · TTA median {format_seconds(s['tta_median_s'])}, mean "
            f"{format_seconds(s['tta_mean_s'])}" + (f" (95 % CI {ci[0]:.2f}–{ci[1]:.2f} s)" if ci else "") +
            f", min {format_seconds(s['tta_min_s'])}, max {format_seconds(s['tta_max_s'])}\n"
            f"CV {_num(s['tta_cov'] and 100 * s['tta_cov'], '{:.1f} %')} · olympic mean "
            f"{format_seconds(s['olympic_mean_s'])} · epochs {_num(s['epochs_mean'], '{:.3g}')} ± "
            f"{_num(s['epochs_std'], '{:.2g}')} · std ratio {_num(s['std_ratio'])}")


def groups_table(groups: list[dict], title: str) -> Table:
    """`dawnbench analyze`: one row per group, the columns of the DAWNBench analysis of MLPerf v0.5."""
    table = Table(title=title)
    for col in ("group", "runs", "success", "TTA mean", "TTA median", "CV", "olympic mean",
                "epochs", "time/epoch", "std ratio"):
        table.add_column(col, justify="left" if col == "group" else "right", no_wrap=col == "group")
    for g in groups:
        table.add_row(Text(g["name"]), str(g["runs"]), f"{g['successes']}/{g['runs']}",
                      format_seconds(g["tta_mean_s"]), format_seconds(g["tta_median_s"]),
                      _num(g["tta_cov"] and 100 * g["tta_cov"], "{:.2f} %") if g["tta_cov"] is not None else "—",
                      format_seconds(g["olympic_mean_s"]),
                      "—" if g["epochs_mean"] is None else f"{g['epochs_mean']:.3g} ± {g['epochs_std']:.2g}",
                      "—" if g["time_per_epoch_mean_s"] is None else
                      f"{g['time_per_epoch_mean_s']:.3g} ± {g['time_per_epoch_std_s']:.2g} s",
                      _num(g["std_ratio"]))
    table.caption = ("CV = population std / mean of TTA over successful runs; std ratio = CV(epochs) / "
                     "CV(time per epoch): > 1 means variance comes from convergence, < 1 from speed")
    return table


def sweep_table(rows: list[dict], baseline: str) -> Table:
    table = Table(title=f"sweep (speedups relative to {baseline})")
    for col in ("configuration", "success", "epochs to target", "samples/s", "time/epoch", "TTA median",
                "throughput speedup", "TTA speedup"):
        table.add_column(col, justify="left" if col == "configuration" else "right")
    for r in rows:
        table.add_row(Text(r["name"]), f"{r['successes']}/{r['runs']}",
                      "—" if r["epochs_mean"] is None else f"{r['epochs_mean']:.3g} ± {r['epochs_std']:.2g}",
                      _num(r["samples_per_s_mean"], "{:,.0f}"), format_seconds(r["time_per_epoch_mean_s"]),
                      format_seconds(r["tta_median_s"]), _num(r["throughput_speedup"], "{:.2f}×"),
                      _num(r["tta_speedup"], "{:.2f}×"))
    return table


def scale_table(doc: dict) -> Table:
    """`dawnbench scale`: per worker count, medians over runs and speedups against the fewest workers."""
    base = doc["baseline_workers"]
    threads = f", {doc['threads_per_worker']} thread(s) per worker" if doc.get("threads_per_worker") else ""
    table = Table(title=f"scaling of {doc['job']} ({doc['scaling']} scaling{threads}, median of {doc['runs']} "
                        f"run(s); speedups against {base} worker{'s' if base > 1 else ''})")
    system = [(key, label, fmt) for key, label, fmt in SYSTEM_COLUMNS if any(r.get(key) is not None for r in doc["rows"])]
    for col in ("workers", "global batch", "reached", "time/epoch", "epochs to target", "TTA",
                "speedup epoch", "speedup TTA", "efficiency epoch", "efficiency TTA", "comm overhead",
                "accounted", *(label for _, label, _ in system)):
        table.add_column(col, justify="right")
    for r in doc["rows"]:
        table.add_row(str(r["workers"]), _num(r["global_batch_size"], "{:.0f}"), f"{r['successes']}/{r['runs']}",
                      format_seconds(r["time_per_epoch_s"]), _num(r["epochs_to_target"], "{:.3g}"),
                      format_seconds(r["tta_s"]), _num(r["speedup_epoch"], "{:.2f}×"),
                      _num(r["speedup_tta"], "{:.2f}×"), _num(r["efficiency_epoch"], "{:.0%}"),
                      _num(r["efficiency_tta"], "{:.0%}"), _num(r["comm_overhead_pct"], "{:.1f} %"),
                      _num(r["accounted_pct"], "{:.0f} %"), *(_num(r.get(key), fmt) for key, _, fmt in system))
    table.caption = ("CPU: the run's processes summed, 100 % = one core; host memory: their summed resident memory "
                     "(peak); accelerators summed over the devices used; traffic in MB/s, both directions")
    return table


def jobs_table(doc: dict) -> Table:
    """`dawnbench jobs`: per job type, what the runs achieved together and asked of the machine."""
    system = [(key, label, fmt) for key, label, fmt in SYSTEM_COLUMNS if any(r.get(key) is not None for r in doc["rows"])]
    shares = "; ".join(f"GPU {s['gpu']}" if "gpu" in s else f"CPUs {','.join(map(str, s['cpus']))}" for s in doc["shares"])
    table = Table(title=f"{doc['task']}: {doc['slots']} slots ({shares}) three ways")
    for col in ("type", "runs", "reached", "samples/s", "TTA (median)", "wall", *(label for _, label, _ in system)):
        table.add_column(col, justify="left" if col == "type" else "right")
    for r in doc["rows"]:
        table.add_row(r["type"], str(r["runs"]), f"{r['successes']}/{r['runs']}", _num(r["samples_per_s"], "{:,.0f}"),
                      format_seconds(r["tta_median_s"]), format_seconds(r["wall_s"]),
                      *(_num(r.get(key), fmt) for key, _, fmt in system))
    table.caption = ("samples/s: all the type's runs together; CPU and accelerators: each run's mean weighted by "
                     "its length, over the type's wall time; memory: each run's peak, summed; every run over all its "
                     "processes (CPU 100 % = one core)")
    return table


# The system-level columns (SPEC §20) of the scale and jobs tables: key, header, format; shown where known.
SYSTEM_COLUMNS = (("cpu_util_pct", "CPU %", "{:.0f}"), ("cpu_machine_pct", "machine CPU %", "{:.0f}"),
                  ("host_mem_mib", "host MiB", "{:,.0f}"), ("accel_util_pct", "accel %", "{:.0f}"),
                  ("accel_mem_mib", "accel MiB", "{:,.0f}"), ("pcie_mbps", "PCIe MB/s", "{:,.0f}"),
                  ("nvlink_mbps", "NVLink MB/s", "{:,.0f}"))


def schedule_table(doc: dict) -> Table:
    """`dawnbench schedule`: where each job runs in the best schedule, and both makespans."""
    best, naive = doc["best"], doc["naive"]
    table = Table(title=f"best schedule on {doc['accelerators']} accelerators",
                  caption=f"makespan {format_seconds(best['makespan_s'])} against "
                          f"{format_seconds(naive['makespan_s'])} for each job on all accelerators in turn "
                          f"(saves {format_seconds(doc['saved_s'])}); lower bound "
                          f"{format_seconds(doc['lower_bound_s'])}; {doc['candidates']:,} candidates"
                          + {"orders": "", "counts": ", jobs longest first",
                             "heuristic": ", too many to try all: a heuristic search (longest first, then "
                                          "single-job changes)"}[doc["search"]])
    for col in ("job", "workers", "accelerators", "start", "end"):
        table.add_column(col, justify="left" if col == "job" else "right")
    for p in sorted(best["placements"], key=lambda p: (p["start_s"], p["accelerators"])):
        table.add_row(Text(p["job"]), str(p["workers"]), ",".join(map(str, p["accelerators"])),
                      format_seconds(p["start_s"]), format_seconds(p["end_s"]))
    return table


def inference_table(run_dir: str, inf: dict) -> Table:
    """The figures of `dawnbench infer`: latency percentiles, throughput, cost, scenarios."""
    verdict = Text("official", style="green") if inf["official"] else Text(
        "unofficial: " + "; ".join(inf["unofficial_reasons"]), style="yellow")
    table = Table(title=f"inference of {run_dir}", caption=verdict, show_header=False)
    table.add_column("figure", style="bold")
    table.add_column("value")
    table.add_row(inf["metric"], f"{inf['value']:.2f} (threshold {inf['threshold']:g})")
    table.add_row("latency, batch 1",
                  f"mean {inf['latency_mean_ms']:.3f} ms · p50 {inf['latency_p50_ms']:.3f} · "
                  f"p90 {inf['latency_p90_ms']:.3f} · p99 {inf['latency_p99_ms']:.3f} ms")
    table.add_row("items", f"{inf['items']:,} measured, {inf['warmup_items']} warm-up excluded, "
                           f"{inf['threads']} thread(s)")
    table.add_row("throughput", f"{inf['throughput_items_per_s']:,.0f} items/s at batch {inf['throughput_batch_size']} "
                  "(" + ", ".join(f"{bs}: {r:,.0f}" for bs, r in inf["throughput_by_batch_size"].items()) + ")")
    cost = inf.get("cost_per_10k_usd")
    table.add_row("cost per 10,000 items",
                  f"${cost:.4f} at ${inf['cost_per_hour']:.4g}/h" if cost is not None else "no price (--instance or --cost-per-hour)")
    for name, s in inf.get("scenarios", {}).items():
        rate = f"{s['samples_per_s']:,.1f} samples/s" if s.get("samples_per_s") is not None else ""
        lat = (f"p90 {s['latency_p90_ms']:.3f} ms, p99 {s['latency_p99_ms']:.3f} ms"
               if s.get("latency_p90_ms") is not None else "")
        table.add_row(f"LoadGen {name}", f"{s.get('validity')} · {s.get('queries')} queries · {rate} · {lat}")
    table.add_row("histogram", inf["histogram"])
    return table


def board_table(task: str, board: str, rows: list[dict]) -> Table:
    """One leaderboard ranking (the first rows)."""
    table = Table(title=f"{task} · {board.replace('_', ' ')}")
    for col in ("rank", "value", "model", "author", "hardware", "framework", "date"):
        table.add_column(col, justify="right" if col in ("rank", "value") else "left", overflow="fold")
    for r in rows:
        table.add_row(str(r["rank"]), r["display"], *(Text(r[k]) for k in ("model", "author", "hardware", "framework")),
                      r["date"])  # Text: submitted strings are never read as rich markup
    return table


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
    rate = f"{summary['samples_per_s']:,.0f} samples/s · " if summary.get("samples_per_s") else ""
    peak = summary.get("fraction_of_peak")
    caption = (f"{rate}{step['flops_per_s'] / 1e9:,.1f} GFLOP/s = "
               f"{'—' if peak is None else f'{100 * peak:.0f} %'} of the {summary['precision']} roof · "
               f"memory-bound ops {100 * summary['memory_bound_share']:.0f} % of op time · ops "
               f"{100 * summary['op_time_share_of_window']:.0f} % of the window · files in {out_dir}")
    if summary.get("without"):
        w = summary["without"]
        caption += (f"\nwithout {', '.join(w['modules'])} ({w['removed']} modules): step "
                    f"{format_seconds(w['step_s'])}, {w['speedup']:.2f}× the throughput (no accuracy claimed)")
    table = Table(title=f"{summary['task']} · {summary['entry']} · {summary['precision']} · "
                        f"{summary['steps']} steps, {format_seconds(summary['window_s'])}", caption=caption)
    for col in ("op", "input shapes", "calls", "time %", "GFLOP/s", "GB/s", "FLOP/B", "bound"):
        table.add_column(col, justify="left" if col in ("op", "input shapes", "bound") else "right")
    from dawnbench.profiling.ops import read_ops

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
