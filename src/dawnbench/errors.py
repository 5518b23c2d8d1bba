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
