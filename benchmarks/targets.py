"""Every benchmark's target and moonshot, declared once (``targets.json`` beside this file), and the one rule
that judges a figure against one (issue 69).

    import targets
    targets.get("harness_overhead.pair_ratio").text              # "≤ 1.02", as the pages show the bound
    targets.verdict("harness_overhead.pair_ratio", 0.96, 0.90, 1.12)   # "not resolved": the spread reaches past 1.02
    figures.update(targets.judged("tracker_cost.share", max(shares)))   # what a benchmark stores beside its figure

The rule — met, missed, not resolved where a spread of repeated measurements reaches both sides of the bound, not
measured where the evidence lacks the figure — is written out once, in docs/rules.md ("Published figures"); it is
:func:`verdict`. The benchmarks store its verdict in their evidence (:func:`judged`); ``pages.py`` renders every
verdict on the pages from the stored figures by the same function.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

FILE = Path(__file__).with_name("targets.json")
COMPARES = ("<=", "<", ">=", ">", "within", "factor", "all", "true")
SYMBOL = {"<=": "≤", "<": "<", ">=": "≥", ">": ">"}
Figure = float | bool | None


@dataclass(frozen=True)
class Target:
    """One entry of ``targets.json``: its id, the benchmark that measures it, and the bound it sets."""

    id: str
    benchmark: str
    measure: str
    compare: str
    wording: str
    unit: str = ""
    bound: float | None = None
    centre: float | None = None      # within: the figure's distance from it is judged
    of: int | None = None            # a count out of so many: the figure is the share (successes / runs)
    moonshot: float | None = None    # the stretch bound, compared as the bound is
    short: str = ""                  # a condition (compare "true"), in a table's few words
    stretch: bool = False            # the entry is itself a moonshot

    def __post_init__(self) -> None:
        if self.compare not in COMPARES:
            raise ValueError(f"{self.id}: compare {self.compare!r} is none of {', '.join(COMPARES)}")
        if (self.bound is None) != (self.compare in ("all", "true")):
            raise ValueError(f"{self.id}: compare {self.compare!r} " + ("takes no bound" if self.bound is not None
                                                                       else "needs a bound"))
        if (self.centre is None) == (self.compare == "within") or self.centre not in (None, 0, 1):
            raise ValueError(f"{self.id}: a centre, 0 (an error either way) or 1 (a ratio), with compare within only")
        if self.compare == "true" and not self.short:
            raise ValueError(f"{self.id}: a condition needs its short wording")

    def limit(self, moonshot: bool = False) -> float:
        """The bound, or the moonshot's; the share a count out of ``of`` is, as the figure is."""
        bound = self.moonshot if moonshot else self.bound
        if bound is None:
            raise ValueError(f"{self.id} has no {'moonshot' if moonshot else 'bound'}")
        return bound / self.of if self.of else bound

    def holds(self, figure: float, moonshot: bool = False) -> bool:
        """Whether ``figure`` lies on the target's side of its bound (or of its moonshot)."""
        if self.compare == "true":
            return bool(figure)
        if self.compare == "all":
            return figure >= 1           # the share of the cases that pass
        bound = self.limit(moonshot)
        return {"<=": figure <= bound, "<": figure < bound, ">=": figure >= bound, ">": figure > bound,
                "within": abs(figure - (self.centre or 0)) <= bound,
                "factor": 1 / bound <= figure <= bound}[self.compare]

    def anchor(self) -> float:
        """A figure the target accepts wherever its bound lies: a spread holds an accepted figure when the point
        of it nearest this one is accepted (every target accepts an interval)."""
        return {"<=": -math.inf, "<": -math.inf, ">=": math.inf, ">": math.inf, "factor": 1.0}.get(
            self.compare, self.centre or 0.0)

    def number(self, value: float) -> str:
        """A bound as the pages show it, in its unit."""
        if self.unit == "fraction":
            return f"{round(100 * value, 9):g} %"          # 100 × 0.15 is 15.000000000000002 in floating point
        if self.unit == "s" and value >= 120 and value % 60 == 0:
            return f"{value / 60:g} min"
        if self.unit == "bytes" and value % 2**30 == 0:
            return f"{value / 2**30:g} GiB"
        return f"{value:,g}" + (f" {self.unit}" if self.unit not in ("", "ratio") else "")

    def shown(self, moonshot: bool = False) -> str:
        """The bound (or the moonshot) in a table's few words: "≤ 1.02", "within 5 %", "≥ 9 of 10 seeds"."""
        if self.compare == "true":
            return self.short
        if self.compare == "all":
            return "all"
        bound = self.moonshot if moonshot else self.bound
        if bound is None:
            raise ValueError(f"{self.id} has no {'moonshot' if moonshot else 'bound'}")
        if self.of:
            return f"{SYMBOL[self.compare]} {bound:g} of {self.of} {self.unit}"
        if self.compare == "within":
            return f"within {'±' if self.centre == 0 else ''}{self.number(bound)}"
        if self.compare == "factor":
            return f"within {bound:g}×"
        return f"{SYMBOL[self.compare]} {self.number(bound)}"

    @property
    def text(self) -> str:
        return self.shown()

    @property
    def moonshot_text(self) -> str:
        return self.shown(moonshot=True)


@cache
def all_targets() -> dict[str, Target]:
    """Every target of ``targets.json``, by id."""
    return {key: Target(id=key, **entry) for key, entry in json.loads(FILE.read_text())["targets"].items()}


def get(target_id: str) -> Target:
    try:
        return all_targets()[target_id]
    except KeyError:
        raise KeyError(f"no target {target_id!r} in {FILE.name}") from None


def verdict(target_id: str, value: Figure | Sequence[Figure], low: float | None = None, high: float | None = None,
            moonshot: bool = False) -> str:
    """The one rule (docs/rules.md): "met", "missed", "not resolved" or "not measured". ``value``: a figure or a list
    of them (each must meet the target); ``low``, ``high``: the spread of repeated measurements of the figure."""
    target = get(target_id)
    figures = list(value) if isinstance(value, (list, tuple)) else [value]
    if not figures or any(f is None or (isinstance(f, float) and math.isnan(f)) for f in figures):
        return "not measured"
    if low is not None and high is not None and target.compare not in ("all", "true"):
        low, high = sorted((low, high))
        accepted = target.holds(min(max(target.anchor(), low), high), moonshot)
        if accepted and not (target.holds(low, moonshot) and target.holds(high, moonshot)):
            return "not resolved"          # the spread holds figures on both sides of the bound
    return "met" if all(target.holds(f, moonshot) for f in figures) else "missed"


def judged(target_id: str, value: Figure | Sequence[Figure], low: float | None = None,
           high: float | None = None) -> dict[str, Any]:
    """What a benchmark stores beside a figure it judged: the target's id and bound, the verdict, and ``met``
    (true or false; null where the verdict is not resolved or the figure not measured)."""
    said = verdict(target_id, value, low, high)
    out: dict[str, Any] = {"target": target_id, "bound": get(target_id).text, "verdict": said,
                           "met": {"met": True, "missed": False}.get(said)}
    if get(target_id).moonshot is not None:
        out["moonshot"] = verdict(target_id, value, low, high, moonshot=True)
    return out
