"""The leaderboard: four rankings per task from DAWNBench submission files.

    from dawnbench.leaderboard import build_boards
    boards = build_boards("dawnbench-entries/", until=date(2018, 4, 20))   # third_party/ has them
    boards.to_json()   # the `dawnbench leaderboard --json` document

Values are computed from the files as SPEC §8 says: training time = ``hours`` of
the first TSV row whose metric reaches the threshold; training cost = that ×
``costPerHour``; inference latency = ``latency`` (ms); inference cost per 10,000
items = ``cost`` (USD per item) × 10,000. An entry with an error is left off every
board (its problems say why); one without a price is left off the cost board only.
Ranks start at 1, best (smallest) first; ties keep file-name order.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.records.submission import (
    BOARD_TASKS,
    ERROR,
    Problem,
    Submission,
    find_submissions,
    orphan_tsvs,
    read_submission,
)

BOARDS = ("training_time", "training_cost", "inference_latency", "inference_cost")
BOARD_TITLES = {"training_time": "Training time", "training_cost": "Training cost",
                "inference_latency": "Inference latency", "inference_cost": "Inference cost (per 10,000 items)"}


def display(board: str, value: float) -> str:
    """The text the board shows: h:mm:ss rounded up; costs to cents (two significant digits below 10 cents);
    latency in ms; $ per 10,000."""
    if board == "training_time":
        total = math.ceil(value - 2e-6)   # a TSV's hours (9 decimals: 3.6 µs) round a whole second up by up to 1.8 µs
        return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"
    if board == "training_cost":
        # cents, as DAWNBench showed them; below 10 cents up to two significant digits, so $0.0023 is not "$0.00"
        if value >= 0.1 or value == 0:
            return f"${value:,.2f}"
        whole, _, cents = f"{value:.{1 - math.floor(math.log10(value))}f}".partition(".")
        return f"${whole}.{cents[:2] + cents[2:].rstrip('0')}"
    if board == "inference_latency":
        return f"{value:.3f} ms"
    return f"${value:.4f}"


def _value(board: str, sub: Submission) -> float | None:
    f = sub.fields
    if board == "training_time":
        return sub.training_hours * 3600
    if board == "training_cost":
        price = f.get("costPerHour")
        return sub.training_hours * price if isinstance(price, (int, float)) and price > 0 else None
    if board == "inference_latency":
        return float(f["latency"])
    cost = f.get("cost")
    return cost * 10_000 if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0 else None


def _shown(text: str) -> str:
    """A submitted string as one line of text for a terminal or a page: control characters (a terminal's escape
    sequences, NUL) shown as spaces, never sent."""
    return "".join(c if c.isprintable() else " " for c in text)


def _extras(sub: Submission) -> dict[str, Any]:
    """What this project adds where known: runs, success fraction, CV, runs flagged as disturbed, a
    self-reported accuracy (an export's misc)."""
    misc = sub.fields.get("misc")
    facts = misc.get("dawnbench") if isinstance(misc, dict) else None
    if not isinstance(facts, dict):
        return {"runs": None, "success_fraction": None, "cov": None, "flagged": 0, "self_reported": False}
    flagged = facts.get("flagged")
    return {"runs": facts.get("runs"), "success_fraction": facts.get("success_fraction"),
            "cov": facts.get("tta_cov"), "flagged": len(flagged) if isinstance(flagged, list) else 0,
            "self_reported": facts.get("self_reported") is True}


@dataclass
class Boards:
    tasks: dict[str, dict[str, list[dict[str, Any]]]]
    problems: list[Problem]
    submissions: list[Submission] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "problems": [p.to_dict() for p in self.problems]}


def build_boards(folder: str | Path, until: dt.date | None = None) -> Boards:
    folder = Path(folder)
    if not folder.is_dir():
        raise DawnbenchError(f"{folder}: no such folder. Pass a folder laid out like "
                             "dawnbench-entries: <Task>/train/*.json+.tsv and <Task>/inference/*.json.")
    skipped: list[Problem] = []
    submissions = [read_submission(path, root) for path, root in find_submissions([folder], skipped)]
    if not submissions:
        raise DawnbenchError(f"{folder}: no submission JSON files found under it.")
    problems = skipped + [p for s in submissions for p in s.problems] + orphan_tsvs(folder)
    # a submission copied under another name is one result: ranked once (the first by name), the copy named
    seen: dict[tuple, Submission] = {}
    for s in sorted(submissions, key=lambda s: s.file):
        key = (s.task.key if s.task else None, s.kind, json.dumps(s.fields, sort_keys=True, default=str),
               json.dumps(s.rows, sort_keys=True))
        if key in seen and s.ok:
            s.problems.append(Problem(s.file, None, ERROR, f"the same submission as {seen[key].file} (its fields and "
                                      "its log, under another name): a result is ranked once"))
            problems.append(s.problems[-1])
        seen.setdefault(key, s)
    tasks: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for task in BOARD_TASKS.values():
        entries = [s for s in submissions if s.task is task and s.ok and (until is None or s.date <= until)]
        if not entries:
            continue
        tasks[task.key] = {}
        for board in BOARDS:
            kind = "train" if board.startswith("training") else "inference"
            scored = [(v, s) for s in entries if s.kind == kind for v in [_value(board, s)] if v is not None]
            scored.sort(key=lambda vs: (vs[0], vs[1].file))
            tasks[task.key][board] = [
                {"rank": i, "value": v, "display": display(board, v), "model": _shown(s.text("model")),
                 "author": _shown(s.text("author")), "hardware": _shown(s.text("hardware")),
                 "framework": _shown(s.text("framework")),
                 "date": s.date.isoformat(), "file": s.file, "source": s.text("codeURL") or None, **_extras(s)}
                for i, (v, s) in enumerate(scored, 1)]
    return Boards(tasks, problems, submissions)
