"""The op table, ``ops.tsv``: what ``dawnbench profile`` and a census leave, what ``explain``, ``predict``,
``classes`` and ``roofline`` read — its columns, written, declared and checked here.

    write_ops(rows, folder / "ops.tsv")
    rows = read_ops(folder, notes)          # a row that cannot be true is left out, with a note naming its line
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads typing_extensions' TypedDict on Python < 3.12

from dawnbench import bounds, schema
from dawnbench.errors import FileError
from dawnbench.io import atomic_write_text, read_foreign_text, read_json

TSV_COLUMNS = ("op", "shapes", "dtype", "precision", "calls", "time_s", "share", "flops", "bytes",
               "intensity", "flops_per_s", "bytes_per_s", "fraction_of_roof", "bound", "args", "layout", "call")
OLDER_COLUMNS = (TSV_COLUMNS[:-2], TSV_COLUMNS[:-3])
# A census (profiling/census.py): the same columns and each op's phase; its times are 0 (nothing ran).
PHASES = ("forward", "loss", "backward", "optimizer")
CENSUS_COLUMNS = (*TSV_COLUMNS, "phase")   # a profile of before ``layout`` and ``call``; before ``args``
UNMATCHED = "(not in the census step)"   # a window's op the census step did not run


def write_ops(rows: list[dict[str, Any]], path: Path, columns: tuple[str, ...] = TSV_COLUMNS) -> None:
    """The op table as ``ops.tsv`` (what ``dawnbench profile`` leaves, :func:`read_ops` reads; a census's has
    ``CENSUS_COLUMNS``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow(["" if r[c] is None else (f"{r[c]:.6g}" if isinstance(r[c], float) else r[c])
                         for c in columns])
    atomic_write_text(path, buffer.getvalue())


TEXT_COLUMNS = {"op", "shapes", "dtype", "precision", "bound", "args", "layout", "call", "phase"}
MAX_CALLS = 1e9              # calls of one op in a profiled window: no window holds more
MAX_PARAMETERS = 10**13      # no model has been trained at ten trillion parameters: a config past it is a typo
# What each recorded argument can be (PROBLEM_ARGS): a stride, dilation, group count, layer count or width of
# at least 1, a padding of at least 0, a flag or mode a small whole number.
ARG_LOW = {"stride": 1, "dilation": 1, "groups": 1, "hidden_size": 1, "num_layers": 1, "padding": 0,
           "output_padding": 0, "transposed": 0, "mode": 0, "batch_first": 0, "bidirectional": 0,
           "tensors": 1, "chunks": 1, "lists": 1}      # the last three: a census's multi-tensor op (census.py)
ARG_HIGH = {"transposed": 1, "batch_first": 1, "bidirectional": 1, "mode": 4, "lists": 16}


def parse_shapes(text: str, largest: int = schema.MAX_DIM) -> list[list[int]]:
    """``"64x3x32x32, 10, scalar"`` → [[64, 3, 32, 32], [10], []]: each dimension a positive integer up to
    ``largest`` (a ValueError says which is not)."""
    out = []
    for part in text.split(", ") if text else []:
        if part in ("", "scalar"):
            out.append([])
            continue
        dims = []
        for d in part.split("x"):
            if not (d.isascii() and d.isdigit()) or not 1 <= int(d) <= largest:
                raise ValueError(f"shapes holds {part!r}: a tensor's dimensions are whole numbers from 1 to "
                                 f"{largest:,}")
            dims.append(int(d))
        out.append(dims)
    return out


def parse_args(text: str) -> dict[str, list[int]]:
    """``"stride=2x2 padding=1x1 groups=1"`` → {"stride": [2, 2], "padding": [1, 1], "groups": [1]}, each value in
    its range (ARG_LOW, ARG_HIGH); arguments of other names are not read."""
    out = {}
    for item in text.split():
        name, _, value = item.partition("=")
        if name not in ARG_LOW:
            continue
        parts = value.split("x")
        if not all(p.isascii() and p.lstrip("-").isdigit() for p in parts) or not all(
                ARG_LOW[name] <= int(p) <= ARG_HIGH.get(name, schema.MAX_DIM) for p in parts):
            raise ValueError(f"args holds {item!r}: {name} is a whole number from {ARG_LOW[name]} to "
                             f"{ARG_HIGH.get(name, schema.MAX_DIM):,}")
        out[name] = [int(p) for p in parts]
    return out


class OpRow(TypedDict):
    """A row of ``ops.tsv`` (what :func:`write_ops` writes), its numbers as numbers."""

    op: schema.Text                         # the aten op (aten::mm)
    shapes: schema.Text                     # its inputs' shapes: 16x1760, 1760x1760
    dtype: schema.Text                      # its first input's dtype
    precision: schema.Precision             # the roof it is held against
    calls: Annotated[int, Field(strict=True, ge=1, le=MAX_CALLS)]  # in the profiled window
    time_s: schema.Seconds                  # all its calls' time (outermost ops: their children inside)
    share: schema.Share | None              # of all the ops' time
    flops: schema.Flops | None              # of all its calls, counted from shapes (profiling/flops.py)
    bytes: schema.Bytes | None              # moved by all its calls (profiling/flops.py)
    intensity: schema.NonNegative | None    # FLOP per byte
    flops_per_s: schema.NonNegative | None
    bytes_per_s: schema.NonNegative | None
    fraction_of_roof: schema.OfRoof | None  # its FLOP/s over the FLOP roof of its precision
    bound: schema.Text                      # memory, compute (its intensity against the ridge), overhead or unknown
    args: schema.Text                       # its scalar arguments: stride=1x1 padding=0x0
    layout: schema.Text                     # each tensor input's memory order: c, cl (channels-last), t, s
    call: str                               # the whole call as one line of JSON (opcalls/calls.py), or empty


def _call_op(call: str) -> str:
    """The ATen op a recorded call names, without its overload (``aten::mm``)."""
    return str(json.loads(call)["op"]).split(".")[0]


def _layout_fits(layout: str, dims: list[list[int]]) -> bool:
    """A layout column names one memory order per tensor input (as many as its shapes, in order), each one of
    ``c``, ``cl``, ``t``, ``s``."""
    parts = [p.strip() for p in layout.split(",")]
    return all(p in ("c", "cl", "t", "s") for p in parts) and len(parts) == len(dims)


def grouped_notes(notes: list[str]) -> list[str]:
    """Notes of the form ``FILE:LINE: what`` that say the same thing of several lines, as one note naming the lines
    (the first eight, then how many more), in the order first met; any other note as it is."""
    lines: dict[tuple[str, str], list[str]] = {}
    for note in notes:
        where, _, what = note.partition(": ")
        path, colon, line = where.rpartition(":")
        key = (path, what) if colon and line.isdigit() else (note, "")
        lines.setdefault(key, []).append(line)
    out = []
    for (path, what), numbers in lines.items():
        if not what:
            out.append(path)
            continue
        shown = ", ".join(numbers[:8]) + (f" and {len(numbers) - 8} more" if len(numbers) > 8 else "")
        out.append(f"{path}:{shown}: {what}" if len(numbers) == 1 else f"{path}, lines {shown}: {what}")
    return out


PROFILER_RESOLUTION_S = 1e-6   # torch.profiler's events are timed in microseconds: a row's time may be that short


def _roofs(folder: Path) -> dict[str, Any]:
    """The profile's own roofs (its summary.json's), or {} where there is none to read: then every row is held
    to the fastest device's rate (bounds.DEVICE_FLOP_RATE)."""
    summary = folder / "summary.json"
    if summary.is_symlink() or not summary.is_file():
        return {}
    try:
        roofs = (read_json(summary, "profile") or {}).get("roofs")
    except FileError:           # the summary's own reader says what is wrong with it
        return {}
    return roofs if isinstance(roofs, dict) else {}


def _above_roof(row: dict[str, Any], roofs: dict[str, Any] | None) -> str | None:
    """Why a row's work cannot have taken its time (None: it can): its FLOPs at most what the machine's roof of its
    precision computes in that time and the profiler's resolution, by ``bounds.ABOVE_ROOF`` — without a measured
    roof of that precision (or with one past its kind's), the fastest such device's rate; its bytes at most the
    fastest device's copy rate."""
    measured = (roofs or {}).get("flops") or {}
    roof = measured.get(row["precision"]) if isinstance(measured, dict) else None
    kind = "cpu" if (roofs or {}).get("device") == "cpu" else "gpu"     # a CPU's measured roof is held to a CPU's rate
    if not isinstance(roof, (int, float)) or isinstance(roof, bool) or not 0 < roof <= bounds.DEVICE_FLOP_RATE[kind]:
        roof, whose = bounds.DEVICE_FLOP_RATE[kind], f"the fastest {kind}'s"
    else:
        roof, whose = roof * bounds.ABOVE_ROOF, f"this machine's measured {row['precision']} roof × {bounds.ABOVE_ROOF:g}"
    time_s = (row.get("time_s") or 0.0) + PROFILER_RESOLUTION_S
    for name, value, rate, of in (("flops", row.get("flops"), roof, whose),
                                  ("bytes", row.get("bytes"), max(bounds.DEVICE_BYTE_RATE.values()),
                                   "the fastest device's copy rate")):
        if value and value / time_s > rate:
            return (f"{name} {value:g} in {row.get('time_s') or 0:g} s is {value / time_s:.3g}/s, past {rate:.3g}/s "
                    f"({of}): the work cannot have taken that time")
    return None


def _check_call(call: str, allocates: bool) -> str | None:
    from dawnbench.opcalls.calls import check_call  # torch, loaded only where a table holds a call to check

    return check_call(call, allocates)


def read_ops(out: Path, notes: list[str] | None = None, census: bool = False) -> list[dict[str, Any]]:
    """The op table a profile wrote to ``out/ops.tsv``, numbers as numbers, each row checked against
    :class:`OpRow`, its shapes and its args (``dims``, ``arg_values``: parsed). A row that cannot be true — a zero
    or negative dimension, a stride of 0, a negative time — is left out with a note in ``notes`` naming its line
    and field; a table that is not the one ``dawnbench profile`` writes (its header, its columns, no row left, no
    time in all) is one paragraph naming the file and the line. ``census``: the table of ``profile --census``
    (a phase a row, no times)."""
    # Long: one check per column and per kind of impossible row, each its own note naming the line.
    path = Path(out) / "ops.tsv"
    fix = "It is not the op table `dawnbench profile` writes; profile again."
    try:
        lines = list(csv.reader(io.StringIO(read_foreign_text(path, "profile")), delimiter="\t"))
    except csv.Error as err:
        raise FileError(path, f"not a tab-separated table ({err}). {fix}") from None
    if not lines:
        raise FileError(path, f"empty. {fix}")
    columns = tuple(lines[0])
    expected = CENSUS_COLUMNS if census else TSV_COLUMNS
    if columns != expected and (census or columns not in OLDER_COLUMNS):
        raise FileError(path, f"its header is not {', '.join(expected)}. {fix}", line=1)
    if len(lines) == 1:
        raise FileError(path, f"holds no ops, only its header. {fix}")
    rows, left_out, unreplayable = [], [], []
    roofs = None if census else _roofs(Path(out))
    for number, values in enumerate(lines[1:], 2):
        if len(values) != len(columns):
            raise FileError(path, f"{len(values)} columns where the header has {len(columns)}. {fix}", line=number)
        why = None
        row: dict[str, Any] = {"args": "", "layout": "", "call": "", "line": number}
        for column, value in zip(columns, values):
            if column in TEXT_COLUMNS:
                row[column] = value
            elif value == "":
                row[column] = None
            else:
                try:
                    row[column] = bounds.parse_float(value)
                except ValueError:
                    raise FileError(path, f"{column} is {value[:40]!r}, not a number. {fix}", line=number) from None
        if isinstance(row.get("calls"), float) and row["calls"].is_integer():
            row["calls"] = int(row["calls"])
        why = schema.why_not(OpRow, row)
        if why is None and not census:
            why = _above_roof(row, roofs)
        if why is None and census and row["phase"] not in PHASES:
            why = f"phase {row['phase'][:20]!r} is not one of {', '.join(PHASES)}"
        if why is None and row["shapes"] == UNMATCHED:
            why = "an op the profiler timed in the window that the census step did not run (no shapes of its own)"
        if why is None:
            try:
                # a census's multi-tensor row lists each list's elements in all: every parameter, not one dimension
                listed = census and "tensors=" in row["args"]
                row["dims"] = parse_shapes(row["shapes"], MAX_PARAMETERS if listed else schema.MAX_DIM)
                row["arg_values"] = parse_args(row["args"])
            except ValueError as err:
                why = str(err)
            broken = _check_call(row["call"], allocates=not census) if why is None and row["call"] else None
            if broken is None and row["call"] and _call_op(row["call"]) != row["op"]:
                broken = f"it calls {_call_op(row['call'])[:60]}, not the row's {row['op'][:60]}"
            if why is None and row["layout"] and not _layout_fits(row["layout"], row["dims"]):
                unreplayable.append(f"{path}:{number}: its layout {row['layout'][:60]!r} does not name one memory "
                                    "order (c, cl, t or s) per shape of the row: read as unknown")
                row["layout"] = ""
            if broken:          # the row stands, without a replay
                row["call"] = ""
                unreplayable.append(f"{path}:{number}: its call cannot be made again ({broken}): costed as if "
                                    "it had none")
        if why:
            left_out.append(f"{path}:{number}: left out: {why}")
        else:
            rows.append(row)
    if notes is not None:
        notes += left_out + unreplayable
    if not rows:
        raise FileError(path, f"no row of it can be used ({left_out[0].split(': left out: ', 1)[1]}). {fix}")
    if not census and not sum(r["time_s"] for r in rows) > 0:
        raise FileError(path, f"its ops take no time in all: no share of time can be given. {fix}")
    return rows

