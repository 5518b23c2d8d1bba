"""The model checked on data nobody here wrote: DeepBench's published times.

    doc = validate()          # every published device, both checks, per suite and device

* **Leave one out, within a device.** Each timed row of a device (GEMM, convolution and RNN; every
  pass and precision the sheet has) is predicted by that device's model fitted without it — its
  roofline time over the efficiency of its nearest other rows (``devices.py``).
* **Across devices, scaled by specs.** Each row of a device is predicted from every other device's
  published time of the same problem, pass and precision, times the ratio of the two devices'
  roofline times (their rated peaks and bandwidths) — what one would do with one card's results
  and another's datasheet.

The error of a prediction is ``predicted / published - 1``; the tables give, per suite and device,
how many rows, and the median and 90th percentile of the absolute error. Rows left out of a sheet
by its checks (``records/published.py``) are in neither.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from dawnbench.prediction.devices import SUITES, DeviceModel
from dawnbench.prediction.step import Kernel
from dawnbench.records.published import DEVICES


def errors_table(points: list[tuple[float, float]]) -> dict[str, Any] | None:
    """``rows``, ``median`` and ``p90`` of |predicted / published − 1| over (published, predicted) pairs."""
    errors = [abs(predicted / published - 1) for published, predicted in points]
    if not errors:
        return None
    return {"rows": len(errors), "median": statistics.median(errors), "p90": float(np.percentile(errors, 90))}


def leave_one_out(model: DeviceModel) -> dict[str, list[tuple[float, float]]]:
    """Per suite: (published, predicted without that row) for every row the model can predict."""
    out: dict[str, list[tuple[float, float]]] = {s: [] for s in SUITES}
    for row in model.rows:
        predicted, how = model.kernel_s(Kernel(row.problem, row.pass_name), row.precision, leave_out=row)
        if predicted is not None and how == "model":
            out[row.suite].append((row.seconds, predicted))
    return out


def across(target: DeviceModel, sources: list[DeviceModel]) -> dict[str, list[tuple[float, float]]]:
    """Per suite: (target's published, scaled from a source's published) for each source that has the row."""
    out: dict[str, list[tuple[float, float]]] = {s: [] for s in SUITES}
    for source in sources:
        times = {(r.suite, r.pass_name, r.precision, r.key): r for r in source.rows}
        for row in target.rows:
            other = times.get((row.suite, row.pass_name, row.precision, row.key))
            if other is None:
                continue
            here = target.roofline_s(row.problem, row.pass_name, row.precision)
            there = source.roofline_s(other.problem, other.pass_name, other.precision)
            if here and there:
                out[row.suite].append((row.seconds, other.seconds * here / there))
    return out


def validate(devices: tuple[str, ...] = DEVICES) -> dict[str, Any]:
    """Both checks for every device: per device and suite, the error tables and the points."""
    models = {name: DeviceModel.published(name) for name in devices}
    out: dict[str, Any] = {"devices": {}, "suites": list(SUITES)}
    for name, model in models.items():
        loo = leave_one_out(model)
        cross = across(model, [m for other, m in models.items() if other != name])
        out["devices"][name] = {
            "label": model.label, "rows": len(model.rows),
            "leave_one_out": {s: errors_table(loo[s]) for s in SUITES},
            "across_devices": {s: errors_table(cross[s]) for s in SUITES},
            "points": {s: loo[s] for s in SUITES}}
    for check in ("leave_one_out", "across_devices"):
        out[check] = {s: _pooled(out["devices"], check, s) for s in SUITES}
    return out


def _pooled(per_device: dict[str, Any], check: str, suite: str) -> dict[str, Any] | None:
    """The median over devices of each device's median error (every device weighs the same)."""
    medians = [d[check][suite]["median"] for d in per_device.values() if d[check][suite]]
    if not medians:
        return None
    return {"devices": len(medians), "median_of_medians": statistics.median(medians), "worst_median": max(medians)}
