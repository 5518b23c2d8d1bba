"""Pre-trained word vectors in GloVe's text format, read for the words a recipe needs
(``squad-drqa --set vectors=PATH``, ``squad-bidaf --set glove=PATH``).

The format: one word per line, then ``dim`` numbers, all separated by single spaces.
``glove.840B.300d.txt`` has words that contain spaces themselves (``". . ."``), so a line's
word is everything before its last ``dim`` fields — as DrQA's preprocessing reads it. Words
are compared after Unicode NFD normalisation (DrQA's), case kept.

Two passes, for two purposes:

* ``check_vectors``, before the run starts (untimed; ~10 s for the 5.6 GB glove.840B): every
  line's number of fields, the file's encoding and the first line's numbers. A missing file,
  a word2vec header, a file of another dimension, a line cut short or a bad number on the first
  line is one paragraph naming the file and the line, and exit 2 — the run never starts.
* ``read_vectors``, inside the run (timed, as DrQA's preprocessing is): the numbers of the
  wanted words only (parsing 2.2 million lines of 300 numbers would cost minutes). What only it
  can find — a bad number in a wanted word's vector, a file holding none of the training
  words — ends the run as ``aborted`` with the same kind of paragraph in its record.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection
from pathlib import Path

import numpy as np

from dawnbench.errors import EntryError


def normalize(word: str) -> str:
    return unicodedata.normalize("NFD", word)


def check_vectors(path: str, dim: int, flag: str) -> None:
    """Refuse a file that is not GloVe's text format of ``dim`` before anything runs."""
    _scan(path, {}, dim, flag, first_line=True)


def check_vectors_option(overrides: dict, defaults: dict, key: str, dim_key: str) -> None:
    """An entry's ``check_hparams`` for a ``--set KEY=PATH`` vectors file of ``DIM_KEY`` dimensions."""
    if overrides.get(key):
        check_vectors(overrides[key], overrides.get(dim_key, defaults[dim_key]), f"--set {key}=")


def read_vectors(path: str, wanted: Collection[str], dim: int, flag: str) -> dict[str, np.ndarray]:
    """Word of ``wanted`` → its float32 vector of ``dim``, for every wanted word the file holds."""
    found = _scan(path, {normalize(w): w for w in wanted}, dim, flag, first_line=False)
    if not found and wanted:
        raise EntryError(f"{Path(path).expanduser()}: none of the {len(wanted)} words of the training data is in "
                         f"it ({flag}{path}). Is it an English word-vector file in GloVe's text format?")
    return found


def _scan(path: str, by_form: dict[str, str], dim: int, flag: str, first_line: bool) -> dict[str, np.ndarray]:
    file = Path(path).expanduser()
    if not file.is_file():
        raise EntryError(f"{flag}{path}: no such file. Pass a word-vector file in GloVe's text format (e.g. "
                         "glove.840B.300d.txt from https://nlp.stanford.edu/projects/glove/), or leave it empty "
                         "to learn the word vectors from scratch.")
    found: dict[str, np.ndarray] = {}
    lines = 0
    try:
        with open(file, encoding="utf-8", errors="strict") as f:
            for number, line in enumerate(f, 1):
                line = line.rstrip("\n").rstrip("\r")
                if not line:
                    continue
                lines += 1
                spaces = line.count(" ")
                if spaces < dim:
                    hint = ("a word2vec header line is not GloVe's format: delete it" if number == 1 else
                            "the file may be cut short, or of another dimension")
                    raise EntryError(
                        f"{file}, line {number}: {spaces} value(s) after the word where {dim} were expected "
                        f"({flag}{path}). Each line must be a word and {dim} numbers separated by spaces; {hint}.")
                if first_line and lines == 1:        # the check parses one line's numbers
                    word = line.rsplit(" ", dim)[0]
                else:
                    word = by_form.get(normalize(line.split(" ", 1)[0] if spaces == dim
                                                 else line.rsplit(" ", dim)[0]))
                    if word is None or word in found:
                        continue
                try:
                    found[word] = np.array(line.rsplit(" ", dim)[1:], dtype=np.float32)
                except ValueError:
                    raise EntryError(f"{file}, line {number}: the vector of {word!r} holds a value that is not a "
                                     f"number ({flag}{path}). Fix or remove the line.") from None
    except UnicodeDecodeError as err:
        raise EntryError(f"{file}: not UTF-8 text ({err.reason} at byte {err.start} of a line) ({flag}{path}). "
                         "GloVe files are UTF-8; pass the .txt file, not the .zip.") from None
    except OSError as err:
        raise EntryError(f"{file}: cannot be read ({err.strerror or err}) ({flag}{path}).") from None
    if not lines:
        raise EntryError(f"{file}: holds no lines ({flag}{path}). Pass a word-vector file in GloVe's text format.")
    return found
