"""User-facing errors.

Every problem caused by input (a file, a flag, a missing tool) is raised as a
:class:`DawnbenchError` whose message is one paragraph naming the file, field or
line and saying how to fix it. The CLI prints that paragraph and exits with code 2;
it never shows a traceback for these.
"""


class DawnbenchError(Exception):
    """An error the user can fix; ``str(err)`` is the whole message."""


class DataError(DawnbenchError):
    """A dataset could not be fetched, read or validated."""


class EntryError(DawnbenchError):
    """An entry could not be found or loaded, or does not fit the contract."""
