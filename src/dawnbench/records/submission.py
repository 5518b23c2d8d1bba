"""Read and check DAWNBench v1.0 submission files, located problem by problem.

A submission is a JSON file under ``<Task>/train/`` or ``<Task>/inference/`` of a
submissions folder (the layout of ``third_party/dawnbench-entries.tar.xz``); a training
entry's per-epoch log is the TSV of the same name. :func:`read_submission` never
raises on bad content: it returns what could be read and every problem, each with
file, line (when one applies), severity and a message that says how to fix it.

Errors keep an entry off the boards; warnings do not. The rules:

errors    JSON that does not parse (or is nested too deep, or holds numbers out of
          range); a file that is not a regular file (a symbolic link, a FIFO) or is
          larger than a submission can be; a required field missing, of the wrong
          type, blank, longer than ``bounds.MAX_TEXT`` or holding a control or
          bidirectional character; a timestamp that is not a date, in the future
          or before ``FIRST_DAY``; a training entry without its TSV; a
          TSV without the task's metric column or ``hours``, with a cell that is not
          a number, whose ``hours`` decrease, are negative or not finite, or are over
          ``MAX_HOURS``; an epoch below 0 or above ``bounds.MAX_EPOCHS``; an accuracy
          outside 0–100 (F1 outside 0–1) after rescaling;
          a training time of zero (the first row at the threshold has ``hours`` 0);
          an inference ``latency`` not above 0 ms or over an hour, a ``cost`` or
          ``costPerHour`` that is negative or absurd; an entry that never reaches
          the task's threshold; an unknown task folder.
warnings  a byte-order mark or CRLF line ends; a timestamp not written
          ``yyyy-mm-dd``; ``version`` other than ``v1.0``; ``misc`` not an object;
          blank columns (extra tabs); epochs that do not increase; accuracies on
          the wrong scale (0–1 where 0–100 is the rule, or F1 on 0–100) — these
          are rescaled and the entry is ranked; an inference ``cost`` whose
          implied price ($/h = cost ÷ latency in hours) is outside $0.01–$1,000/h.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench import bounds, schema
from dawnbench.errors import FileError
from dawnbench.io import (
    MAX_JSON_DEPTH,
    json_depth,
    read_foreign,
    strict_loads,
    walk_foreign,
)
from dawnbench.records.documents import DawnbenchMisc
from dawnbench.records.prices import instances, priced_as
from dawnbench.records.record import epoch_size
from dawnbench.tasks import floor_s

ERROR, WARNING = "error", "warning"
MAX_HOURS = 10_000.0          # over a year of training: no real entry, and display would overflow far above it
MAX_LATENCY_MS = 3_600_000.0  # an hour per item


@dataclass(frozen=True)
class BoardTask:
    key: str            # "cifar10"
    folder: str         # "CIFAR10"
    column: str         # the accuracy column / field that decides
    threshold: float    # on the column's own scale
    scale: float        # 100 for percent columns, 1 for F1


BOARD_TASKS = {t.folder.lower(): t for t in [
    BoardTask("cifar10", "CIFAR10", "top1Accuracy", 94.0, 100.0),
    BoardTask("imagenet", "ImageNet", "top5Accuracy", 93.0, 100.0),
    BoardTask("squad", "SQuAD", "f1Score", 0.75, 1.0),
    BoardTask("mnist", "MNIST", "top1Accuracy", 99.0, 100.0),
    BoardTask("fashion-mnist", "FashionMNIST", "top1Accuracy", 92.0, 100.0),
]}
ACCURACY_COLUMNS = ("top1Accuracy", "top5Accuracy", "f1Score")
FIRST_DAY = dt.date(2017, 1, 1)     # DAWNBench was announced in 2017: no result in its format is older
REQUIRED = {"version": str, "author": str, "authorEmail": str, "framework": str, "model": str,
            "hardware": str, "timestamp": str}


@dataclass
class Problem:
    file: str
    line: int | None
    severity: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "severity": self.severity, "message": self.message}

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.severity}: {self.message}"


@dataclass
class Submission:
    file: str                               # path relative to the submissions folder
    task: BoardTask | None
    kind: str                               # "train" or "inference"
    fields: dict[str, Any] = field(default_factory=dict)
    date: dt.date | None = None
    rows: list[dict[str, float]] = field(default_factory=list)  # TSV rows, accuracies rescaled
    training_hours: float | None = None     # hours of the first row at or above the threshold
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.severity == ERROR for p in self.problems)

    def text(self, key: str) -> str:
        value = self.fields.get(key)
        return value if isinstance(value, str) else ("" if value is None else str(value))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _noting_repeats(repeated: list[str]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """An ``object_pairs_hook`` that builds each object as ``json`` does and notes in ``repeated`` the keys an
    object gives more than once (JSON keeps the last of them)."""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        repeated.extend(k for i, k in enumerate(keys) if k in keys[:i] and k not in repeated)
        return dict(items)
    return pairs


def _field_line(text: str, key: str) -> int | None:
    m = re.search(rf'"{re.escape(key)}"\s*:', text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _decode(raw: bytes, name: str, problems: list[Problem]) -> str | None:
    if raw.startswith(b"\xef\xbb\xbf"):
        problems.append(Problem(name, 1, WARNING, "starts with a UTF-8 byte-order mark; save without it"))
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        problems.append(Problem(name, line, ERROR, f"not UTF-8 text (byte {err.start}); save the file as UTF-8"))
        return None
    if "\r" in text:
        problems.append(Problem(name, None, WARNING, "CRLF (Windows) line ends; use LF"))
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _task_of(path: Path, root: Path) -> tuple[BoardTask | None, str]:
    parts = path.relative_to(root).parts if path.is_relative_to(root) else path.parts
    kind = "inference" if "inference" in (p.lower() for p in parts[:-1]) else "train"
    for part in parts[:-1]:
        if part.lower() in BOARD_TASKS:
            return BOARD_TASKS[part.lower()], kind
    return None, kind


def _scale_factor(column: str, largest: float) -> float:
    """1, or the factor that brings a column to its rule: 0–100 for top-k, 0–1 for F1."""
    if column == "f1Score":
        return 0.01 if largest > 1.0 else 1.0
    return 100.0 if 0 < largest <= 1.0 else 1.0


def _scale_warning(column: str, factor: float, where: str, line: int | None) -> Problem:
    if factor == 100.0:
        return Problem(where, line, WARNING, f"{column} looks like a 0–1 fraction; DAWNBench accuracies "
                       "are 0–100 (read as percent here)")
    return Problem(where, line, WARNING, "f1Score looks like 0–100; DAWNBench F1 is 0–1 (divided by 100 here)")


def read_submission(json_path: str | Path, root: str | Path | None = None) -> Submission:
    """Read one submission JSON (and its TSV); all problems are in ``.problems``."""
    json_path = Path(json_path)
    root = Path(root) if root else json_path.parent
    name = str(json_path.relative_to(root)) if json_path.is_relative_to(root) else str(json_path)
    task, kind = _task_of(json_path, root)
    sub = Submission(name, task, kind)
    problems = sub.problems
    try:        # a board lists the file's name: a control or bidirectional mark in it turns the row around
        schema.printed_sentence(json_path.name)
    except ValueError as err:
        problems.append(Problem(name, None, ERROR, f"the file's name {err}: rename it"))
    if task is None:
        problems.append(Problem(name, None, ERROR, "not under a known task folder "
                                f"({', '.join(t.folder for t in BOARD_TASKS.values())}); move it there"))
    try:
        raw = read_foreign(json_path, "submission")
    except FileError as err:
        problems.append(Problem(name, None, ERROR, err.reason))
        return sub
    text = _decode(raw, name, problems)
    if text is None:
        return sub
    fields = _parsed(text, name, problems)
    if fields is None:
        return sub
    sub.fields = fields
    line = lambda key: _field_line(text, key)
    _check_required(fields, name, line, problems)
    if isinstance(fields.get("version"), str) and fields["version"] != "v1.0":
        problems.append(Problem(name, line("version"), WARNING, f"version {fields['version']!r}; "
                                "this validator knows v1.0"))
    if "misc" in fields and not isinstance(fields["misc"], dict):
        problems.append(Problem(name, line("misc"), WARNING, f"'misc' should be an object, "
                                f"not {type(fields['misc']).__name__}"))
    sub.date = _date(fields.get("timestamp"), name, line("timestamp"), problems)
    if kind == "inference":
        _check_inference(sub, line)
    else:
        if "costPerHour" in fields and fields["costPerHour"] is not None and not (
                _number(fields["costPerHour"])
                and bounds.MIN_USD_PER_HOUR <= fields["costPerHour"] <= bounds.MAX_USD_PER_HOUR):
            problems.append(Problem(name, line("costPerHour"), ERROR, "'costPerHour' must be a number of USD an hour "
                                    f"from {bounds.MIN_USD_PER_HOUR:g} (no machine is cheaper) to "
                                    f"{bounds.MAX_USD_PER_HOUR:,.0f}, not {fields['costPerHour']!r}"))
        _read_tsv(sub, json_path.with_suffix(".tsv"), root)
        _check_dawnbench_misc(sub, line)
    return sub


def _parsed(text: str, name: str, problems: list[Problem]) -> dict[str, Any] | None:
    """The submission's JSON object, or None with the reason in ``problems`` (a repeated key is said, and kept)."""
    repeated: list[str] = []
    try:
        fields = strict_loads(text, object_pairs_hook=_noting_repeats(repeated))
    except json.JSONDecodeError as err:
        problems.append(Problem(name, err.lineno, ERROR, f"not valid JSON: {err.msg} (column {err.colno})"))
        return None
    except RecursionError:
        problems.append(Problem(name, None, ERROR, "JSON nested far too deep; a submission is one flat object"))
        return None
    except ValueError as err:
        problems.append(Problem(name, None, ERROR, f"{err}; write plain numbers"))
        return None
    if json_depth(fields) > MAX_JSON_DEPTH:
        problems.append(Problem(name, None, ERROR, f"JSON nested more than {MAX_JSON_DEPTH} deep; a submission "
                                "is one flat object"))
        return None
    if not isinstance(fields, dict):
        problems.append(Problem(name, 1, ERROR, "the JSON must be an object with the DAWNBench fields"))
        return None
    for key in repeated:     # JSON keeps the last: a second "author" would replace the first unseen
        problems.append(Problem(name, _field_line(text, key), ERROR, f"'{key}' is given more than once (JSON keeps "
                                "only the last, which the board would show): keep one"))
    return fields


def _check_required(fields: dict[str, Any], name: str, line: Any, problems: list[Problem]) -> None:
    """Each required field present, a non-blank string a board can print as it is, of a cell's length."""
    for key, kind_ in REQUIRED.items():
        if key not in fields:
            problems.append(Problem(name, None, ERROR, f"required field '{key}' is missing"))
        elif not isinstance(fields[key], kind_):
            problems.append(Problem(name, line(key), ERROR, f"'{key}' must be a string, "
                                    f"not {type(fields[key]).__name__}"))
        elif not fields[key].strip():
            # a blank hardware or author ranks beside real entries as if it said something
            problems.append(Problem(name, line(key), ERROR, f"'{key}' is empty; a submission says who made it, "
                                    f"with what and on which machine: fill it in"))
        elif len(fields[key]) > bounds.MAX_TEXT:     # a board's cell, not a document
            problems.append(Problem(name, line(key), ERROR, f"'{key}' is {len(fields[key]):,} characters long: "
                                    f"write it in at most {bounds.MAX_TEXT:,}"))
        elif key != "timestamp":     # (a timestamp holding one is no date: said once, below)
            try:        # a board prints it as it is: a control or bidirectional mark would turn the row around
                schema.printed_sentence(fields[key])
            except ValueError as err:
                problems.append(Problem(name, line(key), ERROR, f"'{key}' {err}"))


def _check_dawnbench_misc(sub: Submission, line: Any) -> None:
    """A submission ``dawnbench export`` wrote says what its runs were in ``misc.dawnbench``: its fields must be
    what they can be, agree with each other (successes of runs, one record per seed) and with the TSV it travels
    with (the representative run's time to the threshold is the median's, or below it with an even count)."""
    # Long: one check per agreement between misc.dawnbench, its runs and its TSV, each its own problem line.
    misc = (sub.fields.get("misc") or {}).get("dawnbench") if isinstance(sub.fields.get("misc"), dict) else None
    if misc is None:
        return
    where, problems = line("misc"), sub.problems
    why = schema.why_not(DawnbenchMisc, misc, "misc.dawnbench")
    if why:
        problems.append(Problem(sub.file, where, ERROR, why))
        return
    named = misc.get("priced_as")
    if named is not None and named != priced_as(named, sub.fields.get("costPerHour")):
        row = instances().get(named)
        problems.append(Problem(sub.file, where, ERROR, f"misc.dawnbench.priced_as names {named[:60]!r}, " + (
            "which is not in the price catalog" if row is None else
            f"whose catalog price is {row['usd_per_hour']:g} $/h, not costPerHour {sub.fields.get('costPerHour')!r}")
            + ": it names the instance costPerHour was read from. Export again (--instance NAME prices from the "
              "catalog; a price of your own is --cost-per-hour, with no instance named)."))
        return
    if misc.get("subset") is not None or not misc["official"]:
        problems.append(Problem(sub.file, where, ERROR, "misc.dawnbench says its runs were unofficial (subset "
                                f"{misc.get('subset')!r}, official {misc['official']}): DAWNBench ranks runs at "
                                "the task's own threshold on its full data. Export runs made without --quick, "
                                "--subset or --target."))
        return
    if misc.get("self_reported"):
        problems.append(Problem(sub.file, where, WARNING, "its accuracy is self-reported (misc.dawnbench.self_reported: "
                                "a tracked script's own evaluation or an imported MLPerf log), not dawnbench's scorer "
                                "on the task's held split; the leaderboard marks it so. A tracked script handing "
                                "track() a predict function is scored by the harness instead."))
    if misc.get("flagged"):
        problems.append(Problem(sub.file, where, WARNING, f"{len(misc['flagged'])} of its {misc['runs']} runs were "
                                "disturbed by other processes while their clocks ran (misc.dawnbench.flagged; "
                                "exported with --include-suspect): their times may be slow. Rerun on an idle "
                                "machine to submit undisturbed runs."))
    seeds = [s for s in misc["seeds"] if s is not None]
    disagree = []
    if misc["successes"] > misc["runs"]:
        disagree.append(f"{misc['successes']} successes of {misc['runs']} runs")
    elif misc["success_fraction"] is not None and not math.isclose(misc["success_fraction"],
                                                                    misc["successes"] / misc["runs"]):
        disagree.append(f"success_fraction {misc['success_fraction']:g} is not {misc['successes']}/{misc['runs']}")
    if (misc["successes"] > 0) != (misc["tta_median_s"] is not None):
        disagree.append(f"{misc['successes']} successes with tta_median_s {misc['tta_median_s']!r}")
    if misc["successes"] == 0 and sub.training_hours is not None:
        disagree.append("no success counted, but its TSV (the representative run's) reaches the threshold")
    if len(misc["seeds"]) != misc["runs"]:
        disagree.append(f"{len(misc['seeds'])} seeds for {misc['runs']} runs")
    if len(set(seeds)) != len(seeds):
        disagree.append("a seed counted more than once (a copied run)")
    strangers = [f["seed"] for f in misc.get("flagged") or [] if f["seed"] not in misc["seeds"]]
    if strangers or len(misc.get("flagged") or []) > misc["runs"]:
        disagree.append(f"misc.dawnbench.flagged names {len(misc.get('flagged') or [])} run(s)"
                        + (f", seed {strangers[0]} not among the seeds {seeds}" if strangers else
                           f" of {misc['runs']} counted"))
    chosen = misc.get("representative_seed")
    if chosen is not None and chosen not in seeds:
        disagree.append(f"representative_seed {chosen} is not one of the seeds {seeds}")
    if sub.task is not None and misc["task"] != sub.task.key:
        disagree.append(f"task {misc['task']!r} in the {sub.task.folder} folder")
    tsv_s = sub.training_hours * 3600 if sub.training_hours is not None else None
    median = misc["tta_median_s"]
    if tsv_s is not None and median is not None and misc["successes"]:
        close = math.isclose(tsv_s, median, rel_tol=1e-6, abs_tol=0.01)
        if (misc["successes"] % 2 and not close) or (not misc["successes"] % 2 and tsv_s > median and not close):
            disagree.append(f"the TSV reaches the threshold at {tsv_s:,.2f} s, but the median time to it is "
                            f"{median:,.2f} s over {misc['successes']} successes (the TSV is the median run's)")
    if disagree:
        problems.append(Problem(sub.file, where, ERROR, "misc.dawnbench disagrees with itself or its TSV: "
                                + "; ".join(disagree) + ". Export the runs again with `dawnbench export`."))


def _date(value: Any, name: str, line: int | None, problems: list[Problem]) -> dt.date | None:
    if not isinstance(value, str) or not value.strip():     # missing, not text or blank: said once, above
        return None
    m = re.fullmatch(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})", value.strip())   # ASCII digits, as every reader's
    try:
        date = dt.date(*map(int, m.groups())) if m else None
    except ValueError:
        date = None
    if date is None:
        problems.append(Problem(name, line, ERROR, f"timestamp {value!r} is not a date; write yyyy-mm-dd"))
    elif date > dt.date.today() + dt.timedelta(days=1):
        problems.append(Problem(name, line, ERROR, f"timestamp {value!r} is in the future: write the day the "
                                "result was measured (yyyy-mm-dd)"))
    elif date < FIRST_DAY:
        problems.append(Problem(name, line, ERROR, f"timestamp {value!r} is before DAWNBench began "
                                f"({FIRST_DAY.isoformat()}): write the day the result was measured (yyyy-mm-dd)"))
    elif value != date.isoformat():
        problems.append(Problem(name, line, WARNING, f"timestamp {value!r} should be written "
                                f"{date.isoformat()} (yyyy-mm-dd)"))
    return date


def _check_inference(sub: Submission, line) -> None:
    name, fields, task, problems = sub.file, sub.fields, sub.task, sub.problems
    latency = fields.get("latency")
    if not (_number(latency) and bounds.MIN_LATENCY_S * 1e3 <= latency <= MAX_LATENCY_MS):
        problems.append(Problem(name, line("latency"), ERROR, "'latency' must be a number of milliseconds per "
                                f"item from {bounds.MIN_LATENCY_S * 1e3:g} (no model answers faster) to an hour, "
                                f"not {latency!r}"))
    cost = fields.get("cost")
    if cost is not None and not (_number(cost) and 0 <= cost <= bounds.MAX_USD_PER_HOUR):
        problems.append(Problem(name, line("cost"), ERROR, f"'cost' must be USD per item or null, not {cost!r}"))
    elif _number(cost) and cost > 0 and _number(latency) and latency > 0:
        per_hour = cost / (latency / 3_600_000)
        if not bounds.MIN_USD_PER_HOUR <= per_hour <= bounds.MAX_USD_PER_HOUR:
            problems.append(Problem(name, line("cost"), ERROR, f"'cost' {cost:g} with latency {latency:g} ms "
                                    f"implies ${per_hour:,.4g}/h, and no machine costs less than "
                                    f"${bounds.MIN_USD_PER_HOUR:g}/h or more than ${bounds.MAX_USD_PER_HOUR:,.0f}/h: "
                                    "cost is USD per item = $/h × latency in hours"))
        elif not 0.01 <= per_hour <= 1000:
            problems.append(Problem(name, line("cost"), WARNING, f"'cost' {cost:g} with latency {latency:g} ms "
                                    f"implies ${per_hour:,.4g}/h; cost is USD per item = $/h × latency in hours"))
    if task is None:
        return
    value = fields.get(task.column)
    if not _number(value):
        problems.append(Problem(name, line(task.column), ERROR, f"'{task.column}' (the accuracy of the "
                                f"measured model) must be a number, not {value!r}"))
        return
    factor = _scale_factor(task.column, float(value))
    if factor != 1.0:
        problems.append(_scale_warning(task.column, factor, name, line(task.column)))
    value = float(value) * factor
    fields[task.column] = value
    if not 0 <= value <= (1.0 if task.column == "f1Score" else 100.0):
        problems.append(Problem(name, line(task.column), ERROR, f"{task.column} {value:.10g} is impossible: "
                                f"{_range_text(task.column)}"))
        return
    top1, top5 = fields.get("top1Accuracy"), fields.get("top5Accuracy")
    if _number(top1) and _number(top5) and top1 * _scale_factor("top1Accuracy", top1) > top5 * _scale_factor(
            "top5Accuracy", top5):
        problems.append(Problem(name, line("top1Accuracy"), ERROR, f"top1Accuracy {top1:g} is above top5Accuracy "
                                f"{top5:g}: the top-1 guess is one of the top five"))
    if value < task.threshold:
        problems.append(Problem(name, line(task.column), ERROR, f"{task.column} {value:g} is below the "
                                f"threshold {task.threshold:g}: the model must reach it to be ranked"))


def _read_tsv(sub: Submission, tsv: Path, root: Path) -> None:
    problems, task = sub.problems, sub.task
    name = str(tsv.relative_to(root)) if tsv.is_relative_to(root) else str(tsv)
    if not tsv.exists() and not tsv.is_symlink():
        problems.append(Problem(sub.file, None, ERROR, f"its training log {name} is missing; a training "
                                "entry is a JSON and a TSV of the same name"))
        return
    try:
        text = _decode(read_foreign(tsv, "training log"), name, problems)
    except FileError as err:
        problems.append(Problem(name, None, ERROR, err.reason))
        return
    if text is None:
        return
    lines = text.split("\n")
    header = [h.strip() for h in lines[0].split("\t")]
    if any(not h for h in header):
        problems.append(Problem(name, 1, WARNING, "blank column name (an extra tab?); blank columns are ignored"))
    columns = {h: i for i, h in enumerate(header) if h}
    twice = sorted({h for h in header if h and header.count(h) > 1})
    if twice:
        problems.append(Problem(name, 1, ERROR, f"column {', '.join(twice)} appears more than once in the header: "
                                "which one is the measurement cannot be told; keep one"))
        return
    needed = ["hours"] + ([task.column] if task else [])
    missing = [c for c in needed if c not in columns]
    if missing:
        problems.append(Problem(name, 1, ERROR, f"header lacks {', '.join(missing)}; it has "
                                f"{', '.join(columns) or 'nothing'} (tab-separated: epoch, hours, the metric)"))
        return
    parsed = _tsv_rows(lines, header, columns, needed, name, problems)
    if parsed:
        _scale_accuracy(parsed, columns, name, problems)
        _judge_rows(sub, parsed, name)


def _tsv_rows(lines: list[str], header: list[str], columns: dict[str, int], needed: list[str], name: str,
              problems: list[Problem]) -> list[tuple[int, dict[str, float]]] | None:
    """The data rows as numbers by column, each with its line; None when a row has a cell that is no number
    (each said) or there is no row."""
    parsed: list[tuple[int, dict[str, float]]] = []
    unreadable = 0          # rows with a cell that is no number: each said, then the log is not judged further
    for number, raw_line in enumerate(lines[1:], 2):
        if not raw_line.strip():
            continue
        cells = raw_line.split("\t")
        row: dict[str, float] = {}
        said = len(problems)
        for column, index in columns.items():
            cell = cells[index].strip() if index < len(cells) else ""
            try:
                row[column] = bounds.parse_float(cell)
            except ValueError:
                if column in needed or column == "epoch":
                    problems.append(Problem(name, number, ERROR, f"{column} {cell[:40]!r} is not a number"))
                continue
            if column in needed and not math.isfinite(row[column]):
                problems.append(Problem(name, number, ERROR, f"{column} {cell[:40]!r} is not a finite number"))
        if len(problems) > said:
            unreadable += 1
            continue
        if len(cells) > len(header) and any(c.strip() for c in cells[len(header):]):
            problems.append(Problem(name, number, WARNING, "more cells than header columns; extras ignored"))
        parsed.append((number, row))
    if unreadable:
        return None
    if not parsed:
        problems.append(Problem(name, None, ERROR, "has no data rows"))
        return None
    return parsed


def _scale_accuracy(parsed: list[tuple[int, dict[str, float]]], columns: dict[str, int], name: str,
                    problems: list[Problem]) -> None:
    """Each accuracy column on its own scale, told from its largest value (a fraction becomes percent), warned."""
    for column in (c for c in ACCURACY_COLUMNS if c in columns):
        factor = _scale_factor(column, max(r.get(column, 0.0) for _, r in parsed))
        if factor != 1.0:
            problems.append(_scale_warning(column, factor, name, 1))
            for _, r in parsed:
                if column in r:
                    r[column] *= factor


def _judge_rows(sub: Submission, parsed: list[tuple[int, dict[str, float]]], name: str) -> None:
    """The rows' physics, in order (hours from 0 and never back, accuracies and epochs in range), kept in
    ``sub.rows``; the training time is the first row at the threshold, above the task's floor."""
    problems, task = sub.problems, sub.task
    last_hours, last_epoch, warned_epoch = 0.0, -math.inf, False
    for number, row in parsed:
        if not 0 <= row["hours"] <= MAX_HOURS:
            problems.append(Problem(name, number, ERROR, f"hours {row['hours']:g} is impossible: cumulative "
                                    f"training hours run from 0 to at most {MAX_HOURS:,.0f}"))
            return
        if row["hours"] < last_hours:
            problems.append(Problem(name, number, ERROR, f"hours {row['hours']:g} is less than the row before "
                                    f"({last_hours:g}); hours are cumulative"))
            return
        bad = [c for c in ACCURACY_COLUMNS if c in row and not 0 <= row[c] <= (1.0 if c == "f1Score" else 100.0)]
        if bad:
            problems.append(Problem(name, number, ERROR, f"{bad[0]} {row[bad[0]]:.15g} is impossible: "
                                    f"{_range_text(bad[0])}"))
            return
        if row.get("top1Accuracy", -math.inf) > row.get("top5Accuracy", math.inf):
            problems.append(Problem(name, number, ERROR, f"top1Accuracy {row['top1Accuracy']:g} is above top5Accuracy "
                                    f"{row['top5Accuracy']:g}: the top-1 guess is one of the top five"))
            return
        if "epoch" in row and not 0 <= row["epoch"] <= bounds.MAX_EPOCHS:
            problems.append(Problem(name, number, ERROR, f"epoch {row['epoch']:g} is impossible: epochs count from 0 "
                                    f"to at most {bounds.MAX_EPOCHS:,.0f}"))
            return
        if "epoch" in row and row["epoch"] < last_epoch:
            problems.append(Problem(name, number, ERROR, f"epoch {row['epoch']:g} is below the row before "
                                    f"({last_epoch:g}): rows are in the order they were taken, epochs never go back"))
            return
        if "epoch" in row and row["epoch"] == last_epoch and not warned_epoch:
            warned_epoch = True
            problems.append(Problem(name, number, WARNING, f"epoch {row['epoch']:g} does not increase"))
        why = _epoch_physics(row, task.key if task else "", max(last_epoch, 0.0), last_hours)
        if why:
            problems.append(Problem(name, number, ERROR, why))
            return
        last_hours, last_epoch = row["hours"], row.get("epoch", last_epoch)
        sub.rows.append(row)
        if task and sub.training_hours is None and row[task.column] >= task.threshold:
            if row["hours"] <= 0 or row.get("epoch") == 0:
                problems.append(Problem(name, number, ERROR, f"reaches the threshold at hours {row['hours']:g}, "
                                        f"epoch {row.get('epoch', 0):g}: a time to accuracy follows training "
                                        "(hours and epochs count from the start)"))
                return
            floor = floor_s(task.key, None)       # the board's threshold is the task's own (on the board's scale)
            if row["hours"] * 3600 < floor:
                problems.append(Problem(name, number, ERROR, f"reaches the threshold at hours {row['hours']:g} "
                                        f"({row['hours'] * 3600:g} s): below {floor:g} s, the floor of a time to "
                                        f"{task.key}'s target (about 100× below the fastest result known; "
                                        "docs/reference/documents.md, \"Physics\")"))
                return
            sub.training_hours = row["hours"]
    if task and sub.training_hours is None:
        best = max(r[task.column] for r in sub.rows)
        problems.append(Problem(name, None, ERROR, f"never reaches {task.column} ≥ {task.threshold:g} "
                                f"(best {best:.15g}); only entries that reach the threshold are ranked"))


def _epoch_physics(row: dict[str, float], task: str, since_epoch: float, since_hours: float) -> str | None:
    """What a row's epoch and hours can be together (the run record's rule, ``check_point``): an epoch of at least
    one of the task's samples, and no more than one epoch every ``bounds.MIN_EPOCH_S`` since the row before (or the
    start: epoch 0 at hours 0)."""
    epoch = row.get("epoch")
    if not epoch:
        return None
    size = epoch_size(task)
    if size and epoch * size < 1:
        return (f"epoch {epoch:g} is less than one of {task}'s {size:,} training samples: an epoch row counts the "
                "passes over the training split made so far")
    if epoch - since_epoch > (row["hours"] - since_hours) * 3600 / bounds.MIN_EPOCH_S:
        return (f"epoch {epoch:g} at hours {row['hours']:g}, after epoch {since_epoch:g} at hours {since_hours:g}: "
                f"an epoch is at least one optimizer step ({bounds.MIN_EPOCH_S:g} s, a kernel's launch), so no run "
                "trains that many in that time")
    return None


def find_submissions(paths: list[str | Path], skipped: list[Problem] | None = None) -> list[tuple[Path, Path]]:
    """(json file, root) for every submission JSON under the given files or folders. Folders
    are walked without following links; what was skipped (links, FIFOs) goes to ``skipped``."""
    found = []
    for p in map(Path, paths):
        if p.is_dir() and not p.is_symlink():
            passed: list[tuple[Path, str]] = []
            found += [(f, p) for f in walk_foreign(p, passed) if f.suffix == ".json"]
            if skipped is not None:  # a submission JSON that is a link or a FIFO cannot be read (a TSV is
                skipped += [Problem(_relative(path, p), None, ERROR, why)  # reported with its JSON)
                            for path, why in passed if path.suffix == ".json"]
        elif p.exists() or p.is_symlink():
            root = next((a.parent for a in p.parents if a.name.lower() in BOARD_TASKS), p.parent)
            found.append((p, root))
    return found


def orphan_tsvs(folder: Path) -> list[Problem]:
    """Training logs with no JSON of the same name."""
    return [Problem(str(t.relative_to(folder)), None, WARNING, "TSV without a JSON of the same name; "
                    "name the pair alike (model.json + model.tsv)")
            for t in walk_foreign(folder) if t.suffix == ".tsv" and not t.with_suffix(".json").exists()]


def _relative(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _range_text(column: str) -> str:
    return "F1 runs from 0 to 1" if column == "f1Score" else f"{column} runs from 0 to 100 (percent)"
