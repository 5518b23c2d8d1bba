"""What a value in a document dawnbench reads can physically be: one declaration per field, from which the
check, the error and the documentation's field table all come (pydantic; docs/reference/documents.md).

    class Evaluation:                       # a pydantic dataclass of records/record.py
        epoch: Epochs                       # a number from 0 to 1,000,000
        timed_s: Seconds                    # a number of seconds from 0 to 100,000,000
    evaluation = schema.load(Evaluation, doc, path)     # or a FileError naming path and field

The types below carry their bounds: a time is finite, not negative and under ``MAX_SECONDS``; a size or a
shape's dimension is a positive integer under its cap; a share is from 0 to 1; a name is a string of
bounded length. Numbers are strict — ``"1.5"`` is not a number, ``true`` is not an integer — and NaN and
the infinities are refused (JSON has neither; :func:`dawnbench.io.parse_json` refuses them first).

Two kinds of failure, as the readers use them: a document-level field that cannot be true refuses the
document (:func:`load`: a :class:`~dawnbench.errors.FileError`, one paragraph naming the file and the field
and saying what it can be); a row that cannot be true is left out with a note naming the row and the field
(:func:`rows`), and the rest of the document is read.
"""

from __future__ import annotations

import datetime as dt
import json
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, TypeAdapter, ValidationError

from dawnbench import bounds
from dawnbench.bounds import (  # the limits are declared once, in bounds.py's table
    ABOVE_ROOF,
    MAX_BYTE_RATE,
    MAX_BYTES,
    MAX_COUNT,
    MAX_DIM,
    MAX_EPOCHS,
    MAX_FLOP_RATE,
    MAX_FLOPS,
    MAX_MESSAGE,
    MAX_SECONDS,
    MAX_SEED,
    MAX_TEXT,
    MAX_USD,
    MAX_USD_PER_HOUR,
    MIN_RATE,
    RESOLUTION,
)
from dawnbench.errors import FileError

T = TypeVar("T")



def _number(low: float | None = None, high: float | None = None, *, low_open: bool = False, integer: bool = False,
            unit: str = "", resolution: float | None = None) -> Any:
    """A number type with its bounds; ``resolution``: the smallest non-zero magnitude it can physically hold (a
    clock does not resolve 1e-300 s), so that no quotient by it overflows."""
    bounds: dict[str, Any] = {}
    if low is not None:
        bounds["gt" if low_open else "ge"] = low
    if high is not None:
        bounds["le"] = high
    if integer:
        return Annotated[int, Field(strict=True, description=unit, **bounds)]
    if resolution is None:
        return Annotated[float, Field(strict=True, allow_inf_nan=False, description=unit, **bounds)]

    def resolved(value: float) -> float:
        if 0 < abs(value) < resolution:
            raise ValueError(f"must be {least} ({unit}), not {value:g}")
        return value
    least = f"at least {resolution:g}" if low == 0 and low_open else f"0 or at least {resolution:g}"
    return Annotated[float, Field(strict=True, allow_inf_nan=False, description=f"{unit}; {least}", **bounds),
                     AfterValidator(resolved)]


Seconds = _number(0, MAX_SECONDS, unit="seconds", resolution=RESOLUTION)
PositiveSeconds = _number(0, MAX_SECONDS, low_open=True, unit="seconds", resolution=RESOLUTION)
Epochs = _number(0, MAX_EPOCHS, unit="epochs", resolution=RESOLUTION)
PositiveEpochs = _number(0, MAX_EPOCHS, low_open=True, unit="epochs", resolution=RESOLUTION)
Count = _number(0, MAX_COUNT, integer=True, unit="a count")
PositiveCount = _number(1, MAX_COUNT, integer=True, unit="a count")
Dim = _number(1, MAX_DIM, integer=True, unit="a size")
Seed = _number(0, MAX_SEED, integer=True, unit="a seed")
Share = _number(0, 1, unit="a share")
OfRoof = _number(0, ABOVE_ROOF, unit="of the roof its document measured")
Flops = _number(0, MAX_FLOPS, unit="FLOP")
Bytes = _number(0, MAX_BYTES, unit="bytes")
FlopRate = _number(0, MAX_FLOP_RATE, low_open=True, unit="FLOP/s", resolution=MIN_RATE)
ByteRate = _number(0, MAX_BYTE_RATE, low_open=True, unit="bytes/s", resolution=MIN_RATE)
Usd = _number(0, MAX_USD, unit="USD")
UsdPerHour = _number(0, MAX_USD_PER_HOUR, low_open=True, unit="USD per hour")
NonNegative = _number(0)
Intensity = _number(0, MAX_FLOPS, unit="FLOP per byte", resolution=RESOLUTION)   # 5e-324 is no intensity
Text = Annotated[str, Field(strict=True, max_length=MAX_TEXT)]


def _printed_as_it_is(value: str) -> str:
    """A name prints as it is: composed (NFC, so that two spellings of "é" are one task) and without controls,
    bidirectional marks or zero-width characters (Unicode's C categories), which print as something else."""
    if unicodedata.normalize("NFC", value) != value:
        raise ValueError(f"is {_shown(value)}, not in Unicode's composed form (NFC): write it with composed "
                         "characters, as a keyboard types them")
    hidden = next((c for c in value if unicodedata.category(c).startswith("C") or c in "\u2028\u2029"), None)
    if hidden is not None:
        raise ValueError(f"holds U+{ord(hidden):04X} ({unicodedata.name(hidden, 'a control character')}): a name "
                         "holds no controls, bidirectional marks or zero-width characters")
    return value


Name = Annotated[str, Field(strict=True, max_length=MAX_TEXT), AfterValidator(_printed_as_it_is)]
# The scripts a name may mix with Latin letters (Unicode TR39's "highly restrictive" profile: Han, Hiragana, Katakana,
# Hangul); any other beside Latin — Cyrillic, Greek, Armenian… — holds letters that look like Latin ones.
WITH_LATIN = {"LATIN", "CJK", "HIRAGANA", "KATAKANA", "HANGUL"}


def _named(value: str) -> str:
    """A run's task and entry name what they are: not blank, no space around them or other than U+0020 within,
    in Unicode's compatibility form (NFKC: "ｍｎｉｓｔ" is "mnist"), and not Latin letters mixed with another script's
    but ``WITH_LATIN``'s, which may look alike ("mnіst" with a Cyrillic і): a name that looks like a task's is that
    task's."""
    if not value.strip():
        raise ValueError("is blank: a run's record names what it ran (its task and its entry)")
    space = next((c for c in value if c.isspace() and c != " "), None)
    if value != value.strip() or space is not None:
        raise ValueError(f"is {_shown(value)}: a name has no space around it, and no space but U+0020 within"
                         + (f" (it holds U+{ord(space):04X}, {unicodedata.name(space, 'a space')})" if space else ""))
    if unicodedata.normalize("NFKC", value) != value:
        raise ValueError(f"is {_shown(value)}, which reads as {_shown(unicodedata.normalize('NFKC', value))}: write "
                         "it as that (Unicode's compatibility form, NFKC)")
    scripts = {unicodedata.name(c, "").split(" ")[0] for c in value if c.isalpha()}
    if "LATIN" in scripts and scripts - WITH_LATIN:
        odd = next(c for c in value if c.isalpha() and unicodedata.name(c, "").split(" ")[0] not in WITH_LATIN)
        raise ValueError(f"is {_shown(value)}: it mixes Latin letters with {unicodedata.name(odd)} (U+{ord(odd):04X}), "
                         "which looks like a Latin one; write the name in one script")
    return value


Label = Annotated[Name, AfterValidator(_named)]          # a name nothing can be without: a run's task and entry


def printed_sentence(value: str) -> str:
    """A sentence a command prints as it is (a monitor's, a note): without controls, bidirectional marks or
    zero-width characters, which would print a line of their own or turn the text around (Unicode's C categories)."""
    hidden = next((c for c in value if unicodedata.category(c).startswith("C") or c in "\u2028\u2029"), None)
    if hidden is not None:
        raise ValueError(f"holds U+{ord(hidden):04X} ({unicodedata.name(hidden, 'a control character')}): a sentence "
                         "printed to a terminal holds no controls, bidirectional marks or zero-width characters")
    return value


def _iso_8601(value: str) -> str:
    if value:
        try:
            dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"is {_shown(value)}, not a date and time in ISO 8601 (2026-11-28T07:44:00+00:00)") from None
    return value


Moment = Annotated[str, Field(strict=True, max_length=64), AfterValidator(_iso_8601)]   # ISO 8601, or "" (unknown)
Message = Annotated[str, Field(strict=True, max_length=MAX_MESSAGE)]
Sentence = Annotated[str, Field(strict=True, min_length=1, max_length=MAX_MESSAGE), AfterValidator(printed_sentence)]
# A folder as written: a name that is not UTF-8 reaches JSON as lone surrogates, which no reader parses as text; read
# as its bytes written out (\udc9b), the same way a page shows it.
PathText = Annotated[str, BeforeValidator(lambda v: v.encode("utf-8", "backslashreplace").decode("utf-8")
                                          if isinstance(v, str) else v), Field(strict=True, max_length=MAX_TEXT)]
Flag = Annotated[bool, Field(strict=True)]
Precision = Literal["fp32", "tf32", "bf16", "fp16"]     # a run's or a row's (SPEC §12)

_ADAPTERS: dict[Any, TypeAdapter] = {}


def _adapter(kind: Any) -> TypeAdapter:
    if kind not in _ADAPTERS:
        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]


def where(loc: Iterable[Any]) -> str:
    """A pydantic location as the field's path in the document: ``evals[3].timed_s``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def problem(err: ValidationError, prefix: str = "") -> str:
    """The first thing wrong, in words: ``field 'evals[0].timed_s' must be ≤ 100,000,000, not 1e+308``."""
    first = err.errors(include_url=False)[0]
    name = where([*([prefix] if prefix else []), *first["loc"]])
    message = first.get("msg", "is not what it can be")
    if first["type"] == "value_error":         # a rule of the declaration's own, in its own words
        said = message.removeprefix("Value error, ")
        if said.startswith("."):
            return f"field '{name}{said}"
        return f"field '{name}': {said}" if name else said
    if first["type"] == "missing":
        return f"field '{name}' is missing"
    ctx = first.get("ctx") or {}
    signs = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    limits = [f"{signs[k]} {bounds.number_text(v)}" for k, v in ctx.items() if k in signs]
    if limits:
        said = f"must be {' and '.join(limits)}"
    elif first["type"] == "finite_number":
        said = "must be a finite number"
    else:
        said = "must be" + message.removeprefix("Input should be") if message.startswith("Input should be") \
            else message[0].lower() + message[1:]
    return f"field '{name or 'the document'}' {said}, not {_shown(first.get('input'))}"


def load(kind: type[T] | Any, doc: Any, path: str | Path, fix: str = "The file was edited or damaged; write it again "
         "with the command that makes it.") -> T:
    """``doc`` as ``kind`` (a pydantic dataclass or model, or any type pydantic validates), every field checked
    against its declaration; a :class:`FileError` naming ``path`` and the first field that cannot be true."""
    try:
        return _adapter(kind).validate_python(doc)
    except ValidationError as err:
        raise FileError(path, f"{problem(err)}. {fix}") from None


def why_not(kind: type[T] | Any, value: Any, prefix: str = "") -> str | None:
    """Why ``value`` cannot be a ``kind`` (the first field that cannot be true, named under ``prefix``), or None."""
    try:
        _adapter(kind).validate_python(value)
    except ValidationError as err:
        return problem(err, prefix)
    return None


def rows(kind: type[T] | Any, items: list[Any], path: str | Path, field: str = "rows") -> tuple[list[T], list[str]]:
    """Each item of ``items`` as ``kind``; those that cannot be true are left out, each with a note naming it and
    its field (``rows[12].median_s …``)."""
    kept, notes = [], []
    adapter = _adapter(kind)
    for i, item in enumerate(items):
        try:
            kept.append(adapter.validate_python(item))
        except ValidationError as err:
            notes.append(f"{path}: {field}[{i}] left out: {problem(err)}")
    return kept, notes


def fields(kind: Any) -> list[dict[str, str]]:
    """The declaration of ``kind``'s fields as a table for the docs: name, whether it is required, what it can be."""
    schema = _adapter(kind).json_schema(mode="validation")
    required = set(schema.get("required", []))
    out = []
    for name, prop in schema.get("properties", {}).items():
        out.append({"name": name, "required": "yes" if name in required else "no", "can_be": _can_be(prop, schema)})
    return out


def _can_be(prop: dict[str, Any], schema: dict[str, Any]) -> str:
    """A JSON-schema property in words: ``a number ≥ 0 and ≤ 100,000,000 (seconds), or null``."""
    options = prop.get("anyOf") or [prop]
    words = []
    for option in options:
        if "$ref" in option:
            target = schema.get("$defs", {}).get(option["$ref"].rsplit("/", 1)[-1], {})
            words.append("one of " + ", ".join(map(str, target["enum"])) if "enum" in target else
                         f"an object ({option['$ref'].rsplit('/', 1)[-1]})")
            continue
        kind = {"number": "a number", "integer": "an integer", "string": "a string", "boolean": "true or false",
                "array": "a list", "object": "an object", "null": "null"}.get(option.get("type", ""), "any value")
        limits = [f"{sign} {bounds.number_text(option[key])}" for key, sign in (("exclusiveMinimum", ">"), ("minimum", "≥"),
                                                              ("maximum", "≤")) if key in option]
        if "enum" in option:
            kind = "one of " + ", ".join(map(str, option["enum"]))
        if option.get("maxLength"):
            limits.append(f"at most {option['maxLength']:,} characters")
        words.append(kind + (" " + " and ".join(limits) if limits else "")
                     + (f" ({option['description']})" if option.get("description") else ""))
    return ", or ".join(words)
