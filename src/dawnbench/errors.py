"""User-facing errors.

Every problem caused by input (a file, a flag, a missing tool) is raised as a
:class:`DawnbenchError` whose message is one paragraph naming the file, field or
line and saying how to fix it. The CLI prints that paragraph and exits with code 2;
it never shows a traceback for these.
"""

from __future__ import annotations

from pathlib import Path


def clipped(text: str, limit: int = 60) -> str:
    """``text`` as a message quotes what it was handed: whole, or its first ``limit`` characters and how many there
    were (a 100 KB value is not echoed back)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


# What a terminal would act on rather than print, written out instead (\x1b, \u202e): C0 controls but tab and
# newline, DEL and C1; a name's bytes that are not UTF-8 (Python holds them as lone surrogates, which would go out
# raw: 0x9b is CSI to an 8-bit terminal); and the bidirectional controls, which turn the rest of a line around.
CONTROLS = {**{c: f"\\x{c:02x}" for c in (*range(0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0))},
            **{c: f"\\x{c - 0xdc00:02x}" for c in range(0xdc80, 0xdd00)},
            **{c: f"\\u{c:04x}" for c in (0x061c, 0x200e, 0x200f, *range(0x202a, 0x202f), *range(0x2066, 0x206a))}}
ONE_LINE = {**CONTROLS, 0x0a: "\\n"}


def printable(text: str, one_line: bool = False) -> str:
    """``text`` with its control characters written out (``\\x1b``): how a hand-edited field or a folder's name is
    shown on a terminal or in a figure; ``one_line``: its newlines too (an error is one paragraph, and a name holding
    a newline must not print a line that looks like a second error)."""
    return text.translate(ONE_LINE if one_line else CONTROLS)


class DawnbenchError(Exception):
    """An error the user can fix; ``str(err)`` is the whole message."""


class DataError(DawnbenchError):
    """A dataset could not be fetched, read or validated."""


class EntryError(DawnbenchError):
    """An entry could not be found or loaded, or does not fit the contract."""


class FileError(DawnbenchError):
    """A file that cannot be read as what it should be: ``path[:line]: reason``. Commands that
    report problems file by file (validate, analyze, report) keep the parts apart."""

    def __init__(self, path: str | Path, reason: str, line: int | None = None):
        self.path, self.reason, self.line = str(path), reason, line
        super().__init__(f"{self.path}{f':{line}' if line else ''}: {reason}")
