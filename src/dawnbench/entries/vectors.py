"""Pre-trained word vectors in GloVe's text format, read for the words a recipe needs
(``squad-drqa --set vectors=PATH``, ``squad-bidaf --set glove=PATH``).

The format: one word per line, then ``dim`` numbers, all separated by single spaces.
``glove.840B.300d.txt`` has words that contain spaces themselves (``". . ."``), so a line's
word is everything before its last ``dim`` fields — as DrQA's preprocessing reads it. Words
are compared after Unicode NFD normalisation (DrQA's), case kept.

The file is read once in whole, inside the run; before it, only its head:

* ``check_vectors``, before the run starts (untimed; the first ``HEAD_LINES`` lines, well under
  a second): the path is a readable file, UTF-8, not a word2vec file (whose first line is a
  header of two counts), and its vectors have ``dim`` numbers — a file of 50 or 301 dimensions is
  named as such, with the setting that would take it — every one a finite float32 (no ``nan``,
  no ``inf``, nothing beyond ±3.4e38). Each problem is one paragraph naming the file and the line,
  and exit 2 — the run never starts.
* ``read_vectors``, inside the run (timed, as DrQA's preprocessing is): every line's number of
  fields, and the numbers of the wanted words only (parsing 2.2 million lines of 300 numbers would
  cost minutes), held to the same rules. What only the whole file shows — a line cut short far
  down, a bad number in a wanted word's vector, a file holding none of the training words — ends
  the run as ``aborted`` with the same kind of paragraph in its record.
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Collection, Iterator
from pathlib import Path

import numpy as np

from dawnbench.errors import EntryError

HEAD_LINES = 1000          # what the check before the run reads


def normalize(word: str) -> str:
    return unicodedata.normalize("NFD", word)


def check_vectors(path: str, dim: int, flag: str, dim_key: str) -> None:
    """Refuse, before anything runs, a file whose head is not GloVe's text format of ``dim`` (the entry's
    ``--set DIM_KEY=``)."""
    file = _file(path, flag)
    counts: dict[int, int] = {}
    for number, line in itertools.islice(_lines(file, flag), HEAD_LINES):
        fields = line.split(" ")
        if number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields):
            raise EntryError(f"{file}, line 1: '{line}' is a word2vec header (a count of words and of "
                             f"dimensions), not GloVe's format ({flag}{path}). Delete that line.")
        if len(fields) > dim:                 # its last dim fields: numbers, each finite
            _vector(line, dim, file, number, flag, path)
        # the numbers at the end of the line; a word may itself be a number ("1") or hold spaces (". . .")
        numeric = len(list(itertools.takewhile(_is_number, reversed(fields[1:]))))
        if numeric < dim:
            raise EntryError(_dimension(file, number, numeric, dim, flag, path, dim_key) if number == 1 else
                             f"{file}, line {number}: {numeric} numbers after the word where {dim} were expected "
                             f"({flag}{path}). Each line must be a word and {dim} numbers separated by spaces.")
        counts[numeric] = counts.get(numeric, 0) + 1
    usual = max(counts, key=counts.__getitem__)
    if usual != dim:          # most lines hold more numbers: a file of another dimension
        raise EntryError(_dimension(file, 1, usual, dim, flag, path, dim_key))


def _dimension(file: Path, number: int, found: int, dim: int, flag: str, path: str, dim_key: str) -> str:
    return (f"{file}, line {number}: {found} numbers after the word where {dim} were expected ({flag}{path}): a file "
            f"of {found}-dimensional vectors. Use a {dim}-dimensional file, or tell the entry the file's dimension "
            f"(--set {dim_key}={found}).")


def check_vectors_option(overrides: dict, defaults: dict, key: str, dim_key: str) -> None:
    """An entry's ``check_hparams`` for a ``--set KEY=PATH`` vectors file of ``DIM_KEY`` dimensions."""
    if overrides.get(key):
        check_vectors(overrides[key], overrides.get(dim_key, defaults[dim_key]), f"--set {key}=", dim_key)


def read_vectors(path: str, wanted: Collection[str], dim: int, flag: str) -> dict[str, np.ndarray]:
    """Word of ``wanted`` → its float32 vector of ``dim``, for every wanted word the file holds."""
    file = _file(path, flag)
    by_form = {normalize(w): w for w in wanted}
    found: dict[str, np.ndarray] = {}
    for number, line in _lines(file, flag):
        spaces = line.count(" ")
        if spaces < dim:
            raise EntryError(f"{file}, line {number}: {spaces} value(s) after the word where {dim} were expected "
                             f"({flag}{path}). Each line must be a word and {dim} numbers separated by spaces; the "
                             "file may be cut short there.")
        word = by_form.get(normalize(line.split(" ", 1)[0] if spaces == dim else line.rsplit(" ", dim)[0]))
        if word is not None and word not in found:
            found[word] = _vector(line, dim, file, number, flag, path)
    if not found and wanted:
        raise EntryError(f"{file}: none of the {len(wanted)} words of the training data is in it ({flag}{path}). "
                         "Is it an English word-vector file in GloVe's text format?")
    return found


def _file(path: str, flag: str) -> Path:
    file = Path(path).expanduser()
    if file.is_dir():
        raise EntryError(f"{flag}{path}: that is a folder. Pass the word-vector file itself (e.g. "
                         "glove.840B.300d.txt inside it).")
    if not file.is_file():
        raise EntryError(f"{flag}{path}: no such file. Pass a word-vector file in GloVe's text format (e.g. "
                         "glove.840B.300d.txt from https://nlp.stanford.edu/projects/glove/), or leave it empty "
                         "to learn the word vectors from scratch.")
    return file


def _lines(file: Path, flag: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of every non-empty line; undecodable text or an unreadable file as one paragraph."""
    any_line = False
    try:
        with open(file, encoding="utf-8", errors="strict") as f:
            for number, line in enumerate(f, 1):
                line = line.rstrip("\n").rstrip("\r")
                if line:
                    any_line = True
                    yield number, line
    except UnicodeDecodeError as err:
        raise EntryError(f"{file}: not UTF-8 text ({err.reason} at byte {err.start} of a line) ({flag}{file}). "
                         "GloVe files are UTF-8; pass the .txt file, not the .zip.") from None
    except OSError as err:
        raise EntryError(f"{file}: cannot be read ({err.strerror or err}) ({flag}{file}).") from None
    if not any_line:
        raise EntryError(f"{file}: holds no lines ({flag}{file}). Pass a word-vector file in GloVe's text format.")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _vector(line: str, dim: int, file: Path, number: int, flag: str, path: str) -> np.ndarray:
    """The line's last ``dim`` fields as float32, each a finite number (one paragraph if not)."""
    word, *values = line.rsplit(" ", dim)
    try:
        with np.errstate(over="ignore"):
            vector = np.array(values, dtype=np.float32)
    except ValueError:
        raise EntryError(f"{file}, line {number}: the vector of {word!r} holds a value that is not a number "
                         f"({flag}{path}). Fix or remove the line.") from None
    if not np.isfinite(vector).all():
        bad = values[int(np.flatnonzero(~np.isfinite(vector))[0])]
        raise EntryError(f"{file}, line {number}: the vector of {word!r} holds {bad}, which is not a finite "
                         f"float32 ({flag}{path}); word vectors must be finite numbers within ±3.4e38. Fix or "
                         "remove the line.")
    return vector
