"""NeuSight's whole-model measurements as the kernel model's in-step calibration, and as its test.

    cases()                          # every labelled case: model, mode, tokens, batch, GPU, measured ms
    counted(case)                    # its step counted by the census (fp32, as measured), cached per process
    in_step_shifts(model, left)      # each learned GPU's median log(measured / predicted) over its cases

A case is forward (and, in training, backward) as NeuSight measured it (``neusight/labels.csv``): eager, fp32, the
loss untimed, no optimizer step. A case the census cannot trace (a model whose forward reads tensor values) is
named by ``counted`` and left out of the shifts.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from dawnbench.errors import DawnbenchError
from dawnbench.records.datasheet import catalog, catalog_name


@cache
def cases() -> list[dict[str, Any]]:
    """NeuSight's labelled cases (``neusight/labels.csv``), each with its GPU's catalog name."""
    text = resources.files("dawnbench.prediction").joinpath("neusight/labels.csv").read_text(encoding="utf-8")
    out = []
    for row in csv.DictReader(io.StringIO(text)):
        out.append({"model": row["model"], "mode": "train" if row["mode"] == "train" else "inference",
                    "seqlen": int(row["seqlen"]), "batch": int(row["batch"]), "gpu": catalog_name(row["gpu"]),
                    "label": row["gpu"], "measured_ms": float(row["e2e_ms"])})
    return out


@cache
def counted(model: str, mode: str, seqlen: int, batch: int) -> tuple[tuple[dict[str, Any], ...] | None, str]:
    """The census rows of a labelled case (fp32), or None and why the census could not trace it."""
    from dawnbench.profiling.census import census, hf_config_model
    config = resources.files("dawnbench.prediction").joinpath(f"neusight/model_configs/{model}.json")
    with resources.as_file(config) as path:
        try:
            made = census(hf_config_model(path, mode), batch, seqlen, mode)
        except DawnbenchError as err:
            return None, str(err).split(". ")[0] + ")"
    return tuple(made["rows"]), ""


def measured_part(phases: dict[str, float], mode: str) -> float:
    """What NeuSight timed of a step's predicted phases: the forward, and the backward in training."""
    return phases.get("forward", 0.0) + (phases.get("backward", 0.0) if mode == "train" else 0.0)


def errors(model_for: Callable[[str], Any]) -> dict[str, list[float]]:
    """log(measured / predicted) of every case the census counts, by its GPU, each predicted by ``model_for(gpu)``
    (None: the GPU's cases are not predicted)."""
    from dawnbench.prediction.gpu_model import predict_ops
    out: dict[str, list[float]] = {}
    for case in cases():
        rows, _ = counted(case["model"], case["mode"], case["seqlen"], case["batch"])
        model = model_for(case["gpu"]) if rows is not None and case["gpu"] is not None else None
        if model is not None:
            predicted = measured_part(predict_ops(list(rows), catalog()[case["gpu"]], model)["phases"], case["mode"])
            out.setdefault(case["gpu"], []).append(math.log(case["measured_ms"] / 1e3 / predicted))
    return out


def in_step_shifts(model: Any, left: set[str]) -> dict[str, float]:
    """Each learned GPU with cases (none in ``left``): the median of log(measured / predicted) over its cases."""
    learned = set(model.learned_from) - left
    return {gpu: float(np.median(e)) for gpu, e in errors(lambda g: model if g in learned else None).items()}


LEVEL = 0.8                      # the intervals' level: the middle 80 % of the validation's errors


def stand_ins(gpu: str) -> tuple[str, ...]:
    """A GPU and what stands in for it in NeuSight's timings: the A100 40GB's convolutions were timed on its 80GB
    sibling — the same chip (``efficiency.chip``) — so leaving one out leaves out both."""
    from dawnbench.prediction.efficiency import chip
    from dawnbench.prediction.kernel_data import timings
    sheets = catalog()
    timed = {g for rows in timings().values() for g, _, _ in rows}
    return tuple(sorted(g for g in sheets if g == gpu or g in timed and chip(sheets[g]) == chip(sheets[gpu])))


def validation_errors(fit: Callable[..., Any]) -> dict[str, dict[str, list[float]]]:
    """log(measured / predicted) of every case, by its GPU: with the GPU left out of what ``fit`` learns
    (``unseen``), and with its kernels learned but not its whole models (``measured``)."""
    unseen = cache(lambda gpu: fit(stand_ins(gpu)))                  # one fit a GPU, not a case
    measured = cache(lambda gpu: fit((), unlabelled=(gpu,)))
    return {"unseen": errors(unseen), "measured": errors(measured)}


def interval(by_gpu: dict[str, list[float]]) -> tuple[float, float]:
    """The ``LEVEL`` interval of log(measured / predicted) for a new GPU's case, from the errors of the GPUs given:
    a GPU's cases err together (its efficiency is one figure), so the spread is the GPUs' means' and, around each,
    its cases' — mean ± t × √(σ²_between (1 + 1/n) + σ²_within), Student's t with n − 1 degrees of freedom for n
    GPUs (a prediction interval for one more group; quantiles of the pooled errors covered half the held-out
    cases, this four fifths: docs/results/datasheet.md)."""
    from scipy import stats
    means = np.array([np.mean(errors) for errors in by_gpu.values()])
    within = np.concatenate([np.array(errors) - np.mean(errors) for errors in by_gpu.values()])
    n = len(means)
    spread = math.sqrt(np.var(means, ddof=1) * (1 + 1 / n) + np.var(within, ddof=n))
    half = float(stats.t.ppf(1 - (1 - LEVEL) / 2, n - 1)) * spread
    return float(np.mean(means)) - half, float(np.mean(means)) + half
