"""How much of an application's step its kernel benchmarks explain, on the machine that
profiled it.

    doc = explain(Path("profiles/cifar10-cifar10-fast-fp32"), progress=print)

Each op whose call the profile recorded is timed here as its own replay (``step.py``: the same op, shapes,
strides and arguments — a channels-last convolution as channels-last, a layer norm as a layer norm); an op of a
profile made before calls were recorded by the DeepBench problems it runs (GEMM, convolution, RNN). Each is timed
by the kernels harness — the pass's statement (``kernels/passes.py``) timed as ``kernels`` times a row
(``kernels/timing.py``), each distinct problem once — and every other op is costed from its bytes at the machine's
measured bandwidth and its FLOPs at its roof, whichever is slower (the profile's own roofs). The
**kernel-predicted step** is their sum per step; the **explained share** is it over the
measured step (the window's wall time over its steps: the framework's time between ops
included), overall and per kernel class over that class's measured op time. The **gaps** are the
ops whose measured and predicted times differ the most, in seconds per step.

**Bounded before it starts.** A problem is judged before it is allocated, as ``kernels`` judges a
row (:func:`dawnbench.kernels.run.fit`): one whose operands would need more than half the free
memory, or whose calls at this machine's roofs would pass the per-problem cap (``KERNEL_CAP_S``), is
not timed — its ops are costed by the roofline, and each says why. The heaviest distinct problems
holding ``COVERED`` of the timed ops' time are timed, at most ``max_problems`` of them, those of the most
measured time first; the rest — the long tail of tiny calls, or past the limit — are costed by the roofline,
said as such.

The profile must come from this machine (its kernels are timed here): the roofs measured now are
compared with the profile's, and a difference over ``ROOF_TOLERANCE`` is noted.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from dawnbench import precision as precision_rules  # through the module: the answer measure_roofs gets
from dawnbench.errors import DawnbenchError
from dawnbench.harness.options import resolve_device
from dawnbench.io import atomic_write_json
from dawnbench.kernels.passes import statement
from dawnbench.kernels.run import Planned, cannot_run, fit, free_bytes
from dawnbench.kernels.timing import TooSlow, time_call
from dawnbench.prediction.step import Kernel, Step, StepOp, profile_folder, read_step
from dawnbench.profiling.load import against_last, watched
from dawnbench.profiling.roofs import Roofs, measure_roofs

KERNEL_CAP_S = 5.0         # seconds one kernel problem may be timed for
MAX_PROBLEMS = 200         # distinct problems timed at most (--max-problems): the heaviest first
ROOF_TOLERANCE = 0.3       # the roofs measured now against the profile's: further apart, a note
GAPS = 10
COVERED = 0.99             # the heaviest problems holding this share of the timed ops' time are timed; the rest not


def _kernel_s(kernel: Kernel, precision: str, device: torch.device, cache: dict[tuple, float | str],
              progress: Callable[[str], None], total: int, roofs: Roofs) -> float | str:
    """Seconds of one call of the kernel (its repeats included) here, or why it could not be timed."""
    key = _key(kernel, precision)
    if key not in cache:
        planned = fit(Planned(kernel.problem, kernel.pass_name, precision), device, roofs, KERNEL_CAP_S,
                      free_bytes(device))
        if planned.skipped:
            cache[key] = f"not timed: {planned.skipped}"
        else:
            progress(f"timing kernel problem {len(cache) + 1} of {total}: {kernel.problem.suite} {kernel.pass_name} "
                     + " ".join(f"{k}={v}" for k, v in kernel.problem.ran.items()))
            try:
                seconds = time_call(statement(planned.problem, kernel.pass_name, precision, device), device,
                                    KERNEL_CAP_S).median_s
                # an RNN shortened to fit the cap, timed over fewer steps: its time in proportion
                cache[key] = seconds * kernel.problem.ran.get("timesteps", 1) / planned.problem.ran.get("timesteps", 1)
            except TooSlow as err:
                cache[key] = str(err)
            except (RuntimeError, NotImplementedError) as err:
                cache[key] = cannot_run(err)     # a mapping or code bug is raised: never a quiet roofline
            except ValueError as err:            # a recorded call this PyTorch will not make again
                cache[key] = f"not replayed: {err}"
    found = cache[key]
    return found * kernel.repeat if isinstance(found, float) else found


def _timed(op: StepOp) -> list[Kernel]:
    """What explain times for an op: its own call where the profile recorded it, else its DeepBench problems."""
    return [op.replay] if op.replay is not None else op.kernels


def _key(kernel: Kernel, precision: str) -> tuple:
    return kernel.problem.suite, tuple(sorted(kernel.problem.ran.items())), kernel.pass_name, precision


def explain(path: Path, device_name: str = "auto", progress: Callable[[str], None] = lambda line: None,
            max_problems: int = MAX_PROBLEMS, write: bool = True) -> dict[str, Any]:
    """The step of ``path`` (a profile folder, or a run folder holding one) as its kernels explain it; ``write``:
    kept beside the profile as ``explain.json`` (its path in ``written``), as ``dawnbench explain`` does."""
    started = time.perf_counter()
    target = profile_folder(Path(path)) / "explain.json"
    if write and target.is_dir():     # refused before the timing, not after it
        raise DawnbenchError(f"{target}: a folder where explain writes its explain.json. Move it away and run again.")
    notes: list[str] = []
    details: list[str] = []      # one per line of ops.tsv read as unknown or left out: --verbose shows them
    step = read_step(Path(path), notes, details)
    device = resolve_device(device_name)
    if device.type != step.device:
        notes.append(f"the profile ran on {step.device}, its kernels are timed on {device}: the comparison is "
                     "across devices")
    roofs = step.roofs
    bandwidth, peaks = float(roofs["bandwidth_bytes_per_s"]), {p: float(v) for p, v in roofs["flops"].items()}
    with watched("the roof probes and the kernels' timing") as load:
        now = measure_roofs(device, precisions=tuple(peaks))
        explained = _explain_ops(step, device, peaks, bandwidth, now, max_problems, notes, progress)
    notes += [*load.notes, *against_last(now.to_dict(), load)]
    doc = {**explained, "roofs": roofs, "notes": notes, "details": details, "load": load.summary,
           "seconds": time.perf_counter() - started}
    if write:
        written = Path(doc["profile"]) / "explain.json"
        atomic_write_json(written, doc, indent=1)
        doc["written"] = str(written)
    return doc


def _explain_ops(step: Step, device: torch.device, peaks: dict[str, float], bandwidth: float, now: Roofs,
                 max_problems: int, notes: list[str], progress: Callable[[str], None]) -> dict[str, Any]:
    """Each op of ``step`` timed by its kernels here, or costed by the roofline; the step's explained share."""
    _against_the_profiles_roofs(step, peaks, now, notes)
    cache, chosen = _problems_to_time(step, peaks, max_problems, notes)
    total = min(len(chosen), max_problems)
    progress(f"timing {total} kernel problems of {sum(1 for op in step.ops if _timed(op))} ops here "
             f"(at most {KERNEL_CAP_S:g} s each)")
    measured, predicted = defaultdict(float), defaultdict(float)
    rows = []
    for op in step.ops:
        precision = op.precision if op.precision in peaks else "fp32"
        seconds, how, why = None, "roofline", op.unmapped
        if _timed(op):
            if not precision_rules.device_supports(precision, device)[0]:
                why = f"{precision} has no fast path here"
            else:
                parts = [_kernel_s(k, precision, device, cache, progress, total, now) for k in _timed(op)]
                failed = [p for p in parts if isinstance(p, str)]
                if failed:
                    why = failed[0]
                else:
                    seconds = sum(parts) * op.calls        # type: ignore[arg-type]
                    how = "own call" if op.replay is not None else "kernels"
        if seconds is None:
            seconds = max(op.flops / peaks.get(precision, peaks["fp32"]), op.bytes / bandwidth)
        measured[op.kernel_class] += op.seconds
        predicted[op.kernel_class] += seconds
        rows.append({"op": op.op, "shapes": op.shapes, "args": op.args, "class": op.kernel_class,
                     "calls": op.calls, "measured_s": op.seconds, "predicted_s": seconds, "from": how,
                     "kernels": [{"suite": k.problem.suite, "pass": k.pass_name, "params": k.problem.ran,
                                  "repeat": k.repeat} for k in op.kernels] if op.replay is None else [],
                     **({"why_roofline": why} if why else {})})
    total = sum(predicted.values())
    classes = [{"class": c, "measured_s": measured[c], "predicted_s": predicted[c],
                "explained_share": predicted[c] / measured[c] if measured[c] else None,
                "share_of_step": measured[c] / step.step_s}
               for c in sorted(measured, key=lambda c: -measured[c])]
    kernel_ops = [r for r in rows if r["from"] in ("kernels", "own call")]
    return {
        "profile": str(step.profile), "task": step.task, "entry": step.entry, "precision": step.precision,
        "device": str(device), "steps": step.steps,
        "measured_step_s": step.step_s, "measured_op_s": step.op_s,
        "predicted_step_s": total, "explained_share": total / step.step_s,
        "explained_share_of_op_time": total / step.op_s,
        "kernel_timed": {"ops": len(kernel_ops), "measured_s": sum(r["measured_s"] for r in kernel_ops),
                         "predicted_s": sum(r["predicted_s"] for r in kernel_ops),
                         "share_of_op_time": sum(r["measured_s"] for r in kernel_ops) / step.op_s},
        "classes": classes,
        "gaps": sorted(rows, key=lambda r: -abs(r["measured_s"] - r["predicted_s"]))[:GAPS],
        "ops": rows}


def _against_the_profiles_roofs(step: Step, peaks: dict[str, float], now: Roofs, notes: list[str]) -> None:
    """A note where the roofs measured now are not the profile's (another machine, or other load)."""
    raised = step.roofs.get("raised") or {}
    for precision, peak in peaks.items():
        rate = now.flops.get(precision)                  # measured now: the probes' best
        peak = float((raised.get(precision) or {}).get("probes_best") or peak)   # the profile's probes, not a raise
        if rate and abs(rate / peak - 1) > ROOF_TOLERANCE:
            notes.append(f"the {precision} roof measured now ({rate / 1e9:,.0f} GFLOP/s) is {rate / peak:.2f}× the "
                         f"profile's probes: the profile was made on another machine, or under other load")


def _problems_to_time(step: Step, peaks: dict[str, float], max_problems: int,
                      notes: list[str]) -> tuple[dict[tuple, float | str], list[tuple]]:
    """The distinct kernel problems worth timing, heaviest first — those holding ``COVERED`` of the timed ops' time,
    at most ``max_problems`` — and, for the rest, why each is costed by the roofline instead."""
    cache: dict[tuple, float | str] = {}
    weight: dict[tuple, float] = defaultdict(float)     # measured op time per distinct problem: the heaviest timed
    for op in step.ops:
        for k in _timed(op):
            weight[_key(k, op.precision if op.precision in peaks else "fp32")] += op.seconds
    chosen = sorted(weight, key=lambda k: -weight[k])
    # the heaviest problems that hold COVERED of the timed ops' time: the long tail of tiny calls is not worth the
    # seconds its timing takes (each problem is timed for at least timing.MIN_RUN_S)
    whole, running, enough = sum(weight.values()), 0.0, len(chosen)
    for i, key in enumerate(chosen):
        running += weight[key]
        if running >= COVERED * whole:
            enough = i + 1
            break
    tail = chosen[enough:]
    for key in tail:
        cache[key] = f"not timed: one of the {len(tail)} lightest problems, {1 - COVERED:.0%} of the op time together"
    if tail:
        notes.append(f"{len(tail)} of {len(chosen)} distinct kernel problems not timed (together under "
                     f"{1 - COVERED:.0%} of the op time): their ops are costed by the roofline")
    chosen = chosen[:enough]
    for key in chosen[max_problems:]:
        cache[key] = f"not timed: past the {max_problems} heaviest distinct problems (--max-problems)"
    if len(chosen) > max_problems:
        notes.append(f"{len(chosen) - max_problems} of {len(chosen) + len(tail)} distinct kernel problems not timed "
                     f"(past --max-problems {max_problems}): their ops are costed by the roofline")
    return cache, chosen
