"""This machine's kernel times against DeepBench's published devices, or another machine's ``kernels.json``.

    compare.against(doc, "V100")            # {"against": "V100", "rows": [...], "suites": {...}}
    compare.against(doc, "other/kernels.json")

Per problem and pass the **time ratio** = this machine's median / the other's time (below 1:
this machine is faster), and per suite the geometric mean of the ratios and how many problems
were compared. Times, never the sheets' TFLOP/s (their convolution column follows no single
formula). Published times exist for the training set only; a cell that is not a positive
number (empty, ``N/A*``, ``#DIV/0!``, 0) is "not published" and that problem is not compared.
Where a workbook leaves a convolution's ``filter_w``/``filter_h`` empty it gives the filter as
``r`` (height) and ``s`` (width), which are used instead.

Precisions: fp32 and tf32 rows are compared with the published fp32 rows (tf32 says so in the
row), bf16 and fp16 with the published "fp16-mixed" rows (fp16 inputs and multiply, fp32
accumulate: the one 16-bit precision DeepBench published). An RNN backward is DeepBench's
backward wrt inputs plus backward wrt parameters (one autograd pass here). An RNN row run with
fewer timesteps than its problem (``--quick``, or the per-kernel cap) is compared with the
published time scaled by the timesteps it ran — a recurrent layer's time is linear in its
timesteps — and is marked ``scaled``. All-reduce is compared at the same size and rank count.
"""

from __future__ import annotations

import csv
import io
import math
from functools import cache
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.io import read_json
from dawnbench.kernels.problems import data_text

DEVICES = ("V100", "P100", "TitanXp", "1080Ti", "M40", "T4", "KNL7250")
PUBLISHED_PRECISION = {"fp32": "fp32", "tf32": "fp32", "bf16": "fp16-mixed", "fp16": "fp16-mixed"}
_CONV_KEYS = ("w", "h", "c", "n", "k", "filter_w", "filter_h", "pad_w", "pad_h", "stride_w", "stride_h")


def check_target(target: str) -> None:
    """A published device's name, or a readable kernels.json (one paragraph if neither)."""
    if target in DEVICES:
        return
    path = Path(target)
    if not path.exists():
        raise DawnbenchError(f"--compare {target}: neither a published device ({', '.join(DEVICES)}) nor a file. "
                             "Name a device, or the kernels.json another machine wrote.")
    other_document(path)


def other_document(path: Path) -> dict[str, Any]:
    doc = read_json(path / "kernels.json" if path.is_dir() else path, "kernels")
    if not isinstance(doc, dict) or doc.get("kind") != "dawnbench-kernels" or not isinstance(doc.get("rows"), list):
        raise DawnbenchError(f"--compare {path}: not a kernels.json written by `dawnbench kernels` (it needs "
                             "\"kind\": \"dawnbench-kernels\" and a list of rows).")
    for i, row in enumerate(doc["rows"]):
        if not isinstance(row, dict) or not isinstance(row.get("params"), dict) or not isinstance(row.get("suite"), str):
            raise DawnbenchError(f"--compare {path}: rows[{i}] is not a kernel row (suite, params, pass, precision, "
                                 "median_s); the file was edited or damaged.")
    return doc


def _ms(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value / 1000 if math.isfinite(value) and value > 0 else None


@cache
def published(device: str) -> dict[tuple, float]:
    """(suite, pass, published precision, problem key) → seconds, for one device."""
    out: dict[tuple, float] = {}

    def rows(name: str) -> list[dict[str, str]]:
        return [r for r in csv.DictReader(io.StringIO(data_text(name))) if r["device"] == device]

    for r in rows("published_gemm.csv"):
        key = (int(r["m"]), int(r["n"]), int(r["k"]), r["a_transposed"] == "T", r["b_transposed"] == "T")
        _put(out, ("gemm", "forward", r["precision"], key), _ms(r["time_ms"]))
    for r in rows("published_conv.csv"):
        # Some workbooks leave filter_w/filter_h empty and give the filter as r (height) and s (width).
        r = {**r, "filter_w": r["filter_w"] or r["s"], "filter_h": r["filter_h"] or r["r"]}
        key = _ints(r, _CONV_KEYS)
        if key is None:
            continue
        for pass_name, column in (("forward", "fwd_ms"), ("backward_inputs", "bwd_inputs_ms"),
                                  ("backward_params", "bwd_params_ms")):
            _put(out, ("conv", pass_name, r["precision"], key), _ms(r[column]))
    for r in rows("published_rnn.csv"):
        key = (r["cell"], int(r["hidden"]), int(r["n"]), int(r["timesteps"]))
        _put(out, ("rnn", "forward", r["precision"], key), _ms(r["fwd_ms"]))
        inputs, params = _ms(r["bwd_inputs_ms"]), _ms(r["bwd_params_ms"])
        _put(out, ("rnn", "backward", r["precision"], key), inputs + params if inputs and params else _ms(r["bwd_ms"]))
    for r in rows("published_allreduce.csv"):
        _put(out, ("allreduce", "allreduce", r["precision"], (int(r["floats"]), int(r["ranks"]))), _ms(r["time_ms"]))
    return out


def _ints(row: dict[str, str], keys: tuple[str, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(int(row[k]) for k in keys)
    except (TypeError, ValueError):
        return None


def _put(out: dict, key: tuple, seconds: float | None) -> None:
    if seconds is not None:
        out[key] = seconds


def problem_key(row: dict[str, Any]) -> tuple:
    p = row["params"]
    if row["suite"] == "gemm":
        return (p["m"], p["n"], p["k"], bool(p["a_transposed"]), bool(p["b_transposed"]))
    if row["suite"] == "conv":
        return tuple(p[k] for k in _CONV_KEYS)
    if row["suite"] == "rnn":
        return (p["cell"], p["hidden"], p["batch"], p["timesteps"])
    return (p["floats"], row.get("world_size"))


def _theirs(target: str, doc: dict[str, Any] | None, row: dict[str, Any]) -> tuple[float | None, str | None]:
    """The other side's seconds for this row, and a note on how it was matched."""
    if doc is None:
        precision = PUBLISHED_PRECISION[row["precision"]]
        seconds = published(target).get((row["suite"], row["pass"], precision, problem_key(row)))
        note = f"published {precision}" if precision != row["precision"] else None
        return seconds, note
    for other in doc["rows"]:
        if (other.get("suite"), other.get("pass"), other.get("precision"), other.get("set")) == (
                row["suite"], row["pass"], row["precision"], row["set"]) and other.get("params") == row["params"] \
                and isinstance(other.get("median_s"), (int, float)) and other["median_s"] > 0 \
                and other.get("timesteps_run") == row.get("timesteps_run") \
                and other.get("world_size") == row.get("world_size"):
            return float(other["median_s"]), None
    return None, None


def against(doc: dict[str, Any], target: str) -> dict[str, Any]:
    """The comparison of ``doc``'s measured rows with ``target`` (a device name, or a kernels.json path)."""
    other = None if target in DEVICES else other_document(Path(target))
    name = target if other is None else f"{target} ({other.get('hardware', {}).get('accelerator') or other.get('hardware', {}).get('cpu')})"
    compared = []
    for row in doc["rows"]:
        if not isinstance(row.get("median_s"), (int, float)) or row["median_s"] <= 0:
            continue
        seconds, note = _theirs(target, other, row)
        if seconds is None:
            continue
        entry = {"suite": row["suite"], "pass": row["pass"], "precision": row["precision"], "params": row["params"],
                 "ours_s": row["median_s"], "theirs_s": seconds}
        if other is None and row.get("timesteps_run"):  # published for the problem's timesteps: scale to what ran
            entry["theirs_s"] = seconds * row["timesteps_run"] / row["params"]["timesteps"]
            entry["scaled"] = True
        if note:
            entry["note"] = note
        entry["time_ratio"] = entry["ours_s"] / entry["theirs_s"]
        compared.append(entry)
    suites = {}
    for suite in dict.fromkeys(r["suite"] for r in compared):
        ratios = [r["time_ratio"] for r in compared if r["suite"] == suite]
        problems = {(r["precision"], str(sorted(r["params"].items()))) for r in compared if r["suite"] == suite}
        suites[suite] = {"geomean_time_ratio": math.exp(sum(map(math.log, ratios)) / len(ratios)),
                         "compared": len(problems), "rows": len(ratios)}
    return {"against": name, "published": other is None, "rows": compared, "suites": suites}
