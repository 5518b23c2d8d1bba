"""``dawnbench classes``: a profile's op time by kernel class (``records/kernel_classes.py``), one table or two
side by side (the MLPerf characterisation's Tables 7–8).

    doc = class_tables([profile_a, profile_b])
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.io import inside, read_json
from dawnbench.records.kernel_classes import classify
from dawnbench.records.ops import grouped_notes, read_ops


def _profile_dir(path: Path) -> Path:
    """The measured profile at ``path`` or in its ``profile/`` (a run folder's): never through a link, never a
    census (it counts a step without timing it, so it has no time to share out)."""
    for candidate in (path, inside(path, "profile")):      # a run's own profile/, never a link out of it
        if (candidate / "ops.tsv").is_file():
            summary = candidate / "summary.json"
            if summary.is_file() and not summary.is_symlink() and "census" in (read_json(summary, "profile") or {}):
                raise DawnbenchError(f"{candidate}: a census (`dawnbench profile --census`) counts a step without "
                                     "timing it, so it has no op time to share among classes. Pass a measured "
                                     "profile (`dawnbench profile TASK`).")
            return candidate
    raise DawnbenchError(f"{path}: no ops.tsv here or in {path / 'profile'}. Pass a folder `dawnbench profile` "
                         "wrote (or a run folder it profiled).")


def class_tables(paths: Sequence[str | Path]) -> dict[str, Any]:
    """The class table of each profile (one or two, for side by side), and a note for each row of theirs that could
    not be true and was left out."""
    if not 1 <= len(paths) <= 2:
        raise DawnbenchError(f"classes takes one or two profiles, not {len(paths)}: a table, or two side by side.")
    profiles, notes = [], []
    for path in map(Path, paths):
        folder = _profile_dir(path)
        profiles.append({"profile": str(folder), "classes": classify(read_ops(folder, notes))})
    return {"profiles": profiles, "notes": grouped_notes(notes)}    # each row left out, named
