"""The leaderboard website: static, self-contained pages (no network, no CDN).

``build_site(boards, out)`` writes ``index.html`` (the leader of every board and
the problems found), ``task-<task>.html`` (the four sortable tables and a scatter
of inference latency against training time) and ``entries/<file>.html`` (every
field of one submission and its accuracy-against-time curve from its TSV).
Everything that came from a submission is escaped by Jinja2's autoescaping; a
``codeURL`` becomes a link only when it is http(s).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from dawnbench import __version__
from dawnbench.leaderboard import BOARD_TITLES, BOARDS, Boards, display
from dawnbench.leaderboard.svg import line_chart, scatter
from dawnbench.submissions.validate import BOARD_TASKS, Submission


def entry_page(file: str) -> str:
    return "entries/" + re.sub(r"[^A-Za-z0-9._-]+", "_", file.removesuffix(".json")) + ".html"


def _href(url: str | None) -> str | None:
    return url if url and re.match(r"^https?://", url.strip(), re.I) else None


def _scatter(boards: dict[str, list[dict[str, Any]]]) -> str | None:
    train = {Path(r["file"]).stem: r for r in boards["training_time"]}
    points = []
    for r in boards["inference_latency"]:
        stem = Path(r["file"]).stem.removesuffix("_inference")
        if stem in train:
            t = train[stem]
            points.append((t["value"] / 3600, r["value"], f"{r['model']} · {r['hardware']} · {t['display']} · {r['display']}"))
    if not points:
        return None
    return scatter(points, "training time (hours, log)", "inference latency (ms, log)",
                   "inference latency against training time")


def _curve(sub: Submission) -> str | None:
    if not sub.rows or sub.task is None:
        return None
    rows = [r for r in sub.rows if sub.task.column in r]
    if not rows:
        return None
    return line_chart([r["hours"] for r in rows], [r[sub.task.column] for r in rows], sub.task.threshold,
                      "hours", sub.task.column, f"{sub.text('model')}: {sub.task.column} against hours")


def build_site(boards: Boards, out_dir: str | Path, until: dt.date | None = None) -> Path:
    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out / "entries", ignore_errors=True)
    (out / "entries").mkdir(parents=True, exist_ok=True)
    env = Environment(loader=PackageLoader("dawnbench.leaderboard", "templates"),
                      autoescape=select_autoescape(["html", "j2"]))
    env.filters["pretty"] = lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v
    common = {"version": __version__, "until": until.isoformat() if until else None,
              "task_links": list(boards.tasks)}

    tasks_view = []
    for key, task_boards in boards.tasks.items():
        task = next(t for t in BOARD_TASKS.values() if t.key == key)
        views = []
        for board in BOARDS:
            rows = [{**r, "page": entry_page(r["file"]), "source_href": _href(r["source"])} for r in task_boards[board]]
            views.append({"key": board, "title": BOARD_TITLES[board], "rows": rows})
        tasks_view.append({"key": key, "boards": views})
        html = env.get_template("task.html.j2").render(task=task, boards=views, scatter=_scatter(task_boards),
                                                       root="", **common)
        (out / f"task-{key}.html").write_text(html, encoding="utf-8")

    ranked = {r["file"] for b in boards.tasks.values() for rows in b.values() for r in rows}
    index = env.get_template("index.html.j2").render(
        tasks=tasks_view, problems=boards.problems, n_entries=len(boards.submissions), n_ranked=len(ranked),
        root="", **common)
    (out / "index.html").write_text(index, encoding="utf-8")

    template = env.get_template("entry.html.j2")
    for sub in boards.submissions:
        time = display("training_time", sub.training_hours * 3600) if sub.training_hours is not None else None
        html = template.render(file=sub.file, kind=sub.kind, task=sub.task, fields=sub.fields,
                               training_time=time, curve=_curve(sub), problems=sub.problems,
                               root="../", **common)
        (out / entry_page(sub.file)).write_text(html, encoding="utf-8")
    return out / "index.html"
