"""Hyperparameter sweeps: does a faster epoch give a faster result? (DAWNBench analysis §4)

    from dawnbench.experiments.sweep import run_sweep   # launches the runs
    sweep = run_sweep(RunOptions(task="mnist", runs=3, out_dir=Path("sweeps/bs")),
                      parse_grid(["batch_size=32,64,128,256"]))

Every configuration of the grid (the cartesian product of the ``--grid`` values)
runs ``options.runs`` seeds into ``out_dir/<key=value,...>/``, so ``dawnbench
analyze`` and ``dawnbench report`` read the same folders later. Per configuration:
epochs to target, training throughput (samples/s over the timed region), time per
epoch, TTA and success fraction, and two speedups against the first configuration
(the baseline): throughput speedup = samples/s ÷ baseline's; TTA speedup = baseline's
median TTA ÷ this one's. Where the first is > 1 and the second is not, a faster
epoch did not make a faster result.

Two grid keys are run options rather than hyperparameters:
``precision=fp32,bf16`` and ``compile=off,default`` (``off`` = not compiled), so the
mixed-precision and compiler speedups, throughput and TTA side by side, are one
command: ``--grid precision=fp32,bf16 --grid compile=off,default``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from dawnbench.errors import DawnbenchError


def parse_grid(items: list[str]) -> list[dict[str, Any]]:
    """``["batch_size=32,64", "lr=0.1"]`` → the list of configurations (cartesian product)."""
    axes: dict[str, list[Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key or not raw:
            raise DawnbenchError(f"--grid {item!r}: write it as KEY=V1,V2,..., e.g. --grid batch_size=32,64,128.")
        if key in axes:
            raise DawnbenchError(f"--grid {key} is given twice; put all its values in one --grid.")
        values = []
        for text in raw.split(","):
            try:
                values.append(json.loads(text))
            except json.JSONDecodeError:
                values.append(text)
        axes[key] = values
    if not axes:
        raise DawnbenchError("a sweep needs at least one --grid KEY=V1,V2,...")
    return [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]


def config_name(config: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in config.items())


def sweep_rows(names: list[str], summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Summaries plus the throughput and TTA speedups relative to the first configuration."""
    base = summaries[0]
    rows = []
    for name, s in zip(names, summaries):
        thr = (s["samples_per_s_mean"] / base["samples_per_s_mean"]
               if s["samples_per_s_mean"] and base["samples_per_s_mean"] else None)
        tta = (base["tta_median_s"] / s["tta_median_s"] if s["tta_median_s"] and base["tta_median_s"] else None)
        rows.append({"name": name, **s, "throughput_speedup": thr, "tta_speedup": tta})
    return rows
