"""The leaderboard website: static, self-contained pages (no network, no CDN).

``build_site(boards, out)`` writes ``index.html`` (the leader of every board and
the problems found), ``task-<task>.html`` (the four sortable tables and a scatter
of inference latency against training time) and ``entries/<name>-<hash>.html`` (every
field of one submission and its accuracy-against-time curve from its TSV; the name is
the file's, cut to 60 safe characters, and the hash tells apart names that would
otherwise collide, so every entry has a page of its own).
Everything that came from a submission is escaped by Jinja2's autoescaping; a
``codeURL`` becomes a link only when it is http(s).

The site owns its folder and nothing else: ``OUT`` must be new, empty, or a site
built before (it holds ``.dawnbench-site.json``, the list of files the last build
wrote). Rebuilding removes only the files that list names; anything else in the
folder — a file the user put there — is left alone.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from dawnbench import __version__
from dawnbench.errors import DawnbenchError
from dawnbench.io import atomic_write_json, atomic_write_text, output_dir, read_json
from dawnbench.leaderboard import BOARD_TITLES, BOARDS, Boards, display
from dawnbench.leaderboard.svg import line_chart, scatter
from dawnbench.records.submission import BOARD_TASKS, Submission

MANIFEST = ".dawnbench-site.json"


def entry_page(file: str) -> str:
    """A page name of its own for every submission file: safe characters, bounded length."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", file.removesuffix(".json"))[:60]
    return f"entries/{stem}-{hashlib.sha1(file.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}.html"


def _prepare(out: Path) -> None:
    """``out`` ready for a build: new or empty, or an earlier site whose own files are removed."""
    output_dir(out, "--html")   # made if missing; a file, or a folder that cannot be made, is one paragraph
    manifest = out / MANIFEST
    if manifest.is_file() and not manifest.is_symlink():
        try:
            said = read_json(manifest, "site manifest").get("sha256", {})
        except (DawnbenchError, AttributeError):
            said = {}
        for name, digest in (said.items() if isinstance(said, dict) else []):
            page = out / str(name)
            # Only plain files this site wrote, inside its folder, as it wrote them (a manifest names any file it
            # likes; the digest is what the page held): never a link, never outside, never a file since changed.
            if (isinstance(name, str) and ".." not in Path(name).parts and not Path(name).is_absolute()
                    and page.is_file() and not page.is_symlink() and _digest(page) == digest):
                page.unlink()
    elif any(out.iterdir()):
        raise DawnbenchError(f"--html {out}: this folder is not empty and holds no site built by dawnbench "
                             f"(no {MANIFEST}); the site would mix with files it does not own. Pass a new or "
                             "empty folder.")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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
    _prepare(out)
    (out / "entries").mkdir(exist_ok=True)
    written: list[str] = []
    digests: dict[str, str] = {}

    def write(name: str, html: str) -> None:
        atomic_write_text(out / name, html)
        written.append(name)
        digests[name] = _digest(out / name)

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
        write(f"task-{key}.html", html)

    ranked = {r["file"] for b in boards.tasks.values() for rows in b.values() for r in rows}
    index = env.get_template("index.html.j2").render(
        tasks=tasks_view, problems=boards.problems, n_entries=len(boards.submissions), n_ranked=len(ranked),
        root="", **common)
    write("index.html", index)

    template = env.get_template("entry.html.j2")
    for sub in boards.submissions:
        time = display("training_time", sub.training_hours * 3600) if sub.training_hours is not None else None
        html = template.render(file=sub.file, kind=sub.kind, task=sub.task, fields=sub.fields,
                               training_time=time, curve=_curve(sub), problems=sub.problems,
                               root="../", **common)
        write(entry_page(sub.file), html)
    atomic_write_json(out / MANIFEST, {"generator": f"dawnbench {__version__}", "files": written, "sha256": digests},
                      update=True)   # the earlier site's own manifest (_prepare found it)
    return out / "index.html"
