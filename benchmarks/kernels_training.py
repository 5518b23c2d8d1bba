"""DeepBench's training set on this machine, as a user runs it, stored as evidence (SPEC §18, §19).

    python benchmarks/kernels_training.py [--precision fp32,bf16] [--cap 20] [--max-seconds 3600]
                                         # default: fp32, and bf16 where this CPU has a bf16 fast path
    python benchmarks/kernels_training.py --recompare EVIDENCE    # the stored rows against today's comparison

Runs ``dawnbench kernels all --set training`` in a fresh process (all-reduce on 2 gloo ranks),
compared with every published device, and stores its ``kernels.json`` whole in the evidence
file, with a summary per suite and precision (rows measured and skipped, and why; the median
GFLOP/s; the geometric-mean time ratio against each device). Its figures are copied to
``docs/img/kernels-compare.png`` and ``docs/img/kernels-roofline.png``.

``--recompare`` measures nothing: it compares the rows a stored file measured with every published
device again, with the comparison code of today (per suite and precision, published rows checked), and
stores the summary and the comparison's groups and left-out rows as evidence derived from that file
(its hardware and software kept; ``derived_from`` names it).
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dawnbench.kernels.compare import against, group

import bench

IMG = Path(__file__).resolve().parents[1] / "docs" / "img"


def summary(doc: dict) -> dict:
    out = {}
    for suite, precision in dict.fromkeys((r["suite"], r["precision"]) for r in doc["rows"]):
        rows = [r for r in doc["rows"] if (r["suite"], r["precision"]) == (suite, precision)]
        ran = [r for r in rows if not r.get("skipped")]
        figure = "busbw_gbps" if suite == "allreduce" else "gflops"
        reasons: dict[str, dict] = {}     # each kind of reason: its rows and the range of its first number
        for r in rows:
            if r.get("skipped"):
                kind = reasons.setdefault(re.sub(r"\d+(?:\.\d+)?", "N", r["skipped"]), {"rows": 0, "range": None})
                kind["rows"] += 1
                if (first := re.search(r"\d+(?:\.\d+)?", r["skipped"])) is not None:
                    low, high = kind["range"] or (float(first.group()), float(first.group()))
                    kind["range"] = [min(low, float(first.group())), max(high, float(first.group()))]
        groups = {c["against"]: group(c, suite, precision) for c in doc.get("comparison", [])}
        out[f"{suite}/{precision}"] = {
            "rows": len(rows), "measured": len(ran), "skipped": reasons,
            f"median_{figure}": statistics.median(r[figure] for r in ran) if ran else None,
            f"max_{figure}": max((r[figure] for r in ran), default=None),
            "max_fraction_of_roof": max((r["fraction_of_roof"] for r in ran if r.get("fraction_of_roof")), default=None),
            "geomean_time_ratio": {device: (g["geomean_time_ratio"], g["rows"]) for device, g in groups.items()
                                   if g and g["geomean_time_ratio"]},
            "left_out": {device: g["left_out"] for device, g in groups.items() if g and g["left_out"]}}
    return out


def replot(doc: dict) -> int:
    from dawnbench.cli.figures import kernel_figures

    with tempfile.TemporaryDirectory(prefix="dawnbench-kernels-replot-") as tmp:
        (Path(tmp) / "kernels.json").write_text(json.dumps(doc))
        for figure in kernel_figures(doc, Path(tmp)):
            shutil.copy(figure, IMG / f"kernels-{figure.name}")
    return 0


def recompare(path: Path) -> int:
    stored = json.loads(path.read_text())
    doc = stored["figures"]["document"]
    devices = [c["against"] for c in doc.get("comparison", []) if c.get("published")]
    doc["comparison"] = [against(doc, device) for device in devices]
    figures = {"command": stored["figures"]["command"], "summary": summary(doc),
               "comparison": [{k: v for k, v in c.items() if k != "rows"} for c in doc["comparison"]]}
    print(json.dumps(figures["summary"], indent=1))
    bench.write("kernels_training", figures, measured={**stored, "file": path.name})
    return replot(doc)


def main() -> int:
    parser = bench.parser(__doc__, replot=True)
    parser.add_argument("--precision", default=",".join(bench.cpu_precisions()))
    parser.add_argument("--cap", default="20")
    parser.add_argument("--max-seconds", default="3600")
    parser.add_argument("--recompare", type=Path, metavar="EVIDENCE",
                        help="compare a stored file's rows again with today's code; store the result as derived")
    args = parser.parse_args()
    if args.replot:
        stored = bench.stored(args.replot)
        if "derived_from" in stored:    # a recomparison: the rows are its source's, the comparison its own
            source = json.loads((args.replot.parent / stored["derived_from"]).read_text())["figures"]["document"]
            return replot({**source, "comparison": stored["figures"]["comparison"]})
        return replot(stored["figures"]["document"])
    if args.recompare:
        return recompare(args.recompare)
    with tempfile.TemporaryDirectory(prefix="dawnbench-kernels-training-") as tmp:
        out = Path(tmp) / "kernels"
        command = [sys.executable, "-m", "dawnbench", "kernels", "all", "--set", "training", "--precision",
                   args.precision, "--cap", args.cap, "--max-seconds", args.max_seconds, "--nproc", "2",
                   "--out", str(out), "--json"]
        start = time.perf_counter()
        proc = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        doc = json.loads(proc.stdout)
        for name in ("compare.png", "roofline.png"):
            if (out / name).is_file():
                shutil.copy(out / name, IMG / f"kernels-{name}")
    figures = {"command": command[2:], "exit": proc.returncode, "wall_s": wall, "summary": summary(doc),
               "document": doc}
    print(json.dumps(figures["summary"], indent=1))
    bench.store(args, "kernels_training", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
