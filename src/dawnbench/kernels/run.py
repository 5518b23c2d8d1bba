"""Running the kernel suites of one process (GEMM, convolution, RNN) and writing ``kernels.json``.

    options = KernelOptions(suites=("gemm",), set_name="training", quick=True, out=Path("kernels"))
    doc = run_kernels(options, progress=print)

The plan comes first: every problem × pass × precision is a row, with its FLOPs, its minimum
bytes, the memory it needs and the time it should take at this machine's roof (the larger of
FLOPs / roof and bytes / bandwidth, for a warm-up call and four timed ones). A row is skipped —
its reason in ``skipped`` — when its precision cannot run here or has no fast path and was not
asked for, when its operands would not fit in half of the memory free, when one call would take
more than a fifth of the cap (an RNN is shortened to fewer timesteps instead, the row says
how many ran), or when its suite's share of ``max_seconds`` for the whole command has run out
(each suite and precision gets an equal part of what is left when it starts). The rows that run are
timed with :mod:`~dawnbench.kernels.timing`; ``kernels.json`` is rewritten after each one, so
Ctrl-C keeps every finished row. All-reduce runs in the workers torchrun starts
(:mod:`~dawnbench.kernels.allreduce`); the command merges their rows in.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import torch

from dawnbench import bounds, environment
from dawnbench import precision as precision_rules  # through the module: the answer measure_roofs gets
from dawnbench.errors import DawnbenchError
from dawnbench.harness.options import resolve_device
from dawnbench.io import atomic_write_json, atomic_write_text, dumps, output_dir
from dawnbench.kernels import compare
from dawnbench.kernels.passes import statement
from dawnbench.kernels.timing import TooSlow, time_call
from dawnbench.opcalls.calls import meta_cost
from dawnbench.precision import ELEMENT_BYTES, PRECISIONS
from dawnbench.profiling.load import against_last, watched
from dawnbench.profiling.resources import ResourceMonitor
from dawnbench.profiling.roofs import Roofs, measure_roofs
from dawnbench.records import documents, problems
from dawnbench.records.problems import PASSES, SETS, SUITES, Problem

CALLS = 5                    # a warm-up call and at least four timed ones: what a row's estimate counts
CAP_S, QUICK_CAP_S = 30.0, 10.0  # seconds a row may take, by default
MEMORY_SHARE = 0.5           # a row's operands must fit in this share of the free memory
CSV_PARAMS = ("op", "class", "entry", "m", "n", "k", "a_transposed", "b_transposed", "w", "h", "c", "filter_w",
              "filter_h", "pad_w", "pad_h", "stride_w", "stride_h", "layout", "hidden", "batch", "timesteps", "cell",
              "floats")
# what timing a row adds to it (measure_row): a row whose timing cannot be true keeps none of it
TIMED = ("median_s", "iqr_s", "repeats", "calls", "flops", "bytes", "gflops", "gbps", "intensity", "fraction_of_roof")
CSV_COLUMNS = ("suite", "set", "pass", "precision", *CSV_PARAMS, "timesteps_run", "median_s", "iqr_s", "repeats", "calls",
               "flops", "bytes", "gflops", "gbps", "intensity", "fraction_of_roof", "fraction_of_bandwidth", "world_size",
               "algbw_gbps", "busbw_gbps", "skipped")


@dataclass
class KernelOptions:
    suites: tuple[str, ...] = SUITES
    set_name: str = "training"
    precisions: tuple[str, ...] | None = None   # None: every precision; those without a fast path are skipped
    device: str = "auto"
    quick: bool = False
    cap_s: float | None = None                  # seconds a row may take (None: 30, or 10 with quick)
    max_seconds: float | None = None            # for the whole command
    out: Path = Path("kernels")
    compare: tuple[str, ...] = ()               # published device names, or other kernels.json files

    @property
    def cap(self) -> float:
        return self.cap_s if self.cap_s is not None else (QUICK_CAP_S if self.quick else CAP_S)

    def chosen_precisions(self) -> tuple[str, ...]:
        """As asked; by default every precision (fp32 alone with --quick)."""
        return self.precisions or (("fp32",) if self.quick else PRECISIONS)

    def check(self) -> None:
        """Bad input, before anything is measured: one paragraph, exit 2."""
        unknown = [s for s in self.suites if s not in SUITES]
        if unknown or not self.suites:
            raise DawnbenchError(f"kernels {','.join(unknown) or '(none)'}: not a suite; use gemm, conv, rnn, "
                                 "allreduce, memory or all.")
        if self.set_name not in SETS:
            raise DawnbenchError(f"--set {self.set_name}: not a DeepBench set; use one of {', '.join(SETS)}.")
        bad = [p for p in self.precisions or () if p not in PRECISIONS]
        if bad or self.precisions == ():
            raise DawnbenchError(f"--precision {','.join(bad) or '(none)'}: not a precision; use fp32, tf32, bf16 or fp16 "
                                 "(one, or several separated by commas).")
        bounds.check_fields(self, {"cap_s": "--cap", "max_seconds": "--max-seconds"})
        device = resolve_device(self.device)
        for precision in self.precisions or ():
            ok, why = runnable(precision, device)
            if not ok:
                raise DawnbenchError(f"--precision {precision} on {device}: {why}. Leave it out, or use a device "
                                     "that runs it.")
        for other in self.compare:
            compare.check_target(other, self.out)
        if self.out.exists() and not self.out.is_dir():
            raise DawnbenchError(f"--out {self.out}: that is a file, not a folder. Pass a folder (it is made if it "
                                 "does not exist).")


def runnable(precision: str, device: torch.device) -> tuple[bool, str]:
    """Whether ``device`` can run ``precision`` at all (TF32 is a tensor-core format: no CPU has it)."""
    if precision == "tf32" and (device.type != "cuda" or torch.cuda.get_device_capability(device)[0] < 8):
        return False, precision_rules.device_supports("tf32", device)[1] or "TF32 needs an Ampere or newer GPU"
    return True, ""


@dataclass
class Planned:
    problem: Problem
    pass_name: str
    precision: str
    estimate_s: float = 0.0                   # one call at the roof
    skipped: str | None = None


def passes_of(problem: Problem) -> tuple[str, ...]:
    """Training problems have backward passes; inference ones only a forward pass; a replay is its own one."""
    if problem.replay:
        return (problem.params["pass"],)
    return PASSES[problem.suite] if problem.set in ("training", None) else ("forward",)


def plan(options: KernelOptions, device: torch.device, roofs: Roofs) -> list[Planned]:
    """Every row of the single-process suites, with its estimate or the reason it will not run."""
    asked = options.precisions
    precisions = options.chosen_precisions()
    free = free_bytes(device)
    rows = []
    for suite in (s for s in options.suites if s != "allreduce"):
        chosen = problems.quick(suite) if options.quick else problems.problems(suite, options.set_name)
        for precision in precisions:
            can, why_not = runnable(precision, device)
            fast, why_slow = precision_rules.device_supports(precision, device)
            for problem in chosen:
                if problem.replay and problem.params["precision"] != precision:
                    continue        # a recorded call runs at the dtypes it was recorded with: its own precision
                for pass_name in passes_of(problem):
                    row = Planned(problem, pass_name, precision)
                    if not can:
                        row.skipped = f"precision {precision}: {why_not}"
                    elif not fast and asked is None:
                        row.skipped = f"precision {precision}: {why_slow} (ask for it with --precision to run it anyway)"
                    else:
                        row = fit(row, device, roofs, options.cap, free)
                    rows.append(row)
    return rows


def _one_call_s(problem: Problem, pass_name: str, precision: str, roofs: Roofs) -> float:
    rate = roofs.flops.get(precision) or roofs.flops["fp32"]
    work = problems.flops(problem, pass_name), problems.bytes_moved(problem, pass_name, ELEMENT_BYTES[precision])
    if problem.replay:     # counted from the call itself, whatever the file that carried it claims
        work = tuple(map(max, work, meta_cost(problem.params["call"])))
    return max(work[0] / rate, work[1] / roofs.bandwidth)


def fit(row: Planned, device: torch.device, roofs: Roofs, cap_s: float, free: int) -> Planned:
    """The row's estimate, shortened (RNN) or skipped where it would outrun the cap or the memory."""
    problem, element = row.problem, ELEMENT_BYTES[row.precision]
    need = problems.memory_bytes(problem, row.pass_name, element)
    if need > MEMORY_SHARE * free:
        row.skipped = (f"needs about {need / 2**30:.1f} GiB for its operands, more than half the "
                       f"{free / 2**30:.1f} GiB free on {device}")
        return row
    one = _one_call_s(problem, row.pass_name, row.precision, roofs)
    if one * CALLS > cap_s and problem.suite == "rnn":
        steps = problem.ran["timesteps"]
        fitted = max(1, int(steps * cap_s / (one * CALLS)))
        if fitted < steps:
            problem = dataclasses.replace(problem, run_params={**(problem.run_params or {}), "timesteps": fitted})
            row = dataclasses.replace(row, problem=problem)
            one = _one_call_s(problem, row.pass_name, row.precision, roofs)
    if one * CALLS > cap_s:
        row.skipped = (f"one call would take about {one:.1f} s at this machine's roof: over a fifth of the "
                       f"per-kernel cap of {cap_s:g} s (--cap)")
    row.estimate_s = one
    return row


def free_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return int(psutil.virtual_memory().available)


def base_row(planned: Planned) -> dict[str, Any]:
    problem = planned.problem
    row = {"suite": problem.suite, "set": problem.set, "params": dict(problem.params), "pass": planned.pass_name,
           "precision": planned.precision}
    if problem.run_params:
        row["timesteps_run"] = problem.ran["timesteps"]
    return row


# What a library says when a device cannot run an op or dtype at all (or has not the memory for it):
# the only RuntimeErrors a row records as skipped. Any other error is a bug and stops the command.
UNSUPPORTED = ("not implemented for", "does not support", "not supported", "unsupported", "no kernel image",
               "out of memory", "could not run")


def unsupported(err: BaseException) -> bool:
    """Whether ``err`` says the device cannot run the op here, rather than that the call was wrong."""
    if isinstance(err, (NotImplementedError, torch.OutOfMemoryError)):
        return True
    text = str(err).lower()
    return any(phrase in text for phrase in UNSUPPORTED)


def cannot_run(err: BaseException) -> str:
    """A row's ``skipped`` reason for a library's refusal; any other error is re-raised (a shape or code bug:
    not a property of this device, never a quiet skip)."""
    if not unsupported(err):
        raise err
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return f"torch could not run it here: {first[:200]}"


def measure_row(planned: Planned, device: torch.device, roofs: Roofs, max_s: float) -> dict[str, Any]:
    """Time one planned row; any error of the library becomes the row's ``skipped`` reason."""
    row = base_row(planned)
    problem, precision = planned.problem, planned.precision
    try:
        fn = statement(problem, planned.pass_name, precision, device)
        timing = time_call(fn, device, max_s)
    except TooSlow as err:
        return {**row, "skipped": str(err)}
    except (RuntimeError, NotImplementedError) as err:
        return {**row, "skipped": cannot_run(err)}
    except ValueError as err:      # a recorded call this PyTorch will not make again
        return {**row, "skipped": f"not replayed: {err}"}
    flops = problems.flops(problem, planned.pass_name)
    moved = problems.bytes_moved(problem, planned.pass_name, ELEMENT_BYTES[precision])
    achieved = flops / timing.median_s
    row.update(median_s=timing.median_s, iqr_s=timing.iqr_s, repeats=timing.repeats, calls=timing.calls,
               flops=flops, bytes=moved,
               gflops=achieved / 1e9, gbps=moved / timing.median_s / 1e9,
               intensity=flops / moved if moved else None, fraction_of_roof=None,   # set by Document.add
               fraction_of_bandwidth=moved / timing.median_s / roofs.bandwidth if roofs.bandwidth else None)
    return row


def keep_earlier(path: Path) -> Path | None:
    """An earlier ``kernels.json`` where this one will be written, renamed beside it (``kernels-1.json``, …):
    nothing measured before is overwritten. Returns the new name, or None where there was none."""
    if not path.is_file() or path.is_symlink():
        return None
    table = path.with_suffix(".csv")     # its table goes aside with it: the new one is written at the end
    for n in range(1, 10_000):
        kept = path.with_name(f"{path.stem}-{n}{path.suffix}")
        if not any(os.path.lexists(p) for p in (kept, kept.with_suffix(".csv"))):
            path.rename(kept)
            if table.is_file() and not table.is_symlink():
                table.rename(kept.with_suffix(".csv"))
            return kept
    raise DawnbenchError(f"{path.parent}: ten thousand earlier kernels.json files kept here; write to another --out.")


class Document:
    """``kernels.json`` as it grows: rewritten whole after every row (an earlier one in its folder kept aside)."""

    def __init__(self, options: KernelOptions, device: torch.device, roofs: Roofs):
        self.out = output_dir(options.out)
        self.kept = keep_earlier(self.out / "kernels.json")
        self.roofs = copy.deepcopy(roofs)      # raised by this document's rows, not the process's cached roofs
        self.doc: dict[str, Any] = {
            "kind": "dawnbench-kernels", "version": 1, "set": options.set_name, "quick": options.quick,
            "suites": list(options.suites), "cap_s": options.cap, "rows": [], "resources": {},
            **environment.provenance(device), "roofs": self.roofs.to_dict(),
            "interrupted": False}

    @property
    def path(self) -> Path:
        return self.out / "kernels.json"

    def add(self, row: dict[str, Any]) -> None:
        """A measured row; where it beats the roof, the roof rises to it and every row's fraction follows."""
        precision, roof = row.get("precision"), self.roofs.flops.get(row.get("precision"))
        kind = "cpu" if str(self.roofs.device).startswith("cpu") else "gpu"
        if row.get("median_s") and row.get("flops") and row["flops"] / row["median_s"] > bounds.DEVICE_FLOP_RATE[kind]:
            rate = row["flops"] / row["median_s"]    # no roof rises past physics: the timing missed the work
            row = {k: v for k, v in row.items() if k not in TIMED}
            row["skipped"] = (f"timed at {rate:.3g} FLOP/s, past what any {kind} computes "
                              f"({bounds.DEVICE_FLOP_RATE[kind]:g}): the call did not do the problem's work")
        elif roof and row.get("median_s") and row.get("flops"):
            achieved = row["flops"] / row["median_s"]
            if achieved > roof:
                params = row["params"]
                what = f"{params['op']} of {params.get('entry')}" if "call" in params else str(params)
                self.roofs.raise_to(precision, achieved, f"{row['suite']} {row['pass']} {what}")
                self.doc["roofs"] = self.roofs.to_dict()
        self.doc["rows"].append(row)
        for each in self.doc["rows"]:
            if each.get("precision") == precision and each.get("median_s") and each.get("flops") and roof:
                each["fraction_of_roof"] = each["flops"] / each["median_s"] / self.roofs.flops[precision]
        self.write()

    def write(self) -> None:
        documents.kernels(json.loads(dumps(self.doc)), self.path)   # the door its readers use, before it is written
        atomic_write_json(self.path, self.doc, indent=1)

    def finish(self) -> dict[str, Any]:
        self.write()
        write_csv(self.doc["rows"], self.out / "kernels.csv")
        return self.doc


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    """One line per row, the problem's fields as columns (empty where a suite has no such field)."""
    import io

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({**{k: v for k, v in row.items() if k != "params"}, **row["params"]})
    atomic_write_text(path, buffer.getvalue())


def run_kernels(options: KernelOptions, progress: Callable[[int, int, float, dict[str, Any]], None] =
                lambda done, total, eta_s, row: None, announce: Callable[[float, int], None] =
                lambda estimate_s, rows: None) -> Document:
    """The single-process suites of ``options`` into ``options.out/kernels.json`` (all-reduce: see the
    module docstring). ``announce(estimated seconds, rows)`` before the first row; ``progress(done,
    total, seconds left, row)`` after each."""
    options.check()
    device = resolve_device(options.device)
    wanted = tuple(p for p in options.chosen_precisions() if runnable(p, device)[0])
    # a precision asked for that this device only emulates runs anyway (plan): its roof is the emulation's
    emulated = tuple(p for p in wanted if options.precisions is not None and not precision_rules.device_supports(p, device)[0])
    with watched("the roof probes and the kernels' timing") as load:
        roofs = measure_roofs(device, precisions=wanted, emulated=emulated)
        document = Document(options, device, roofs)
        rows = plan(options, device, roofs)
        left = sum(r.estimate_s * CALLS for r in rows if r.skipped is None)
        announce(left, len(rows))
        start = time.perf_counter()
        document.write()
        try:
            _measure(rows, document, options, device, roofs, start, left, progress)
        except BaseException as err:  # Ctrl-C, or a bug: every finished row is kept either way
            document.doc["interrupted"] = isinstance(err, KeyboardInterrupt)
            document.finish()
            raise
    # the roofs as the probes measured them (before any row raised them) against the machine's last
    document.doc["load"], document.doc["notes"] = load.summary, [*load.notes, *against_last(roofs.to_dict(), load)]
    return document


def _measure(rows: list[Planned], document: Document, options: KernelOptions, device: torch.device, roofs: Roofs,
             start: float, left: float, progress: Callable[[int, int, float, dict[str, Any]], None]) -> None:
    """Time the rows, suite by suite; ``max_seconds`` is shared out among the (suite, precision)
    groups in order — each gets an equal part of what is left — so no suite is starved by the ones
    before it."""
    groups = list(dict.fromkeys((r.problem.suite, r.precision) for r in rows))
    for suite in dict.fromkeys(suite for suite, _ in groups):
        with ResourceMonitor(document.out / f"resources-{suite}.tsv",
                             devices=[device.index or 0] if device.type == "cuda" else []) as monitor:
            for group in (g for g in groups if g[0] == suite):
                share_end = None
                if options.max_seconds is not None:
                    remaining = options.max_seconds - (time.perf_counter() - start)
                    share_end = time.perf_counter() + remaining / (len(groups) - groups.index(group))
                for planned in (r for r in rows if (r.problem.suite, r.precision) == group):
                    budget = options.cap if share_end is None else min(options.cap, share_end - time.perf_counter())
                    if planned.skipped:
                        row = {**base_row(planned), "skipped": planned.skipped}
                    elif budget <= 0:
                        row = {**base_row(planned), "skipped": f"this suite's share of --max-seconds "
                                                               f"{options.max_seconds:g} ran out before this row"}
                    else:
                        row = measure_row(planned, device, roofs, budget)
                        left -= planned.estimate_s * CALLS
                    document.add(row)
                    progress(len(document.doc["rows"]), len(rows), max(0.0, left), row)
        document.doc["resources"][suite] = monitor.summary()


def merge(document: Document, extra_rows: list[dict[str, Any]], resources: dict[str, Any] | None = None) -> None:
    """Rows measured elsewhere (all-reduce's workers) into the document."""
    document.doc["rows"].extend(extra_rows)
    if resources is not None:
        document.doc["resources"]["allreduce"] = resources
    document.write()


def compared(document: Document, targets: tuple[str, ...]) -> dict[str, Any]:
    """The comparison with published devices and other machines' results, stored in the document."""
    document.doc["comparison"] = [compare.against(document.doc, target) for target in targets]
    document.write()
    return document.doc
