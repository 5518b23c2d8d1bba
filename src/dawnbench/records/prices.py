"""Cost: a bundled, dated catalog of on-demand instance prices.

Training cost = TTA in hours × on-demand $/h. ``--cost-per-hour`` overrides the
catalog. Spot and preemptible prices are refused: they vary by the minute and make
costs incomparable. No known price gives a cost of ``None``, never 0.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from dawnbench import bounds, schema
from dawnbench.errors import DawnbenchError
from dawnbench.records.documents import Catalog

_SPOT = re.compile(r"spot|preemptible|low[-_ ]?priority", re.IGNORECASE)


@lru_cache(maxsize=1)
def catalog() -> dict[str, Any]:
    """The bundled catalog, checked against its declaration (a release with a damaged one fails its tests)."""
    file = resources.files(__package__).joinpath("catalog.json")
    return dict(schema.load(Catalog, json.loads(file.read_text()), str(file)))


def dated(rows: list[dict[str, Any]] | None = None) -> str:
    """The months ``rows`` (the whole catalog's by default) were read in, as a range: "2024-06 to 2026-08, each row
    its own"."""
    months = sorted({i["as_of"] for i in (catalog()["instances"] if rows is None else rows)} or {"—"})
    return months[0] if len(months) == 1 else f"{months[0]} to {months[-1]}, each row its own"


def instances() -> dict[str, dict[str, Any]]:
    return {i["name"]: i for i in catalog()["instances"]}


def filtered(accelerator: str | None) -> list[dict[str, Any]]:
    """Catalog rows whose accelerator contains ``accelerator`` (case-insensitive; "cpu": none)."""
    rows = catalog()["instances"]
    if accelerator is None:
        return rows
    if not accelerator.strip():
        raise DawnbenchError("--accelerator is empty: name one (H100, A100-80GB, L4, cpu…), or leave the option out "
                             "for every row.")
    if accelerator.lower() == "cpu":
        return [i for i in rows if not i["accelerator"]]
    chosen = [i for i in rows if accelerator.lower() in (i["accelerator"] or "").lower()]
    if not chosen:
        known = sorted({i["accelerator"] for i in rows if i["accelerator"]})
        raise DawnbenchError(f"--accelerator {accelerator[:60]}: no instance in the price catalog (dated "
                             f"{dated()}) has it. Accelerators in it: {', '.join(known)}; or cpu.")
    return chosen


def resolve(instance: str | None, cost_per_hour: float | None) -> tuple[str | None, float | None]:
    """(instance name, $/h) from the flags; raises a clear error for bad input."""
    if instance is not None and _SPOT.search(instance):
        raise DawnbenchError(
            f"--instance {instance}: spot, preemptible and low-priority prices are refused "
            "(SPEC §6: cost is on-demand $/h). Name the on-demand instance, or pass its "
            "on-demand price with --cost-per-hour."
        )
    if cost_per_hour is not None:
        bounds.check_option("--cost-per-hour", cost_per_hour)
        return instance, float(cost_per_hour)
    if instance is None:
        return None, None
    known = instances()
    if instance not in known:
        close = [n for n in known if n.lower().startswith(instance.lower().split(".")[0].split("-")[0])][:8]
        hint = f" Similar names: {', '.join(close)}." if close else ""
        raise DawnbenchError(
            f"--instance {instance}: not in the price catalog (dated {dated()}).{hint} "
            "See `dawnbench prices`, or pass --cost-per-hour."
        )
    return instance, float(known[instance]["usd_per_hour"])


def priced_as(instance: str | None, usd_per_hour: float | None) -> str | None:
    """The catalog instance a price was read from: ``instance`` where ``usd_per_hour`` is its catalog price, else
    None (a price given with --cost-per-hour is the user's own, whatever instance they named)."""
    row = instances().get(instance or "")
    return instance if row is not None and usd_per_hour == row["usd_per_hour"] else None


def training_cost(tta_s: float | None, usd_per_hour: float | None) -> float | None:
    if tta_s is None or usd_per_hour is None:
        return None
    return tta_s / 3600 * usd_per_hour
