"""Kernels and applications on one roofline (the MLPerf characterisation's Figure 3; SPEC §19).

    doc = roofline(["kernels/", "profiles/", "runs/"])
    doc["points"]      # {label, kind, group, precision, intensity, flops_per_s}
    doc["roofs"]       # {flops: {precision: FLOP/s}, bandwidth: bytes/s}

Kernel points are the measured rows of a ``kernels.json`` (one per problem, pass and
precision), grouped by suite. Application points are whole training steps: each profile's
``step`` (FLOPs over the bytes its ops read and wrote, and its FLOP/s over the profiled
window). A run folder is an application point through the profile inside it
(``RUN_DIR/profile``, what ``dawnbench profile RUN_DIR`` writes); a run with no profile has no
intensity and is listed in ``notes`` instead. The roofs drawn are those of the first document
that carries them (kernel results first); documents whose roofs differ from them by more than
10 % are named in ``notes``, since their points sit under another ceiling.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dawnbench.analysis.workloads import collect, number
from dawnbench.errors import DawnbenchError
from dawnbench.io import atomic_write_json, output_dir, refuse_to_replace

DIFFERENT = 0.10


def _roofs(doc: dict[str, Any]) -> dict[str, Any] | None:
    roofs = doc.get("roofs") if isinstance(doc.get("roofs"), dict) else None
    flops = roofs.get("flops") if roofs else None
    bandwidth = number(roofs, "bandwidth_bytes_per_s") if roofs else None
    if not isinstance(flops, dict) or not bandwidth:
        return None
    values = {p: float(v) for p, v in flops.items() if isinstance(v, (int, float)) and v > 0}
    return {"flops": values, "bandwidth": bandwidth, "device": roofs.get("device")} if values else None


def roofline(paths: Sequence[str | Path], out: str | Path | None = None) -> dict[str, Any]:
    """Kernel rows and applications' steps under one machine's roofs; with ``out``, also ``out/roofline.json``."""
    found = collect(paths, per_problem=True)
    points, notes, roofs, from_ = [], list(found.notes), None, None
    for doc in sorted(found.docs, key=lambda d: d["_kind"] != "kernels"):
        mine = _roofs(doc)
        if mine and roofs is None:
            roofs, from_ = mine, doc["_config"]
        elif mine and roofs and any(abs(mine["flops"][p] / roofs["flops"][p] - 1) > DIFFERENT
                                    for p in set(mine["flops"]) & set(roofs["flops"])):
            notes.append(f"{doc['_config']}: measured under other roofs than {from_} (another machine or moment)")
        intensity, rate = number(doc, "step", "intensity"), number(doc, "step", "flops_per_s")
        if doc["_kind"] == "run":
            if not (Path(doc["_path"]).parent / "profile" / "summary.json").is_file():  # else its profile is a point
                notes.append(f"{doc['_config']}: a run without a profile has no intensity: not drawn "
                             "(`dawnbench profile RUN_DIR` adds it)")
            continue
        if not intensity or not rate:
            continue
        kernel = doc["_kind"] == "kernels"
        points.append({"label": doc["_config"].removeprefix("kernels/") if kernel else doc["_config"],
                       "kind": "kernel" if kernel else "application",
                       "group": doc["suite"] if kernel else str(doc.get("task")),
                       "precision": doc.get("precision") or "fp32", "intensity": intensity, "flops_per_s": rate})
    if roofs is None and found.docs:
        files = sorted({d["_path"] for d in found.docs if "_path" in d}) or [", ".join(map(str, paths))]
        # a run's roofs are its profile's: where that profile was left out, its reason is the fix
        fix = (f"Left out: {found.notes[0].removesuffix(' (left out)')} Or" if found.notes else "Profile again, or")
        raise DawnbenchError(f"{'; '.join(files[:3])}: no measured roofs in it (roofs.flops and "
                             f"roofs.bandwidth_bytes_per_s, both above 0): a roofline is drawn under them. {fix} "
                             "pass a kernels.json of this machine beside it (`dawnbench kernels`).")
    if roofs is None:
        raise found.none_found(", ".join(map(str, paths)))
    doc = {"roofs": roofs, "roofs_from": from_, "points": points, "notes": notes}
    if out is not None:      # roofline.json, naming the figure the command line draws beside it
        folder = output_dir(Path(out))
        doc["figure"] = str(folder / "roofline.png")
        refuse_to_replace(folder / "roofline.json", folder / "roofline.png")   # both, before either is written
        atomic_write_json(folder / "roofline.json", doc, indent=1)
    return doc
