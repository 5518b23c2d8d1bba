"""This machine's kernel times against DeepBench's published devices, or another machine's ``kernels.json``.

    compare.against(doc, "V100")            # {"against": "V100", "rows": [...], "groups": [...], "left_out": [...]}
    compare.against(doc, "other/kernels.json")

Per problem and pass the **time ratio** = this machine's median / the other's time (below 1:
this machine is faster), and per suite **and precision** — never pooled over precisions — the
geometric mean of the ratios and how many problems were compared. Times, never the sheets'
TFLOP/s (their convolution column follows no single formula). Published times exist for the
training set only, and are checked first (:mod:`~dawnbench.records.published`): a published row
that disagrees with itself or implies more than its device's physical peak is left out of every
mean, listed under ``left_out`` with its reason, and counted in its group's ``left_out``; another
machine's file is read through :mod:`dawnbench.records.documents`, and its rows that cannot be
true (a time not positive, a rate above its own roof) are listed under ``left_out`` the same way.

Precisions: fp32 and tf32 rows are compared with the published fp32 rows, bf16 and fp16 with the
published "fp16-mixed" rows (each group names the published precision it met). An RNN backward
is DeepBench's backward wrt inputs plus backward wrt parameters (one autograd pass here). An RNN
row run with fewer timesteps than its problem (``--quick``, or the per-kernel cap) is compared
with the published time scaled by the timesteps it ran — a recurrent layer's time is linear in
its timesteps — and is marked ``scaled``. All-reduce is compared at the same size and rank count,
with the fastest published algorithm that passed the checks (the row's note names it).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.io import read_json
from dawnbench.records import documents
from dawnbench.records.published import DEVICES, PUBLISHED_PRECISION, problem_key, sheet


def check_target(target: str, out: Path | None = None) -> None:
    """A published device's name, or a readable kernels.json that is not the one this command writes to
    ``out`` (one paragraph if neither)."""
    if target in DEVICES:
        return
    if not target.strip():
        raise DawnbenchError(f"--compare {target!r}: empty. Name a published device ({', '.join(DEVICES)}) or the "
                             "kernels.json another machine wrote; leave --compare out to compare with every device.")
    path = Path(target)
    if not path.exists():
        raise DawnbenchError(f"--compare {target}: neither a published device ({', '.join(DEVICES)}) nor a file. "
                             "Name a device, or the kernels.json another machine wrote.")
    file = path / "kernels.json" if path.is_dir() else path
    if out is not None and file.resolve() == (out / "kernels.json").resolve():
        raise DawnbenchError(f"--compare {target}: that is the kernels.json this command writes (--out {out}): it "
                             "would be overwritten before the comparison, and the rows compared with themselves. Copy "
                             "it elsewhere and compare with the copy, or write to another --out.")
    other_document(path)


def other_document(path: Path) -> tuple[dict[str, Any], list[str]]:
    """Another machine's kernels.json, checked (:mod:`dawnbench.records.documents`): the document with the
    rows that can be compared, and a note for each row left out."""
    file = path / "kernels.json" if path.is_dir() else path
    try:
        return documents.kernels(read_json(file, "kernel result"), file)
    except DawnbenchError as err:
        raise DawnbenchError(f"--compare {path}: {err}") from None


def _theirs(target: str, doc: dict[str, Any] | None, row: dict[str, Any]) -> tuple[float | None, str | None]:
    """The other side's seconds for this row (None: nothing to compare), and a note on how it was matched
    or why it was not (a published row left out by the checks)."""
    if doc is None:
        precision = PUBLISHED_PRECISION[row["precision"]]
        checked = sheet(target)
        key = (row["suite"], row["pass"], precision, problem_key(row))
        entry = checked.times.get(key)
        if entry is None:
            why = checked.rejected.get(key)
            return None, f"the published row was left out: {why}" if why else None
        notes = [f"published {precision}" if precision != row["precision"] else None,
                 f"algorithm {entry.algorithm}" if entry.algorithm else None]
        return entry.seconds, ", ".join(n for n in notes if n) or None
    for other in doc["rows"]:     # checked: a measured row's median_s is a positive number
        if (other.get("suite"), other.get("pass"), other.get("precision"), other.get("set")) == (
                row["suite"], row["pass"], row["precision"], row.get("set")) and other.get("params") == row["params"] \
                and not other.get("skipped") and other.get("timesteps_run") == row.get("timesteps_run") \
                and other.get("world_size") == row.get("world_size"):
            return float(other["median_s"]), None
    return None, None


def against(doc: dict[str, Any], target: str) -> dict[str, Any]:
    """The comparison of ``doc``'s measured rows with ``target`` (a device name, or a kernels.json path)."""
    other, other_notes = (None, []) if target in DEVICES else other_document(Path(target))
    hardware = (other or {}).get("hardware", {})
    name = target if other is None else f"{target} ({hardware.get('accelerator') or hardware.get('cpu')})"
    compared, refused = [], []
    for row in doc["rows"]:
        if not isinstance(row.get("median_s"), (int, float)) or row["median_s"] <= 0:
            continue
        seconds, note = _theirs(target, other, row)
        if seconds is None:
            if note:
                refused.append(row)
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
    groups = []
    for suite, precision in dict.fromkeys((r["suite"], r["precision"]) for r in [*compared, *refused]):
        mine = [r for r in compared if (r["suite"], r["precision"]) == (suite, precision)]
        groups.append({"suite": suite, "precision": precision,
                       "against_precision": PUBLISHED_PRECISION[precision] if other is None else precision,
                       "geomean_time_ratio": statistics.geometric_mean([r["time_ratio"] for r in mine]) if mine else None,
                       "compared": len({str(sorted(r["params"].items())) for r in mine}), "rows": len(mine),
                       "left_out": sum((r["suite"], r["precision"]) == (suite, precision) for r in refused)})
    out = {"against": name, "published": other is None, "rows": compared, "groups": groups,
           "left_out": sheet(target).left_out if other is None else [{"reason": note} for note in other_notes]}
    return out


def group(comparison: dict[str, Any], suite: str, precision: str) -> dict[str, Any] | None:
    """The (suite, precision) group of a comparison, if it has one."""
    return next((g for g in comparison.get("groups", []) if (g["suite"], g["precision"]) == (suite, precision)), None)
