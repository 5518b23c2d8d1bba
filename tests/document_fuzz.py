"""The fuzzer over every document dawnbench reads (issue "inputs true by construction"): a real document of each
kind, mutated field by field (JSON) or cell by cell (TSV) with hostile values, handed to every command that
reads that kind. Each answer must be one of two:

* exit 0 (or 1: a run that did not reach its target), and what ``--json`` printed strict JSON whose times are
  finite and not negative;
* exit 2, one paragraph on stderr that names the file.

Never a traceback (an exception out of ``main``), never past ``TIME_BOUND_S``. ``tests/test_document_fuzz.py``
runs a fixed sample of the cases in the fast tier and a larger one in the slow tier;
``benchmarks/document_fuzz.py`` runs as many as it is given and stores the counts — kinds × fields × values ×
commands — as evidence (docs/results/hostile.md).
"""

from __future__ import annotations

import copy
import json
import math
import random
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bad_inputs as b
from helpers import run_cli

TIME_BOUND_S = 60
# What a hostile value is: the edges of every range (0, −1, the largest double, the smallest one, 2^63), what
# JSON cannot hold (NaN, Infinity: written as their literals), the wrong type, nothing, and a megabyte of text.
HOSTILE: list[tuple[str, Any]] = [("zero", 0), ("minus-one", -1), ("1e308", 1e308), ("5e-324", 5e-324),
                                  ("2^63", 2**63), ("NaN", "<NaN>"), ("Infinity", "<Infinity>"),
                                  ("string", "x"), ("list", []), ("object", {}), ("empty", ""), ("null", None),
                                  ("true", True), ("megabyte", "x" * 1_000_000)]
HOSTILE_CELLS: list[tuple[str, str]] = [("zero", "0"), ("minus-one", "-1"), ("1e308", "1e308"), ("5e-324", "5e-324"),
                                        ("2^63", "9223372036854775808"), ("nan", "nan"), ("inf", "inf"),
                                        ("string", "x"), ("empty", ""), ("zero-dimension", "0x5, 5x7"),
                                        ("negative-dimension", "-3x4"), ("stride-zero", "stride=0x0 padding=1x1"),
                                        ("megabyte", "x" * 1_000_000), ("arabic-indic", "٣"), ("fullwidth", "１"),
                                        ("underscore", "1_000")]
# Two fields of a run record that physics binds together (docs/reference/documents.md, "Physics"), the first pushed
# 1e9 times above or below the second: each field stays a number, the pair cannot be true, and the record is refused.
CROSS = [("evals[0].epoch", "evals[0].samples"), ("evals[0].samples", "evals[0].timed_s"),
         ("samples_to_target", "epochs_to_target"), ("time_to_accuracy_s", "evals[0].timed_s"),
         ("timed_s", "wall_s"), ("eval_s", "wall_s"), ("training_cost_usd", "cost_per_hour")]
APART = [("x1e+9", 1e9), ("x1e-9", 1e-9)]
# One field of a run record edited so that it cannot be true (issue 83): a field set to 0 beside the others, the
# record edited against its events.log, a name that looks like another: each is refused, whatever reads it.
EDITS = [("timed_s", "zero", 0.0), ("wall_s", "zero", 0.0), ("evals[0].samples", "zero", 0),
         ("evals[0].epoch", "zero", 0.0), ("evals[0].timed_s", "zero", 0.0),
         ("evals[0].value", "not-its-log-s", 99.9), ("evals[0].epoch", "not-its-log-s", 0.6),
         ("status", "not-its-log-s", "aborted"), ("task", "cyrillic-i", "mn\u0456st"),
         ("task", "no-break-space", "mnist\u00a0"), ("task", "fullwidth", "\uff4d\uff4e\uff49\uff53\uff54"),
         ("entry", "greek-o", "small-cnn-\u03bf")]


@dataclass(frozen=True)
class Case:
    kind: str          # the document kind
    field: str         # the field's path (JSON) or "line:column" (TSV)
    value: str         # the hostile value's name
    command: str       # the command's name
    refused: bool = False   # only a refusal is right (a cross-field case: the pair cannot be true)

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.field}={self.value}/{self.command}"


def leaves(doc: Any, at: str = "", depth: int = 3) -> Iterator[str]:
    """Every field path of ``doc`` to ``depth`` (``rows[0].params.m``), objects and lists themselves included."""
    if at:
        yield at
    if depth == 0:
        return
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from leaves(value, f"{at}.{key}" if at else key, depth - 1)
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:2]):
            yield from leaves(value, f"{at}[{i}]", depth - 1)


def _get(doc: Any, path: str) -> Any:
    for part in [p for p in path.replace("]", "").replace("[", ".").split(".") if p]:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def _set(doc: Any, path: str, value: Any) -> None:
    parts = [p for p in path.replace("]", "").replace("[", ".").split(".") if p]
    for part in parts[:-1]:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    last = parts[-1]
    if isinstance(doc, list):
        doc[int(last)] = value
    else:
        doc[last] = value


def _json_text(doc: Any) -> str:
    """JSON, with the literals JSON cannot hold written as a careless writer would."""
    text = json.dumps(doc)
    return text.replace('"<NaN>"', "NaN").replace('"<Infinity>"', "Infinity")


# --- each kind: where its real document comes from, and the commands that read it ------------------------------

def _run(w: Path) -> Path:
    """A run export takes (official: MNIST's own target reached), so that each command reads the whole record."""
    folder = b.make_run(w / "run")
    doc = json.loads((folder / "result.json").read_text())
    doc.update(official=True, threshold=99.0, timed_s=3.0, wall_s=3.5, eval_s=0.2, cost_per_hour=3.0,
               training_cost_usd=0.0025)
    doc["evals"][0]["value"] = 99.2
    (folder / "result.json").write_text(json.dumps(doc))
    log = folder / "events.log"             # the record's evidence says the same: its evaluation, its end
    log.write_text(log.read_text().replace('"value": 97.5', '"value": 99.2'))
    (folder / "epochs.tsv").write_text("epoch\thours\ttop1Accuracy\n0.5\t0.000833\t99.2\n")
    return folder


def _profile(w: Path) -> Path:
    folder = b._profile(w)
    return folder


def _submissions(path: Path) -> Path:
    """The submissions folder a submission file sits in: ``<folder>/<task>/<division>/<file>``."""
    return path.parent.parent.parent


KINDS: dict[str, dict[str, Any]] = {
    "result.json": {
        "base": lambda w: json.loads((_run(w) / "result.json").read_text()),
        "place": lambda w, text: _place_run(w, text),
        "commands": {
            "analyze": lambda w, p: ["analyze", p.parent.parent, "--json"],
            "compare": lambda w, p: ["compare", _reference(w), p.parent.parent, "--json"],
            "report": lambda w, p: ["report", p.parent.parent, "--out", w / "rep", "--json"],
            "export": lambda w, p: ["export", p.parent, "--author", "a", "--email", "a@b", "--out", w / "sub",
                                    "--json"],
        }},
    "kernels.json": {
        "base": lambda w: b.kernels_doc(),
        "place": lambda w, text: _place(w / "k" / "kernels.json", text),
        "commands": {
            "roofline": lambda w, p: ["roofline", p, "--out", w / "roof", "--json"],
            "predict": lambda w, p: ["predict", _profile(w / "prof-for-kernels"), "--device", p, "--json"],
        }},
    "summary.json": {
        "base": lambda w: json.loads((_profile(w) / "summary.json").read_text()),
        "place": lambda w, text: _place_profile(w, summary=text),
        "commands": {
            "predict": lambda w, p: ["predict", p.parent, "--device", "V100", "--json"],
            "classes": lambda w, p: ["classes", p.parent, "--json"],
            "roofline": lambda w, p: ["roofline", p.parent, "--out", w / "roof", "--json"],
        }},
    "scale.json": {
        "base": lambda w: json.loads(b._scale_table(w / "t" / "scale.json", [1, 2]).read_text()),
        "place": lambda w, text: _place(w / "t" / "scale.json", text),
        "commands": {
            "schedule": lambda w, p: ["schedule", p, "--accelerators", "2", "--figure", w / "g.png", "--json"],
        }},
    "submission.json": {
        "base": lambda w: json.loads((b._entries(w) / "CIFAR10" / "train" / "good.json").read_text()),
        "place": lambda w, text: _place(b._entries(w) / "CIFAR10" / "train" / "good.json", text),
        "commands": {
            "validate": lambda w, p: ["validate", _submissions(p), "--json"],
            "leaderboard": lambda w, p: ["leaderboard", _submissions(p), "--json"],
        }},
}
TSV_KINDS: dict[str, dict[str, Any]] = {
    "ops.tsv": {
        "base": lambda w: (_profile(w) / "ops.tsv").read_text(),
        "place": lambda w, text: _place_profile(w, ops=text),
        "commands": {
            "predict": lambda w, p: ["predict", p.parent, "--device", "V100", "--json"],
            "classes": lambda w, p: ["classes", p.parent, "--json"],
        }},
    "submission.tsv": {
        "base": lambda w: (b._entries(w) / "CIFAR10" / "train" / "good.tsv").read_text(),
        "place": lambda w, text: _place(b._entries(w) / "CIFAR10" / "train" / "good.tsv", text),
        "commands": {
            "validate": lambda w, p: ["validate", _submissions(p), "--json"],
            "leaderboard": lambda w, p: ["leaderboard", _submissions(p), "--json"],
        }},
    "mlperf log": {
        "base": lambda w: b._mlperf(w / "logs" / "g" / "result_0.txt").read_text(),
        "place": lambda w, text: _place(w / "logs" / "g" / "result_0.txt", text),
        "commands": {
            "analyze": lambda w, p: ["analyze", p.parents[1], "--json"],
            "compare": lambda w, p: ["compare", p.parents[1], p.parents[1], "--json"],
            "import-log": lambda w, p: ["import-log", p, "--task", "mnist", "--out", w / "imported", "--json"],
        }},
}


def _place(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _reference(w: Path) -> Path:
    """Another run to compare the document's with (a folder compared with itself is refused before any figure: the
    same run on both sides), its seed another so that it is never the document's run."""
    if not (w / "reference" / "run").exists():
        folder = _run(w / "reference")
        doc = json.loads((folder / "result.json").read_text())
        doc["seed"] = 12345
        (folder / "result.json").write_text(json.dumps(doc))
    return w / "reference"


def _place_run(w: Path, text: str) -> Path:
    run = _run(w / "runs") if not (w / "runs" / "run").exists() else w / "runs" / "run"
    return _place(run / "result.json", text)


def _place_profile(w: Path, summary: str | None = None, ops: str | None = None) -> Path:
    folder = _profile(w)
    if summary is not None:
        _place(folder / "summary.json", summary)
    if ops is not None:
        _place(folder / "ops.tsv", ops)
    return folder / ("summary.json" if summary is not None else "ops.tsv")


def _cells(text: str) -> Iterator[tuple[int, int]]:
    """(line, column) of every cell of a TSV past its header (of an MLPerf log: each line's JSON, whole)."""
    for number, line in enumerate(text.split("\n")):
        if number == 0 and "\t" in line or not line.strip():
            continue
        for column in range(len(line.split("\t")) if "\t" in line else 1):
            yield number, column


def _with_cell(text: str, number: int, column: int, value: str) -> str:
    lines = text.split("\n")
    if "\t" in lines[number]:
        cells = lines[number].split("\t")
        cells[column] = value
        lines[number] = "\t".join(cells)
    else:                                   # an MLPerf line: its time_ms, as a careless writer would
        lines[number] = lines[number].replace('"time_ms": ', f'"time_ms": {value or chr(34) + chr(34)}, "was": ', 1)
    return "\n".join(lines)


def cases(scratch: Path) -> list[tuple[Case, Callable[[Path], list[str]]]]:
    """Every case: (what it is, how to build its command line in a fresh folder)."""
    out = []
    for kind, spec in KINDS.items():
        base = spec["base"](scratch / kind.replace(".", "-"))
        for field in leaves(base):
            for name, value in HOSTILE:
                def build(w: Path, spec=spec, base=base, field=field, value=value, command=None) -> Path:
                    doc = copy.deepcopy(base)
                    _set(doc, field, value)
                    return spec["place"](w, _json_text(doc))
                for command, argv in spec["commands"].items():
                    out.append((Case(kind, field, name, command),
                                lambda w, build=build, argv=argv: [str(a) for a in argv(w, build(w))]))
    spec = KINDS["result.json"]
    base = spec["base"](scratch / "cross")
    for first, second in CROSS:
        for name, factor in APART:
            def build(w: Path, spec=spec, base=base, first=first, factor=factor) -> Path:
                doc = copy.deepcopy(base)
                pushed = _get(doc, first) * factor
                _set(doc, first, max(1, round(pushed)) if isinstance(_get(doc, first), int) else pushed)
                return spec["place"](w, _json_text(doc))
            for command, argv in spec["commands"].items():
                out.append((Case("result.json", f"{first}~{second}", name, command, refused=True),
                            lambda w, build=build, argv=argv: [str(a) for a in argv(w, build(w))]))
    for field, name, value in EDITS:
        def build(w: Path, spec=spec, base=base, field=field, value=value) -> Path:
            doc = copy.deepcopy(base)
            _set(doc, field, value)
            return spec["place"](w, _json_text(doc))
        for command, argv in spec["commands"].items():
            out.append((Case("result.json", field, name, command, refused=True),
                        lambda w, build=build, argv=argv: [str(a) for a in argv(w, build(w))]))
    for kind, spec in TSV_KINDS.items():
        base = spec["base"](scratch / kind.replace(".", "-").replace(" ", "-"))
        for number, column in _cells(base):
            for name, value in HOSTILE_CELLS:
                def build(w: Path, spec=spec, base=base, number=number, column=column, value=value) -> Path:
                    return spec["place"](w, _with_cell(base, number, column, value))
                for command, argv in spec["commands"].items():
                    out.append((Case(kind, f"{number + 1}:{column + 1}", name, command),
                                lambda w, build=build, argv=argv: [str(a) for a in argv(w, build(w))]))
    return out


def sample(all_cases: list, budget: int, seed: int = 0) -> list:
    """``budget`` cases drawn with ``seed``, every kind and command among them and every cross-field and edited
    case (all of them past the total)."""
    if budget >= len(all_cases):
        return list(all_cases)
    rng = random.Random(seed)
    by_pair: dict[tuple[str, str], list] = {}
    for case in all_cases:
        by_pair.setdefault((case[0].kind, case[0].command), []).append(case)
    chosen = [rng.choice(group) for group in by_pair.values()]
    chosen += [c for c in all_cases if c[0].refused and c not in chosen]
    rest = [c for c in all_cases if c not in chosen]
    return chosen + rng.sample(rest, max(0, budget - len(chosen)))


# --- one case, as a user meets it ---------------------------------------------------------------------------



def _times(doc: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """Every number of ``doc`` whose key says it is a time (``…_s``, ``…_ms``, ``seconds``, ``hours``)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _times(v, str(k))
    elif isinstance(doc, list):
        for v in doc:
            yield from _times(v, key)
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool) and (
            key.endswith(("_s", "_ms")) or key in ("seconds", "hours", "value")):
        yield key, doc


def verdict(args: list[str], code: int | None, out: str, err: str, file: str = "", refused: bool = False) -> str | None:
    """None when the answer is one the rule allows; else what is wrong (``file``: the name exit 2 must say;
    ``refused``: only exit 2 is right)."""
    if refused and code != 2 and not (code in (0, 1) and file and file in out):   # or left out, named
        return f"exit {code}: a document whose fields cannot be true together was taken"
    if code in (0, 1):
        if "--json" in args and out.strip():
            try:
                doc = json.loads(out, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
            except ValueError as error:
                return f"exit {code} but stdout is not strict JSON ({error})"
            bad = [(k, v) for k, v in _times(doc) if not math.isfinite(v) or (v < 0 and k != "value")]
            if bad:
                return f"exit {code} with a time that cannot be: {bad[:3]}"
        return None
    if code == 2:
        message = err.strip()
        if not message:
            return "exit 2 with no message"
        if "\n\n" in message or message.count("error:") > 1:
            return f"exit 2 with more than one paragraph: {message[:200]!r}"
        if file and file not in message:
            return f"exit 2 without naming {file}: {message[:200]!r}"
        return None
    return f"exit {code}"


def run_case(case: Case, build: Callable[[Path], list[str]], folder: Path) -> str | None:
    """Build the case in ``folder`` (left as it is), run it; None or what was wrong."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    args = build(folder)
    code, out, err = run_cli(args, TIME_BOUND_S)
    return verdict(args, code, out, err, NAMES.get(case.kind, ""), case.refused)


# the file an exit 2 must name, for each kind (the submission's pair is named by its stem)
NAMES = {"result.json": "result.json", "kernels.json": "kernels.json", "summary.json": "summary.json",
         "scale.json": "scale.json", "ops.tsv": "ops.tsv", "submission.json": "good", "submission.tsv": "good",
         "mlperf log": "result_0.txt"}
