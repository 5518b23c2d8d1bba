"""FLOPs per training sample and the achieved rate of a run against its roof.

    flops = training_flops_per_sample(model, batch)   # forward + backward, per item
    figures = throughput(samples, timed_s, flops, device, "bf16")

Both run after the timed region. FLOPs are counted with ``torch.utils.flop_counter``
(matrix multiplies and convolutions: what dominates these networks; elementwise
work is not counted), so "fraction of peak" says how close the training loop comes
to this machine's dense rate at the run's precision (``roofs.py``).

The fused recurrent layers a CPU runs have a formula of their own (``opcalls/formulas.py``).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from dawnbench.opcalls import formulas  # noqa: F401 - registers the fused recurrent layers' formula with the counter
from dawnbench.profiling.roofs import measure_roofs


def training_flops_per_sample(model: nn.Module, batch: torch.Tensor) -> float:
    """FLOPs of one forward and backward pass per item of ``batch`` (model left untouched)."""
    probe = copy.deepcopy(model).train()  # a copy: BatchNorm statistics of the original stay as trained
    with FlopCounterMode(display=False) as counter:
        out = probe(batch)
        outputs = out if isinstance(out, (tuple, list)) else (out,)   # span models: start and end logits
        sum(o.float().sum() for o in outputs).backward()
    return counter.get_total_flops() / len(batch)


def throughput(samples: int, timed_s: float, flops_per_sample: float | None,
               device: torch.device, precision: str = "fp32", samples_to_target: int | None = None,
               tta_s: float | None = None, workers: int = 1) -> dict[str, Any]:
    """Samples/s over the timed region and, when FLOPs are known, FLOP/s against the roof
    of the precision the run's matrix work used.

    A fraction above 1 would mean the roof probes missed a faster kernel (or the FLOP
    count is wrong): that is reported as ``roof_error`` with no fraction, never as a result.

    The **compute floor** of a run that reached its target is the time the samples it
    trained on would take at the roof: samples to target × FLOPs per sample / roof. It
    holds on any machine (the roof is this machine's), so TTA / floor says how far a run
    is from its arithmetic limit, whatever the CPU or GPU.

    With ``workers`` > 1 the roof is this worker's roof (its GPU, or its share
    of the cores as threads) × the workers, against the samples/s of all of them.
    """
    rate = samples / timed_s if timed_s > 0 else None
    out: dict[str, Any] = {"samples_per_s": rate, "flops_per_sample": flops_per_sample, "precision": precision,
                           "achieved_gflops": None, "peak_gflops": None, "fraction_of_peak": None,
                           "roof_workers": workers}
    if flops_per_sample and rate:
        roof = measure_roofs(device, precisions=(precision,)).flops[precision] * workers
        achieved = flops_per_sample * rate
        out.update(achieved_gflops=achieved / 1e9, peak_gflops=roof / 1e9)
        if samples_to_target and tta_s:
            out["compute_floor_s"] = samples_to_target * flops_per_sample / roof
            out["tta_over_floor"] = tta_s / out["compute_floor_s"]
        if achieved <= roof:
            out["fraction_of_peak"] = achieved / roof
        else:
            out["roof_error"] = (f"achieved {achieved / 1e9:.1f} GFLOP/s exceeds the measured {precision} roof "
                                 f"{roof / 1e9:.1f} GFLOP/s: the roof probes missed a faster kernel or the FLOP "
                                 "count is wrong; please report it")
    return out
