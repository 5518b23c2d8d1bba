"""What the analysis commands read, checked once, here: the one door every reader goes through.

    doc, notes = documents.kernels(read_json(path, "kernel result"), path)   # rows that cannot be true left out
    doc, notes = documents.profile(read_json(path, "profile"), path)
    doc, notes = documents.run(read_json(path, "run record"), path)

``roofline``, ``similarity``, ``kernels --compare`` and ``report`` read ``kernels.json``, a profile's
``summary.json`` and run records only through these functions (``classes`` reads ``ops.tsv`` through
:func:`dawnbench.profiling.ops.read_ops`, which checks it the same way). Two kinds of problem:

* **The file is not what its name says** — a field of the wrong type (``roofs`` a string, a row's
  ``params`` a list, ``precision`` an object), a ``kind`` or ``version`` this dawnbench does not
  write, more rows than any run of the command makes — a :class:`~dawnbench.errors.FileError`
  naming the file and the field, one paragraph. JSON itself (truncated, NaN, Infinity, deep
  nesting) is refused before, by :func:`dawnbench.io.parse_json`, with its line.
* **A value that cannot be true** — a time that is not positive or is longer than any row runs
  (``MAX_SECONDS``), negative FLOPs or bytes, a rate above the roof the document itself measured
  by more than measurement noise (``ABOVE_ROOF``: 10 %), a share outside 0–1 — leaves that row
  or document out, with a note that says which and why; it is never drawn or counted silently.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from dawnbench.errors import FileError
from dawnbench.harness.record import check_record

KERNELS_VERSION = 1
MAX_ROWS = 100_000           # every problem × pass × precision of DeepBench's three sets is ~15,000
MAX_SECONDS = 1e7            # the largest --cap / --max-seconds `kernels` accepts: no row runs longer
MAX_FLOPS = 1e24             # FLOPs of one pass or step; DeepBench's largest problem is ~1e13
MAX_BYTES = 1e18
ABOVE_ROOF = 1.10            # a measured rate may pass its roof by noise, not by more
SUITES = ("gemm", "conv", "rnn", "allreduce")
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
PARAMS: dict[str, dict[str, type | tuple[type, ...]]] = {     # the fields each suite's params must hold
    "gemm": {"m": int, "n": int, "k": int, "a_transposed": bool, "b_transposed": bool},
    "conv": {k: int for k in ("w", "h", "c", "n", "k", "filter_w", "filter_h", "pad_w", "pad_h", "stride_w",
                              "stride_h")},
    "rnn": {"cell": str, "hidden": int, "batch": int, "timesteps": int},
    "allreduce": {"floats": int},
}


def _show(value: Any) -> str:
    return json.dumps(value)[:60]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _typed(path: Path, where: str, value: Any, types: type | tuple[type, ...], what: str) -> Any:
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in (
        types if isinstance(types, tuple) else (types,)))
    if not ok:
        raise FileError(path, f"field '{where}' must be {what}, not {_show(value)}. The file was edited or "
                              "damaged; write it again with the command that makes it.")
    return value


def _object(path: Path, where: str, value: Any) -> dict[str, Any]:
    return _typed(path, where, value, dict, "an object")


def _rates(path: Path, where: str, value: Any, unit: str) -> dict[str, float]:
    """A mapping precision → a positive finite number (a roof)."""
    for key, number in _object(path, where, value).items():
        if not _is_number(number) or number <= 0:
            raise FileError(path, f"field '{where}.{key}' must be a positive number of {unit}, not {_show(number)}. "
                                  "The file was edited or damaged; write it again with the command that makes it.")
    return value


def roofs(doc: dict[str, Any], path: Path, field: str = "roofs") -> dict[str, Any] | None:
    """A document's measured roofs, checked: FLOP/s per precision, bandwidth, ridge points."""
    if doc.get(field) is None:
        return None
    value = _object(path, field, doc[field])
    _rates(path, f"{field}.flops", value.get("flops", {}), "FLOP/s")
    if "bandwidth_bytes_per_s" in value and (not _is_number(value["bandwidth_bytes_per_s"])
                                             or value["bandwidth_bytes_per_s"] <= 0):
        raise FileError(path, f"field '{field}.bandwidth_bytes_per_s' must be a positive number of bytes/s, not "
                              f"{_show(value['bandwidth_bytes_per_s'])}. The file was edited or damaged.")
    if "ridge_flop_per_byte" in value:
        _rates(path, f"{field}.ridge_flop_per_byte", value["ridge_flop_per_byte"], "FLOP/byte")
    return value


def _resources(doc: dict[str, Any], path: Path, where: str) -> None:
    """A resources summary: an object whose statistics, where they are numbers, are not negative."""
    value = doc.get("resources")
    if value is None:
        return
    _object(path, where, value)


def kernels(doc: Any, path: Path) -> tuple[dict[str, Any], list[str]]:
    """``kernels.json``, checked; rows whose values cannot be true are left out, each with a note."""
    if not isinstance(doc, dict) or doc.get("kind") != "dawnbench-kernels":
        raise FileError(path, "not a kernels.json written by `dawnbench kernels` (it needs \"kind\": "
                              "\"dawnbench-kernels\").")
    version = doc.get("version", KERNELS_VERSION)
    if version != KERNELS_VERSION:
        raise FileError(path, f"version {_show(version)}: this dawnbench reads kernels.json version "
                              f"{KERNELS_VERSION}. Write it again with this version's `dawnbench kernels`.")
    rows = _typed(path, "rows", doc.get("rows"), list, "a list of rows")
    if len(rows) > MAX_ROWS:
        raise FileError(path, f"{len(rows):,} rows; `dawnbench kernels` writes at most about {MAX_ROWS:,} (every "
                              "problem, pass and precision of DeepBench's sets). This is not its output.")
    measured = roofs(doc, path)
    for suite, summary in _object(path, "resources", doc.get("resources") or {}).items():
        _object(path, f"resources.{suite}", summary)
    kept, notes = [], []
    for i, row in enumerate(rows):
        why = _kernel_row(row, i, path, measured)
        if why:
            notes.append(f"{path}: rows[{i}] left out: {why}")
        else:
            kept.append(row)
    return {**doc, "rows": kept}, notes


def _kernel_row(row: Any, i: int, path: Path, measured: dict[str, Any] | None) -> str | None:
    """Why the row cannot be used (None: it can); a row of the wrong shape is a FileError."""
    where = f"rows[{i}]"
    _object(path, where, row)
    suite = row.get("suite")
    if suite not in SUITES:
        raise FileError(path, f"field '{where}.suite' must be one of {', '.join(SUITES)}, not {_show(suite)}.")
    if row.get("precision") not in PRECISIONS:
        raise FileError(path, f"field '{where}.precision' must be one of {', '.join(PRECISIONS)}, not "
                              f"{_show(row.get('precision'))}.")
    _typed(path, f"{where}.pass", row.get("pass"), str, "a pass name (forward, backward, …)")
    params = _object(path, f"{where}.params", row.get("params"))
    for key, kind in PARAMS[suite].items():
        value = params.get(key)
        _typed(path, f"{where}.params.{key}", value, kind, {int: "an integer", bool: "true or false",
                                                          str: "a string"}[kind])
        if kind is int and value <= 0 and not key.startswith("pad"):
            return f"params.{key} is {value}: a problem's sizes are positive"
    if row.get("skipped"):
        return None if isinstance(row["skipped"], str) else f"skipped is {_show(row['skipped'])}, not a reason"
    for key in ("median_s", "flops", "bytes"):
        if key not in row:
            return f"no {key} and no reason it was skipped"
        if not _is_number(row[key]):
            raise FileError(path, f"field '{where}.{key}' must be a number, not {_show(row[key])}.")
    seconds, flops, moved = row["median_s"], row["flops"], row["bytes"]
    if not 0 < seconds <= MAX_SECONDS:
        return (f"median_s {seconds:g}: a kernel's time is positive and at most {MAX_SECONDS:g} s (the longest cap "
                "`kernels` accepts)")
    if not 0 <= flops <= MAX_FLOPS or not 0 <= moved <= MAX_BYTES:
        return f"flops {flops:g} / bytes {moved:g}: counts are not negative, nor beyond any problem's"
    roof = ((measured or {}).get("flops") or {}).get(row["precision"])
    if roof and flops / seconds > ABOVE_ROOF * roof:
        return (f"{flops / seconds / 1e9:,.4g} GFLOP/s is {flops / seconds / roof:,.3g}× the {row['precision']} roof "
                f"this file measured ({roof / 1e9:,.4g} GFLOP/s): physically impossible, so a time or a count in it "
                "is wrong")
    return None


def profile(doc: Any, path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """A profile's ``summary.json``, checked; ``None`` and a note when its step cannot be true."""
    if not isinstance(doc, dict) or not isinstance(doc.get("task"), str) or "window_s" not in doc:
        raise FileError(path, "not the summary.json of `dawnbench profile` (it needs task and window_s).")
    for key in ("entry", "precision", "variant"):
        if doc.get(key) is not None:
            _typed(path, key, doc[key], str, "a string")
    step = _object(path, "step", doc.get("step") or {})
    for key in ("time_s", "flops", "bytes", "intensity", "flops_per_s"):
        if step.get(key) is not None:
            _typed(path, f"step.{key}", step[key], (int, float), "a number")
    for key in ("window_s", "samples_per_s", "memory_bound_share", "fraction_of_peak", "steps", "batch_size"):
        if doc.get(key) is not None:
            _typed(path, key, doc[key], (int, float), "a number")
    measured = roofs(doc, path)
    _resources(doc, path, "resources")
    negative = [k for k in ("time_s", "flops", "bytes", "intensity", "flops_per_s") if (step.get(k) or 0) < 0]
    negative += [k for k in ("window_s", "samples_per_s") if (doc.get(k) or 0) < 0]
    if negative:
        return None, [f"{path}: left out: {', '.join(negative)} negative"]
    share = doc.get("memory_bound_share")
    if share is not None and not 0 <= share <= 1:
        return None, [f"{path}: left out: memory_bound_share {share:g} is not a share (0–1)"]
    rate = step.get("flops_per_s")
    ceiling = max(((measured or {}).get("flops") or {}).values(), default=None)
    if rate and ceiling and rate > ABOVE_ROOF * ceiling:
        return None, [f"{path}: left out: its step's {rate / 1e9:,.4g} GFLOP/s is {rate / ceiling:,.3g}× the highest "
                      f"roof the profile measured ({ceiling / 1e9:,.4g} GFLOP/s): physically impossible"]
    return doc, []


def run(doc: Any, path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """A run record (its fields' types: :func:`dawnbench.harness.record.check_record`), and the numbers the
    analyses read from it: none negative, a fraction of the peak never above 1 (beyond noise)."""
    check_record(doc, path)
    throughput = doc.get("throughput") or {}
    bad = [f"throughput.{k}" for k, v in throughput.items() if _is_number(v) and v < 0]
    for column, stats in (doc.get("resources") or {}).items():
        if isinstance(stats, dict):
            bad += [f"resources.{column}.{k}" for k, v in stats.items() if _is_number(v) and v < 0]
    if _is_number(doc.get("epochs_to_target")) and doc["epochs_to_target"] < 0:
        bad.append("epochs_to_target")
    if bad:
        return None, [f"{path}: left out: {', '.join(bad[:3])}{' …' if len(bad) > 3 else ''} negative"]
    fraction = throughput.get("fraction_of_peak")
    if _is_number(fraction) and fraction > ABOVE_ROOF:
        return None, [f"{path}: left out: fraction_of_peak {fraction:.3g}: above the roof it was measured "
                      "against, physically impossible"]
    return doc, []
