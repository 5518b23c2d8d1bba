"""Every benchmark stores what it measured (SPEC §18): its figures beside the command line,
git commit (and whether the tree was dirty), date, hardware and software they came from.

    evidence.write("mnist_tta", {"summary": ...})   # -> docs/results/data/mnist_tta-<date>-<host cpu>.json

The files are small JSON; ``docs/results`` quotes figures from them by file name, and
``tests/test_evidence.py`` checks that each one parses and names a commit.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import torch

from dawnbench.environment import provenance
from dawnbench.io import atomic_write_json

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results" / "data"


def write(benchmark: str, figures: dict[str, Any], out: Path | None = None,
          device: torch.device = torch.device("cpu"), measured: dict[str, Any] | None = None) -> Path:
    """Store ``figures`` with their provenance; returns the file written (and prints its name).

    ``measured``: figures derived here from another evidence file's measurements (a comparison redone
    with corrected code, say) keep that file's ``hardware`` and ``software`` — where they were measured —
    and name it in ``derived_from``; this machine is ``derived_on``."""
    doc = {"benchmark": benchmark, **provenance(device, Path(__file__)), "figures": figures}
    if measured is not None:
        doc.update(derived_from=measured["file"], derived_on=doc["hardware"], hardware=measured["hardware"],
                   software=measured["software"])
    if out is None:
        cpu = re.sub(r"[^a-z0-9]+", "-", doc["hardware"]["accelerator"] or doc["hardware"]["cpu"], flags=re.I)
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M")
        out = RESULTS / f"{benchmark}-{stamp}-{cpu.strip('-').lower()[:40]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out, doc)
    print(f"evidence: {out}")
    return out
