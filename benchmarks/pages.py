"""The results pages and the README's headline table, rendered from their evidence (SPEC §18, by construction).

    python benchmarks/pages.py            # write docs/results/*.md and README.md's headline table
    python benchmarks/pages.py --check    # exit 1, with the differences, where a committed page is not its render

Each page under ``docs/results/`` is a Jinja template in ``docs/results/templates/`` (``NAME.md.j2`` →
``docs/results/NAME.md``); ``headline.md.j2``, ``card.md.j2`` and ``suite.md.j2`` are the README's headline table,
example result card and test-suite line, between its ``<!-- NAME: … -->`` markers. A template reads its evidence
with ``evidence("FILE.json")`` — the JSON a benchmark wrote into ``docs/results/data/`` — and every figure on the
page is an expression over it, formatted by the filters below. A target's bound and words come from
``benchmarks/targets.json`` (``target("id").text``, ``.moonshot_text``, ``.wording``, ``.bound``), and every verdict
from the one rule (``verdict("id", figure, low, high, moonshot=…, stored=…)``: docs/rules.md writes the rule out;
``stored``, the evidence's own ``met``, is said beside the verdict where it differs; the test ``is meeting("id")``
picks the figures that meet a target). Prose that interprets stays in the template, without verdict words; a number
in it is an expression too. ``tests/test_pages.py`` re-renders every page from the committed evidence and fails on
any difference (so a figure changed by hand on a page fails CI), and fails on a template that types a figure or a
verdict (:func:`typed_figures`; what counts as one is written beside ``TYPED`` and ``FORMATTERS`` below).

The filters: ``fmt(spec)`` (Python's format spec: ``x|fmt(".2f")``), ``s(digits)`` seconds, ``pct`` (a fraction as
per cent), ``percent`` (a number that already is one), ``times`` (``1.55×``), ``num`` (thousands separated),
``duration`` (seconds, minutes or hours, whichever reads best), ``median``/``geomean``/``min``/``max`` over a list;
and for a document ``machine``, ``day``, ``commit``, ``command`` and ``link``. ``task("mnist").threshold`` is a
task's definition (``dawnbench.tasks``), not a measurement.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import json
import re
import statistics
import sys
import typing
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from dawnbench import schema
from dawnbench.bounds import IMPORT_DEFAULTS
from dawnbench.entries import load_entry_class
from dawnbench.environment import vector_extensions
from dawnbench.tasks import TASKS

import targets

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
DATA = RESULTS / "data"
TEMPLATES = RESULTS / "templates"
README = ROOT / "README.md"
REFERENCE = ROOT / "docs" / "reference"      # pages rendered from the code's declarations, not from evidence
# The README's rendered blocks: NAME → its template (docs/results/templates/NAME.md.j2), between
# "<!-- NAME: rendered … -->" and "<!-- NAME: end -->".
README_BLOCKS = ("headline", "card", "suite")

# What a typed figure looks like in a template's literal text (outside {{ }}, {% %}, {# #}, `code` and link
# targets): a decimal, a percentage, a number with a unit, thousands, "N/M", "N×" — and a bare integer ("found 27",
# "512, 8") unless it names a thing rather than measures it (NAMING before it: an issue, a seed, an exit code, a
# paper's figure…; or a setup written with a hyphen: "2-core", "8-GPU", "300-d"). A number after ≤ or ≥ is one
# too: a target's bound comes from benchmarks/targets.json (``target("id").text``), never from the template.
UNIT = r"(?:%|×|s|ms|µs|GB/s|GFLOP/s|TFLOP/s|FLOP/B|MiB|GiB|MB|GB|KB|K|min|minutes|images/s|questions/s|samples/s)"
TYPED = re.compile(rf"(?<![\w.§/-])(\d[\d,]*\.\d+|\d+ ?{UNIT}(?![\w/])|\d{{1,3}}(?:,\d{{3}})+|\d+/\d+)")
BARE = re.compile(r"(?<![\w.§/×–-])\d+(?![\w.%×/–-]|,\d)")
NAMING = re.compile(r"(?:\b(?:issues?|waves?|seeds?|exit(?: code)?|ranks?|nodes?|figure|table|severit(?:y|ies)|pc|v|version)"
                    r"|§) ?$", re.I)
# A typed finding (the page's interpretation, which an expression over the evidence must decide): "the finding
# holds", "it is reversed", "errors are larger"… And a typed verdict on a target, which only the one rule gives
# (``verdict(...)``: benchmarks/targets.py): "Every target was met.", "All targets met", "the target is met",
# "(met)", "— missed", "not resolvable here" — the words miss/missed/misses and "not resolved" anywhere.
FINDING = re.compile(r"\b(?:(?:finding|comparison)s? (?:does not hold|do not hold|holds(?: in part)?|(?:is )?reversed)"
                     r"|it is reversed|explained (?:least|most)|errors are (?:larger|smaller)|every row passed"
                     r"|all (?:four|three|two) met)\b")
VERDICT = re.compile(r"\b(?:(?:targets?|aims?|moonshots?) (?:(?:is|was|were|are|has been|have been) )?(?:not )?met"
                     r"|(?:all|every|each|both|none of the)\b[^.;:|\n]{0,30}?\b(?:targets?|aims?|moonshots?)\b"
                     r"[^.;:|\n]{0,20}?\bmet"
                     r"|miss(?:ed|es)|not resolv(?:ed|able))\b"
                     r"|\((?:not )?(?:met|missed)\)"
                     r"|(?:[—:|]|\*\*) *(?:\*\*)?(?:not )?met\b(?:\*\*)?(?= *(?:[.;,|)]|$))", re.I | re.M)
# Inside an expression a number is a typed figure as well, but for the constants that measure nothing: 0 and 1
# (none, one, a ratio's identity: ``ratio - 1``); anything inside a formatting filter's brackets (``s(1)``,
# ``times(1 if ratio < 100 else 0)``, ``map("s", 3)``) or in the arguments that name how much of something to show
# (``range(1, 6)`` severities, ``truncate(400)``, ``clusters(2)``) or the row to pick by its name
# (``selectattr("round", "equalto", 2)``); an index or a slice (``rows[1]``, ``[:3]``);
# ``100 *`` for per cent; and a unit's scale (``2**30`` bytes, 1024, 1e3 … 1e12 or 60 and 3600 seconds beside a
# ``*`` or ``/``). A string there is text the page shows: a figure or a verdict in it is typed — the words "met" or
# "missed" standing alone (``"met" if … else "missed"``) are a verdict by a rule of the template's own.
FORMATTERS = {"fmt", "s", "pct", "percent", "times", "num", "range", "truncate", "clusters", "equalto"}
VERDICT_WORD = re.compile(r"^\W*(?:not )?(?:met|missed|resolved|resolvable|within|over)\W*$", re.I)


@cache
def evidence(name: str) -> dict[str, Any]:
    """A stored evidence file, by name (as it lies in ``docs/results/data``)."""
    doc = json.loads((DATA / name).read_text())
    doc["file"] = name
    return doc


def _fmt(value: Any, spec: str) -> str:
    if value is None:
        raise ValueError("a figure the page shows is missing from its evidence (None)")
    return format(value, spec)


def _s(value: float, digits: int = 2) -> str:
    return f"{_fmt(value, f'.{digits}f')} s"


def _pct(fraction: float, digits: int = 1) -> str:
    return f"{_fmt(100 * fraction, f'.{digits}f')} %"


def _percent(value: float, digits: int = 1) -> str:
    return f"{_fmt(value, f'.{digits}f')} %"


def _times(value: float, digits: int = 2) -> str:
    return f"{_fmt(value, f',.{digits}f')}×"


def _num(value: float, digits: int = 0) -> str:
    return _fmt(value, f",.{digits}f")


def _duration(seconds: float) -> str:
    """A time in the unit that reads best: seconds below two minutes, minutes below two hours, then hours."""
    if seconds >= 2 * 3600:
        return f"{_num(seconds / 3600, 1)} h"
    return f"{_num(seconds / 60, 1)} min" if seconds >= 2 * 60 else _s(seconds, 1)


def _machine(doc: dict[str, Any]) -> str:
    """The machine a figure was measured on, as its evidence recorded it."""
    hw, sw = doc["hardware"], doc["software"]
    if hw["accelerator"]:   # the GPU's memory is its own; the cores and memory are its host's
        return (f"{hw['accelerator']} ({hw['accelerator_memory_gib']:.1f} GiB) on a {hw['cores']}-core host with "
                f"{hw['memory_gib']:.1f} GiB, PyTorch {sw['torch']}")
    flags = vector_extensions(hw)
    return (f"{hw['cores']}-core {hw['cpu']}" + (f" ({', '.join(flags)})" if flags else "")
            + f", {hw['memory_gib']:.1f} GiB, PyTorch {sw['torch']}")


def _where(doc: dict[str, Any]) -> str:
    """Machine and day, short: "2-core AMD EPYC, 2026-11-23"."""
    hw = doc["hardware"]
    if hw["accelerator"]:
        return f"{hw['accelerator']}, {_day(doc)}"
    name = re.sub(r"\((?:R|TM)\)|\bProcessor\b|\bCPU\b|@", "", hw["cpu"])
    return f"{hw['cores']}-core {' '.join(name.split())}, {_day(doc)}"


def _day(doc: dict[str, Any]) -> str:
    return doc["date"][:10]


def _commit(doc: dict[str, Any]) -> str:
    return f"`{doc['commit'][:7]}`" + {True: " (tree dirty)", False: "", None: " (tree not checked)"}[doc["dirty"]]


def _command(doc: dict[str, Any]) -> str:
    argv = [a for a in doc["argv"]]
    return "python " + " ".join(argv)


def _ratio_in(reason: str) -> float:
    """How far apart the two bandwidths of a left-out all-reduce row are (its reason names both)."""
    implied = float(re.search(r"means ([\d,.]+) GB/s", reason).group(1).replace(",", ""))
    stated = float(re.search(r"column says ([\d,.]+) GB/s", reason).group(1).replace(",", ""))
    return max(implied / stated, stated / implied)


def _clusters(similarity: dict[str, Any], k: int) -> list[list[str]]:
    """The configurations of a stored ``similarity`` document, cut into ``k`` clusters of its Ward linkage."""
    from scipy.cluster.hierarchy import fcluster

    labels = fcluster(similarity["linkage"], k, criterion="maxclust")
    groups: dict[int, list[str]] = {}
    for name, label in zip(similarity["configurations"], labels):
        groups.setdefault(int(label), []).append(name)
    return [groups[label] for label in sorted(groups)]


def _separation(clusters: list[list[str]]) -> str:
    """The characterisation's clustering finding — kernels and applications fall in separate clusters — on these
    clusters: it holds where every cluster is kernels only or applications only, in part where some are."""
    pure = sum(len({name.startswith("kernels/") for name in cluster}) == 1 for cluster in clusters)
    return "holds" if pure == len(clusters) else "holds in part" if pure else "does not hold"


def _verdict(target_id: str, value: Any, low: float | None = None, high: float | None = None, moonshot: bool = False,
             stored: bool | None = None) -> str:
    """A figure judged against its target by the one rule (``targets.verdict``). ``stored``: the ``met`` its evidence
    holds, judged when it was measured; where that says otherwise, the page says so beside the rule's verdict."""
    said = targets.verdict(target_id, value, low, high, moonshot)
    if stored is not None and {"met": True, "missed": False}.get(said) is not stored:
        plain = {"met": True, "missed": False}.get(targets.verdict(target_id, value, moonshot=moonshot)) is stored
        return f"{said}; its evidence stored `met: {str(stored).lower()}`" + (
            " but not the figures it judged" if said == "not measured" else ", judged without the spread" if plain
            else ", judged by an earlier rule")
    return said


def _underpredicted(classes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The op classes of an explained step that the kernels under-predict enough to name: a class carrying more
    than a twentieth of the step, predicted at less than half of its measured time."""
    return [c for c in classes if c["share_of_step"] > 0.05 and c["explained_share"] < 0.5]


def _wider_across(suite: str, validation: dict[str, Any]) -> bool:
    """Whether the across-devices error of ``suite`` is larger than its leave-one-out error within a device."""
    return validation["across_devices"][suite]["median_of_medians"] > validation["leave_one_out"][suite]["median_of_medians"]


def environment(prefix: str) -> jinja2.Environment:
    """Templates rendered with ``prefix`` before ``data/…`` links (the README lives two folders up)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False)
    env.filters.update(fmt=_fmt, s=_s, pct=_pct, percent=_percent, times=_times, num=_num, duration=_duration,
                       median=statistics.median, geomean=statistics.geometric_mean, separation=_separation,
                       machine=_machine, where=_where, day=_day, commit=_commit, command=_command,
                       link=lambda doc: f"[data/{doc['file']}]({prefix}data/{doc['file']})",
                       family=lambda key: key.split("/")[0], dict_values=lambda d: list(d.values()), clusters=_clusters,
                       ratio_in=_ratio_in, underpredicted=_underpredicted)
    env.tests["wider_across"] = _wider_across
    # ``rows|selectattr("error", "meeting", "prediction.whole_step")``: the figures that meet a target, by the one rule
    env.tests["meeting"] = lambda value, target_id, moonshot=False: targets.verdict(target_id, value, moonshot=moonshot) == "met"
    env.globals.update(evidence=evidence, task=lambda name: TASKS[name], zip=zip, target=targets.get, verdict=_verdict,
                       all_targets=lambda: list(targets.all_targets().values()),
                       recipe=lambda entry: load_entry_class(entry).hparams, import_defaults=IMPORT_DEFAULTS)
    return env


def declared(kind: Any) -> list[dict[str, str]]:
    """A declaration's field table (``schema.fields``), each field's ``about`` the comment written beside it."""
    comments = {}
    source = typing.get_args(kind)[0] if typing.get_origin(kind) is typing.Annotated else kind
    try:
        lines = inspect.getsource(source).splitlines()
    except (OSError, TypeError):             # declared by a call (``KernelRow = TypedDict("KernelRow", {...})``)
        module = inspect.getsource(sys.modules[source.__module__])
        start = module.index(f'{source.__name__} = TypedDict("{source.__name__}"')
        lines = module[start:module.index("})", start)].splitlines()
    for line in lines:
        found = re.match(r'\s+"?(\w+)"?: .*?#\s*(.+)$', line)
        if found:
            comments[found.group(1)] = found.group(2).strip()
    return [{**f, "about": comments.get(f["name"], "")} for f in schema.fields(kind)]


def reference() -> dict[Path, str]:
    """The reference pages (``docs/reference/templates/NAME.md.j2`` → ``docs/reference/NAME.md``)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(REFERENCE / "templates"),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    from dawnbench.records import documents, mlperf, ops, record

    kinds = {"result.json": record.RunResult, "evaluation": record.Evaluation, "ops.tsv": ops.OpRow,
             "summary.json": documents.ProfileSummary, "step": documents.Step, "roofs": documents.Roofs,
             "kernels.json": documents.KernelsDocument, "kernel row": documents.KernelRow,
             **{f"{suite} problem": kind for suite, kind in documents.PARAMS.items()},
             "scale.json": documents.ScaleTable, "scale row": documents.ScaleRow,
             "misc.dawnbench": documents.DawnbenchMisc, "instance": documents.Instance}
    from dawnbench import bounds, tasks

    env.globals.update(declared=lambda name: declared(kinds[name]), schema=schema, bounds=bounds, floors=tasks.FLOORS_S,
                       mlperf=mlperf, record=record, number=bounds.number_text,
                       can_be=lambda kind: schema._can_be(schema._adapter(kind).json_schema(), {}),
                       time_ms=mlperf.TimeMs, epochs=schema.Epochs, args=(ops.ARG_LOW, ops.ARG_HIGH))
    return {REFERENCE / template.name.removesuffix(".j2"): env.get_template(template.name).render()
            for template in sorted((REFERENCE / "templates").glob("*.md.j2"))}


def rendered() -> dict[Path, str]:
    """Every page as its template renders it now: path → text."""
    pages = reference()
    env = environment("")
    for template in sorted(TEMPLATES.glob("*.md.j2")):
        if template.name.removesuffix(".md.j2") not in README_BLOCKS:
            pages[RESULTS / template.name.removesuffix(".j2")] = env.get_template(template.name).render()
    readme = README.read_text()
    for name in README_BLOCKS:
        readme = _with_block(readme, name, environment("docs/results/").get_template(f"{name}.md.j2").render())
    pages[README] = readme
    return pages


def markers(name: str) -> tuple[str, str]:
    return (f"<!-- {name}: rendered by benchmarks/pages.py from docs/results/templates/{name}.md.j2 -->",
            f"<!-- {name}: end -->")


def _with_block(readme: str, name: str, text: str) -> str:
    begin, finish = markers(name)
    start, end = readme.index(begin), readme.index(finish)
    return readme[:start + len(begin)] + "\n" + text + readme[end:]


def typed_figures(template: Path) -> list[str]:
    """Figures and verdicts typed into a template — in its literal text, and as constants and strings inside its
    expressions (``typed_in_expressions``) — as ``line: figure``."""
    text = template.read_text()
    text = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"`[^`]*`|\]\([^)]*\)", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    found = [m for m in TYPED.finditer(text)]
    found += [m for m in BARE.finditer(text) if not NAMING.search(text[max(0, m.start() - 12):m.start()])
              and not any(t.start() <= m.start() < t.end() for t in found)]
    found += [*FINDING.finditer(text), *VERDICT.finditer(text)]
    lines = [(text.count("\n", 0, m.start()) + 1, m.start(), m.group(0).strip()) for m in found]
    typed = sorted([(line, 0, at, what) for line, at, what in lines] +     # a line's text first, then its expressions
                   [(line, 1, at, what) for at, (line, what) in enumerate(typed_in_expressions(template.read_text()))])
    return [f"{line}: {what}" for line, _, _, what in typed]


def typed_in_expressions(source: str) -> list[tuple[int, str]]:
    """The numbers and strings inside a template's ``{{ }}`` and ``{% %}`` that type a figure or a verdict (the
    rules above ``FORMATTERS``), as (line, what) in the order they come, read with Jinja's own lexer."""
    tokens = list(jinja2.Environment().lexer.tokenize(source))
    brackets: list[str] = []          # each open bracket: "index" (``rows[1]``), "format" (``s(1)``) or ""
    out = []
    for i, token in enumerate(tokens):
        before = [t.type if t.type not in ("name", "string") else f"{t.type}:{t.value}" for t in tokens[max(0, i - 2):i]]
        after = tokens[i + 1].type if i + 1 < len(tokens) else ""
        if token.type in ("lbracket", "lparen", "lbrace"):
            brackets.append("index" if token.type == "lbracket" and before and before[-1].split(":")[0] in
                            ("name", "string", "rbracket", "rparen") else
                            "format" if token.type == "lparen" and before and before[-1].removeprefix("name:") in FORMATTERS
                            else "")
        elif token.type in ("rbracket", "rparen", "rbrace") and brackets:
            brackets.pop()
        elif token.type in ("integer", "float") and not _harmless(token.value, before, after, brackets):
            out.append((token.lineno, repr(token.value)))
        elif token.type == "string" and (VERDICT_WORD.match(token.value) or VERDICT.search(token.value)
                                         or TYPED.search(token.value)):
            out.append((token.lineno, repr(token.value)))
    return out


def _harmless(value: float, before: list[str], after: str, brackets: list[str]) -> bool:
    """Whether a number inside an expression is one of the constants that measure nothing (``FORMATTERS``' rule)."""
    beside = {after, before[-1] if before else ""}
    return (value in (0, 1) or bool(brackets and brackets[-1])
            or (len(before) == 2 and before[-1] == "comma" and before[-2].removeprefix("string:") in FORMATTERS)
            or (value == 100 and "mul" in beside)
            or (value == 2 and after == "pow") or before[-2:] == ["integer", "pow"]
            or (value in (1e3, 1e6, 1e9, 1e12, 1024, 60, 3600) and bool(beside & {"mul", "div"})))


def differences(pages: dict[Path, str]) -> dict[Path, str]:
    """Each page whose text on disk is not ``pages``' render of it, with the unified diff."""
    out = {}
    for path, text in pages.items():
        now = path.read_text() if path.is_file() else ""
        if now != text:
            out[path] = "".join(difflib.unified_diff(now.splitlines(True), text.splitlines(True),
                                                     f"{path.relative_to(ROOT)} (committed)",
                                                     f"{path.relative_to(ROOT)} (rendered from its evidence)"))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write; exit 1 on any difference")
    args = parser.parse_args()
    pages = rendered()
    differ = differences(pages)
    for path, diff in differ.items():
        if args.check:
            sys.stdout.write(diff)
        else:
            path.write_text(pages[path])
            print(f"wrote {path.relative_to(ROOT)}")
    if args.check and differ:
        print(f"\n{len(differ)} page(s) differ from their render: run `python benchmarks/pages.py` and commit, or "
              "change the evidence or the template, never the page.")
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
