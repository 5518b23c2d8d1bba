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
wrote, signed with a key in the user's cache). Rebuilding removes only the files that list names, unchanged;
anything else in the folder — a file the user put there — is left alone, and a list the build did not sign
(edited, copied in) removes nothing: the folder is refused.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import hmac
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from dawnbench import __version__
from dawnbench.data.cache import user_cache
from dawnbench.errors import DawnbenchError
from dawnbench.io import atomic_write_json, atomic_write_text, inside, output_dir, read_json
from dawnbench.leaderboard import BOARD_TITLES, BOARDS, Boards, display
from dawnbench.leaderboard.svg import line_chart, scatter
from dawnbench.records.submission import BOARD_TASKS, Submission

MANIFEST = ".dawnbench-site.json"


def entry_page(file: str) -> str:
    """A page name of its own for every submission file: safe characters, bounded length."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", file.removesuffix(".json"))[:60]
    return f"entries/{stem}-{hashlib.sha1(file.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}.html"


def _prepare(out: Path) -> None:
    """``out`` ready for a build: new or empty, or an earlier site whose own files are removed — as its manifest
    lists them, where the manifest is the one a build of this user wrote here (its signature) and each file is
    still what that build wrote (its digest). A manifest a folder supplies (edited, copied, another user's) proves
    nothing: such a folder is refused, its files left alone."""
    output_dir(out, "--html")   # made if missing; a file, or a folder that cannot be made, is one paragraph
    manifest = out / MANIFEST
    if manifest.is_file() and not manifest.is_symlink():
        try:
            doc = read_json(manifest, "site manifest")
        except DawnbenchError:
            doc = None
        said = doc.get("sha256") if isinstance(doc, dict) else None
        if not isinstance(said, dict) or not hmac.compare_digest(str(doc.get("signature", "")), _signature(out, said)):
            raise DawnbenchError(f"--html {out}: its {MANIFEST} was not written by a dawnbench build of this user in "
                                 "this folder (its signature does not match: edited, copied or another user's), so "
                                 "which files the site owns cannot be told, and none is removed. Pass a new or empty "
                                 "folder.")
        # Only plain files this site wrote, inside its folder, as it wrote them: never through a link (every step of
        # every path checked before anything is removed), never outside, never a file since changed.
        inside(out, "entries")
        pages = [(inside(out, str(name)), digest) for name, digest in said.items()
                 if ".." not in Path(name).parts and not Path(name).is_absolute()]
        for page, digest in pages:
            if page.is_file() and not page.is_symlink() and _digest(page) == digest:
                page.unlink()
    elif any(out.iterdir()):
        raise DawnbenchError(f"--html {out}: this folder is not empty and holds no site built by dawnbench "
                             f"(no {MANIFEST}); the site would mix with files it does not own. Pass a new or "
                             "empty folder.")


def _signature(out: Path, digests: dict[str, Any]) -> str:
    """What only a build by this user can write beside the list of files it wrote in ``out``: an HMAC of the list
    and the folder's own path, keyed by a secret kept in the user's cache (made on first use, readable by the user
    alone)."""
    key_file = user_cache() / "site.key"
    if not key_file.is_file():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
    message = json.dumps([str(out.resolve()), digests], sort_keys=True).encode("utf-8", "surrogateescape")
    return hmac.new(key_file.read_bytes(), message, hashlib.sha256).hexdigest()


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
    inside(out, "entries").mkdir(exist_ok=True)     # never a link out of the site's folder
    written: list[str] = []
    digests: dict[str, str] = {}

    def write(name: str, html: str) -> None:
        atomic_write_text(inside(out, name), html)
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
    manifest = {"generator": f"dawnbench {__version__}", "files": written, "sha256": digests,
                "signature": _signature(out, digests)}
    atomic_write_json(out / MANIFEST, manifest, update=True)   # the earlier site's own manifest (_prepare found it)
    return out / "index.html"
