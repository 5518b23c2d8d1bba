"""`dawnbench report`: one self-contained HTML page of tables and figures.

Everything is inside the file: figures are PNGs embedded as ``data:`` URIs, the
style is inline, and nothing is fetched from the network. Every text that comes
from the runs (group names, file names, messages) is escaped by Jinja2's
autoescaping. When every group is named ``key=value,…`` with the same keys (the
folders ``dawnbench sweep`` makes), the page adds the sweep table and figure. Runs
with the resource monitor's summary get a resources table, runs on several workers a
workers table (world, batch sizes, communication; SPEC §13), and every folder written
by ``dawnbench profile`` under PATH (a run's ``profile/`` included) its roofline,
throughput CDF and headline figures; runs scored by ``dawnbench
generalize`` a generalisation table.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from dawnbench import __version__
from dawnbench.analysis import collect, compared, no_run_twice
from dawnbench.analysis.sweep import sweep_rows
from dawnbench.errors import DawnbenchError, FileError
from dawnbench.io import (
    atomic_write_text,
    output_dir,
    read_foreign,
    read_json,
    walk_foreign,
)
from dawnbench.records import documents
from dawnbench.records.mlperf import LogProblem
from dawnbench.records.selection import Selection, disturbance
from dawnbench.reports import plots
from dawnbench.statistics import summarize
from dawnbench.tasks import TASKS

_CONFIG = re.compile(r"^[\w.]+=[^,]+(,[\w.]+=[^,]+)*$")


def _png(draw, *args, **kwargs) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "figure.png"
        draw(*args, path=path, **kwargs)
        return base64.b64encode(path.read_bytes()).decode("ascii")


def _value(text: str) -> Any:
    try:
        return float(text) if "." in text else int(text)
    except ValueError:
        return text


def _sweep(groups: list, summaries: list[dict[str, Any]]) -> dict[str, Any] | None:
    names = [g.folder for g in groups]  # a sweep's folders are named key=value,...
    if len(names) < 2 or not all(_CONFIG.match(n) for n in names):
        return None
    configs = [dict(kv.split("=", 1) for kv in n.split(",")) for n in names]
    if len({tuple(c) for c in configs}) != 1:
        return None
    rows = sweep_rows(names, summaries)
    varying = [k for k in configs[0] if len({c[k] for c in configs}) > 1]
    x_key = varying[0] if len(varying) == 1 else None
    x_values = [_value(c[x_key]) for c in configs] if x_key else names
    return {"rows": rows, "figure": _png(plots.sweep_figure, rows, x_values, x_key or "configuration")}


def _resources(groups: list) -> list[dict[str, Any]]:
    """One row per run of this project that has the resource monitor's summary."""
    rows = []
    for g in groups:
        for r in g.listed:
            res = r.resources or {}
            if "proc_cpu_pct" not in res:
                continue
            rows.append({"group": g.name, "run": Path(r.run_dir).name, "seed": r.seed,
                         "cpu_mean": res["proc_cpu_pct"]["mean"], "cpu_max": res["proc_cpu_pct"]["max"],
                         "rss_gib": res["proc_rss_bytes"]["max"] / 2**30,
                         "gpu": (res.get("gpu0_util_pct") or {}).get("mean"),
                         "others_s": res.get("others_cpu_s_timed"), "interference": res.get("interference")})
    return rows


def _workers(groups: list) -> list[dict[str, Any]]:
    """One row per run on several workers: the world and the communication accounting."""
    rows = []
    for g in groups:
        for r in g.listed:
            d = r.distributed or {}
            if not d:
                continue
            rows.append({"group": g.name, "run": Path(r.run_dir).name, "world_size": d.get("world_size"),
                         "nodes": d.get("nnodes"), "backend": d.get("backend"), "scaling": d.get("scaling"),
                         "batch": f"{d.get('per_worker_batch_size')} / {d.get('global_batch_size')}",
                         "epoch_s": d.get("time_per_epoch_s"), "compute_s": d.get("compute_per_epoch_s"),
                         "comm_pct": d.get("comm_overhead_pct"), "accounted_pct": d.get("accounted_pct")})
    return rows


def _generalization(groups: list) -> list[dict[str, Any]]:
    """One row per saved model that `dawnbench generalize` scored."""
    rows = []
    for g in groups:
        for r in g.listed:
            for variant, v in (r.generalization or {}).items():
                rows.append({"group": g.name, "run": Path(r.run_dir).name, "entry": r.entry, "variant": variant,
                             "scored": v.get("scored"), "recheck": v.get("recheck"),
                             "suite_mean": v.get("suite_mean"), "suite_drop": v.get("suite_drop"),
                             "unseen": ", ".join(f"{k} {u['value']:.2f} (−{u['drop']:.2f})"
                                                 for k, u in (v.get("unseen") or {}).items()) or "—"})
    return rows


def _profiles(path: Path, problems: list[LogProblem]) -> list[dict[str, Any]]:
    """Every `dawnbench profile` folder under ``path``: its figures and headline figures. Figures
    are embedded only when they are regular files (a link could point at any file)."""
    found = []
    root = Path(path)
    for summary_path in [f for f in walk_foreign(root) if f.name == "summary.json"] if root.is_dir() else []:
        try:   # checked as every analysis reads a profile: a damaged one is reported, not shown
            doc, notes = documents.profile(read_json(summary_path, "profile"), summary_path)
        except FileError as err:
            problems.append(LogProblem(err.path, err.line, err.reason))
            continue
        problems += [LogProblem(str(summary_path), None, note.split(": ", 1)[1]) for note in notes]
        if doc is None or not isinstance(doc["step"].get("flops_per_s"), (int, float)):
            continue
        doc = {**{k: None for k in ("samples_per_s", "fraction_of_peak", "steps", "task", "entry", "precision")},
               **doc}
        figures = {}
        for name in ("roofline", "cdf"):
            png = summary_path.parent / f"{name}.png"
            if png.exists() or png.is_symlink():
                try:
                    figures[name] = base64.b64encode(read_foreign(png, "figure")).decode("ascii")
                except FileError as err:
                    problems.append(LogProblem(err.path, err.line, err.reason))
        found.append({"where": str(summary_path.parent.relative_to(root)), "doc": doc, "figures": figures})
    return found


def _comparison(groups: list) -> dict[str, Any] | None:
    """Each configuration against the first, when there are several (SPEC §7's comparison, as `compare` makes
    it), and the metric against epochs per configuration side by side."""
    counted = [g for g in groups if g.samples]
    if len(counted) < 2:
        return None
    base = counted[0]
    rows = []
    for g in counted[1:]:
        # A: the first configuration, B: this one; the verdict's caveats on its line, as `compare` says them
        rows.append({"name": g.name, **compared(base.samples, g.samples, (base.target, g.target),
                                                (base.disturbed, g.disturbed))})
    curves = [g for g in counted if g.results]
    return {"base": base.name, "rows": rows,
            "figure": _png(plots.epoch_curves, curves) if len(curves) > 1 else None}


GENERATOR = b'<meta name="generator" content="dawnbench report">'


def build_report(paths: str | Path | Sequence[str | Path], out_dir: str | Path, include_suspect: bool = False,
                 notes: list[str] | None = None) -> Path:
    """Write ``out_dir/index.html`` for the runs under ``paths`` (one folder, or several: each
    configuration a group of its own, named after its folder where the folders share configurations);
    return its path. ``notes`` gets what the page says of runs left out (every run, or some), for the terminal."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out = output_dir(out_dir)
    groups, problems, profiles, listed = [], [], [], []
    for path in paths:
        found, trouble = collect(path, include_suspect)
        listed.append([r for g in found for r in g.listed])
        if len(paths) > 1:
            for g in found:
                g.name = f"{Path(path).name}: {g.name}"
        groups += found
        problems += trouble
        profiles += _profiles(Path(path), problems)
    no_run_twice(listed)
    if not groups and problems:   # every file refused: the same answer analyze gives, and no empty page
        first = problems[0]
        raise DawnbenchError(f"{', '.join(map(str, paths))}: nothing could be reported. {first.file}"
                             f"{f':{first.line}' if first.line else ''}: {first.message}")
    summaries = [summarize(g.samples) for g in groups]
    tasks = {r.task for g in groups for r in g.results}
    threshold = TASKS[next(iter(tasks))].threshold if len(tasks) == 1 and next(iter(tasks)) in TASKS else None
    figures, empty = [], None
    if any(g.results for g in groups):
        figures.append({"title": "Accuracy against timed seconds",
                        "data": _png(plots.accuracy_curves, groups, threshold=threshold)})
    if any(g.samples for g in groups):
        figures.append({"title": "Distribution of time to accuracy",
                        "data": _png(plots.tta_distribution, [g for g in groups if g.samples])})
    else:   # every run left out: a sentence, not an empty figure
        left = Selection([], [x for g in groups for x in g.left_out])
        empty = left.sentence() or "No run was found to count."
    if notes is not None:
        left_out = Selection([r for g in groups for r in g.results], [x for g in groups for x in g.left_out])
        if empty or left_out.left_out:
            notes.append(f"the page has no time to accuracy to show: {empty}" if empty else left_out.sentence())
        # runs counted though flagged (--include-suspect): the terminal says so too, per configuration
        notes += [f"{g.name}: {flagged}" for g in groups
                  if g.results and (flagged := disturbance(g.results, runs=len(g.samples)))]
        # each problem, as the page lists it (a file that could not be read, a run whose copies cannot be told):
        # a record refused is named, never dropped unsaid
        notes += [f"problem: {p.file}{f':{p.line}' if p.line else ''}: {p.message}" for p in problems[:5]]
        if len(problems) > 5:
            notes.append(f"and {len(problems) - 5} more problems (the page lists them)")
    env = Environment(loader=PackageLoader("dawnbench.reports", "templates"),
                      autoescape=select_autoescape(["html", "j2"]))
    env.globals["fmt"] = lambda v, f="%.2f": "—" if v is None else f % v
    html = env.get_template("report.html.j2").render(
        source=", ".join(map(str, paths)), generated=dt.datetime.now().strftime("%Y-%m-%d %H:%M"), version=__version__,
        groups=[{"name": g.name, "disturbed": g.disturbed, **s} for g, s in zip(groups, summaries)],
        sweep=_sweep(groups, summaries), figures=figures, empty=empty, comparison=_comparison(groups),
        problems=problems, resources=_resources(groups), workers=_workers(groups), profiles=profiles,
        generalization=_generalization(groups),
        excluded=[{"group": g.name, **e} for g in groups for e in g.excluded])
    index = out / "index.html"
    atomic_write_text(index, html, update=_own_page(index))
    return index


def _own_page(index: Path) -> bool:
    """Whether ``index`` is a page an earlier `report` wrote (its generator tag, a plain file): regenerated in
    place, where another file of that name is refused unless --force."""
    try:
        if not index.is_file() or index.is_symlink():
            return False
        with open(index, "rb") as f:
            return GENERATOR in f.read(4096)
    except OSError:
        return False
