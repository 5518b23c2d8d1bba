"""What every benchmark script shares: its flags, running ``dawnbench`` as a user does, timing a loop,
and storing its figures as evidence (SPEC §18) — the command line, git commit (and whether the code was
dirty: tracked files changed outside docs/, where benchmarks write their own figures), date, hardware and
software beside them. A page cites only evidence of a clean commit (tests/test_project.py).

    args = bench.parser(__doc__, replot=True).parse_args()          # --no-evidence, --replot EVIDENCE
    out = bench.dawnbench("kernels", "--quick", "--json").stdout      # a fresh process; a failure ends the script
    rate = bench.rate(lambda: step(batch), items=len(batch), device=device)   # median and spread of items/s
    bench.store(args, "mnist_tta", {"summary": ...})                 # -> docs/results/data/mnist_tta-<date>-<cpu>.json

The files are small JSON; ``docs/results`` quotes figures from them by file name (``pages.py`` renders
the pages from them), and ``tests/test_project.py`` checks that each one parses and names a commit.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dawnbench.environment import provenance
from dawnbench.io import atomic_write_json
from dawnbench.precision import device_supports

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results" / "data"
sys.path.insert(0, str(ROOT / "tests"))   # the suite's own helpers (its Slurm cluster, its table of bad inputs)


def parser(doc: str | None, replot: bool = False) -> argparse.ArgumentParser:
    """The script's argument parser (its docstring's first line as description), with ``--no-evidence`` and,
    for a script that draws a figure, ``--replot EVIDENCE`` (draw again from a stored file, measure nothing)."""
    made = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    made.add_argument("--no-evidence", action="store_true", help="print the figures, store nothing")
    if replot:
        made.add_argument("--replot", type=Path, metavar="EVIDENCE",
                          help="draw the figures again from a stored evidence file; measure nothing")
    return made


def stored(path: Path) -> dict[str, Any]:
    """A stored evidence file (``--replot``)."""
    return json.loads(Path(path).read_text())


def dawnbench(*args: str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,), timeout: float | None = None,
              check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess:
    """``python -m dawnbench ARGS`` in a fresh process, as a user runs it, with ``env`` added to this one's
    environment. An exit code outside ``ok`` ends the benchmark with the command's last words (``check=False``:
    returned as it is)."""
    return python("-m", "dawnbench", *args, env=env, ok=ok, timeout=timeout, check=check, quiet=quiet)


def python(*args: str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,), timeout: float | None = None,
           check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess:
    """``python ARGS`` (a module of the project: ``-m dawnbench.data.squad.generate …``) in a fresh process."""
    if not quiet:
        print("$ python " + " ".join(map(str, args)), flush=True)
    proc = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    if check and proc.returncode not in ok:
        raise SystemExit(f"python {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc


def rate(fn: Callable[[], Any], items: int, device: torch.device, min_run_time: float = 2.0) -> dict[str, float]:
    """Items per second of ``fn`` (which handles ``items`` items) as ``torch.utils.benchmark`` times it: blocks of
    calls, synchronised with the device, for at least ``min_run_time``; the median and the spread (IQR) over the
    blocks, and how many there were."""
    from torch.utils import benchmark

    fn()                                       # autotuning, compilation, a first call's set-up
    measured = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()
                               ).blocked_autorange(min_run_time=min_run_time)
    q1, q3 = np.percentile(measured.times, [25, 75])      # seconds per call, over the blocks
    return {"per_s": items / measured.median, "per_s_low": items / q3, "per_s_high": items / q1,
            "blocks": len(measured.times), "device": str(device)}


def cpu_precisions() -> tuple[str, ...]:
    """What this CPU times natively: fp32, and bf16 where it has a bf16 fast path (an emulated bf16 time is the
    emulation's, not a kernel anyone would use)."""
    return ("fp32", "bf16") if device_supports("bf16", torch.device("cpu"))[0] else ("fp32",)


def code_changed(tree_dirty: bool | None) -> bool | None:
    """Whether the code that measured had changes: tracked files outside docs/ — where benchmarks write their own
    figures (docs/img/…) before their evidence, which must not make a clean commit's measurement look dirty.
    None where git could not tell (``tree_dirty`` None: no checkout)."""
    if tree_dirty is None:
        return None
    proc = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--", ".",
                           ":(exclude)docs"], capture_output=True, text=True, timeout=10)
    return bool(proc.stdout.strip()) if proc.returncode == 0 else None


def write(benchmark: str, figures: dict[str, Any], out: Path | None = None, device: torch.device | None = None,
          measured: dict[str, Any] | None = None) -> Path:
    """Store ``figures`` with their provenance; returns the file written (and prints its name).

    ``measured``: figures derived here from another evidence file's measurements (a comparison redone
    with corrected code, say) keep that file's ``hardware`` and ``software`` — where they were measured —
    and name it in ``derived_from``; this machine is ``derived_on``."""
    doc = {"benchmark": benchmark, **provenance(device or torch.device("cpu")), "figures": figures}
    doc["dirty"] = code_changed(doc["dirty"])
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


def rewriter(args: argparse.Namespace, benchmark: str, figures: dict[str, Any], **kwargs: Any) -> Callable[[], None]:
    """A function that stores ``figures`` (as :func:`store`) into one file, again at each call: a script calls it
    after each part it measured, so a run stopped by a time limit keeps what it had."""
    written: list[Path] = []

    def again() -> None:
        if not getattr(args, "no_evidence", False):
            written[:] = [write(benchmark, figures, out=written[0] if written else None, **kwargs)]
    return again


def run_row(result: Any) -> dict[str, Any]:
    """One run of ``run_many`` as evidence stores it: what the table of runs shows, and where its time went."""
    return {"seed": result.seed, "status": result.status, "tta_s": result.time_to_accuracy_s,
            "epochs_to_target": result.epochs_to_target, "init_s": result.init_s, "eval_s": result.eval_s,
            "evals": len(result.evals), "last_value": result.evals[-1].value if result.evals else None,
            "batch_size": result.hparams.get("batch_size"), "compile_s": result.compile_s,
            "precision": result.precision, "throughput": result.throughput, "resources": result.resources}

def store(args: argparse.Namespace, benchmark: str, figures: dict[str, Any], **kwargs: Any) -> Path | None:
    """:func:`write`, unless the script was run with ``--no-evidence``."""
    if getattr(args, "no_evidence", False):
        print("--no-evidence: nothing stored")
        return None
    return write(benchmark, figures, **kwargs)
