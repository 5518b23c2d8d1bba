"""Files: what dawnbench writes survives a kill; what it is handed cannot hurt it.

Writing (one implementation for every package): a temporary file in the same folder,
``fsync``, rename over the target, ``fsync`` of the folder so the rename itself
survives a power loss; the file gets the usual mode (0644 under the common umask).
JSON goes through :func:`json_safe` first (NaN and the infinities are not JSON).
:func:`locked` serialises read-modify-write updates of one file (``infer`` and
``generalize`` adding their figures to a run's ``result.json``); :class:`DiskReserve`
holds back some disk space so that a run's final status can still be written when the
disk fills up.

Reading what someone else wrote (submissions, run folders, profiles, logs, data): a
folder handed to dawnbench is data. :func:`read_foreign` reads regular files only —
never a symbolic link (it could point at any file of the machine) and never a FIFO
or device (which could hang or never end) — up to a size cap per kind of file;
:func:`walk_foreign` lists a folder's regular files without following links and says
what it skipped; :func:`parse_json` is strict JSON with bounded nesting and number
size. Every refusal is a :class:`~dawnbench.errors.DawnbenchError` that names the
file and says what to do, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from dawnbench.errors import DawnbenchError, FileError

# --- writing -----------------------------------------------------------------------


def json_safe(value: Any) -> Any:
    """NaN and infinities are not JSON: an undefined or unbounded figure (a speedup over runs that never
    finished, an interval's open end) is written null. What is then written is strict JSON (``dumps``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def fsync_dir(path: Path) -> None:
    """Make a rename inside ``path`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename is still atomic
    finally:
        os.close(fd)


def _file_mode() -> int:
    """What ``open()`` would give a new file: 0666 less the umask (mkstemp makes 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


class _Guard:
    """Nothing replaced unasked: while a command runs (:func:`replacing_nothing`), a file that exists and that this
    command did not write is refused, unless ``--force`` — or the writer says the file is one of dawnbench's own
    documents it updates by design (``update=True``: ``infer`` adding its figures to a run record)."""

    active = False
    force = False
    written: set[str] = set()


@contextlib.contextmanager
def replacing_nothing(force: bool) -> Iterator[None]:
    """Within the block, every write through this module refuses to replace a file the block did not write,
    unless ``force``."""
    before = (_Guard.active, _Guard.force, _Guard.written)
    _Guard.active, _Guard.force, _Guard.written = True, force, set()
    try:
        yield
    finally:
        _Guard.active, _Guard.force, _Guard.written = before


def refuse_to_replace(*paths: Path) -> None:
    """Before a command writes several files, the ones it may not replace, all named at once (so that nothing is
    half-written): a DawnbenchError, or nothing."""
    taken = [str(p) for p in paths if _Guard.active and not _Guard.force and os.path.abspath(p) not in _Guard.written
             and os.path.lexists(p)]
    if taken:
        raise DawnbenchError(f"{' and '.join(taken)}: {'exist' if len(taken) > 1 else 'exists'}, and this command did "
                             "not write it. dawnbench replaces nothing unasked: move the file away, pass --force to replace "
                             "it, or, where the command takes an output option (--out…), name another output.")


def _may_replace(path: Path, update: bool) -> None:
    if not update:
        refuse_to_replace(path)
    _Guard.written.add(os.path.abspath(path))


@contextlib.contextmanager
def _replacing(path: Path, update: bool = False) -> Iterator[BinaryIO]:
    path = Path(path)
    _may_replace(path, update)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, _file_mode())
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: Path, payload: bytes, update: bool = False) -> None:
    with _replacing(path, update) as f:
        f.write(payload)


def atomic_write_text(path: Path, text: str, update: bool = False) -> None:
    # a folder's name that is not UTF-8 reaches a page as lone surrogates: written \udc9b, never a crash
    atomic_write_bytes(path, text.encode("utf-8", errors="backslashreplace"), update)


def dumps(doc: Any, indent: int | None = 2) -> str:
    """``doc`` as strict JSON: every number finite (:func:`json_safe`), anything JSON has not refused."""
    return json.dumps(json_safe(doc), indent=indent, allow_nan=False, default=str)


def atomic_write_json(path: Path, doc: Any, indent: int = 2, update: bool = False) -> None:
    atomic_write_text(path, dumps(doc, indent) + "\n", update)


def atomic_write_with(path: Path, write: Callable[[BinaryIO], None], update: bool = False) -> None:
    """Atomically write what ``write(file)`` puts into an open binary file (``torch.save``, ``np.save``)."""
    with _replacing(path, update) as f:
        write(f)


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` (``flock`` on the folder itself: no lock file is left
    behind), for read-modify-write updates of the files in it."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def update_json(path: Path, change: Callable[[dict[str, Any]], None], kind: str = "run record",
                check: Callable[[dict[str, Any], Path], Any] | None = None) -> dict[str, Any]:
    """Re-read the JSON object at ``path`` under the folder's lock, apply ``change``, write it back
    atomically: two commands updating one ``result.json`` at once both keep their change. ``check``: the
    door its readers use, passed before it is written (a refusal leaves the file as it was)."""
    path = Path(path)
    with locked(path.parent):
        doc = parse_json(read_foreign(path, kind), path)
        if not isinstance(doc, dict):
            raise FileError(path, f"not a JSON object; it is not a dawnbench {kind}.")
        change(doc)
        if check is not None:
            check(doc, path)
        atomic_write_json(path, doc, update=True)   # dawnbench's own document, changed where asked
    return doc


class DiskReserve:
    """Disk space held back in ``folder`` until :meth:`release`: an unnamed file (deleted as
    soon as it is made, so a killed process leaves nothing behind) of ``size`` allocated bytes.

    A run holds one; when a write fails because the disk is full, releasing it frees room
    for the run's final status. Where space cannot be reserved (a file system without
    ``fallocate``), the reserve is empty and says so in :attr:`bytes`.
    """

    def __init__(self, folder: Path, size: int = 1 << 20):
        self.bytes = 0
        self._file: BinaryIO | None = None
        try:
            self._file = tempfile.TemporaryFile(dir=folder)
            os.posix_fallocate(self._file.fileno(), 0, size)
            self.bytes = size
        except OSError as err:
            if self._file is not None and err.errno == errno.ENOSPC:
                self.release()
                raise DawnbenchError(f"{folder}: less than {size >> 20} MiB free on this disk; free some "
                                     "space or write the run elsewhere (--out).") from None
            # no fallocate here (EOPNOTSUPP): go on without a reserve

    def release(self) -> bool:
        """Free the space; True if there was any to free."""
        if self._file is None:
            return False
        self._file.close()
        self._file = None
        freed, self.bytes = self.bytes > 0, 0
        return freed


def output_dir(path: str | Path, flag: str = "--out") -> Path:
    """A folder a command writes into: made if missing; a clear error when it is a file."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise DawnbenchError(f"{flag} {path}: that is a file, not a folder. Pass a folder (it is made if "
                             "it does not exist).")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DawnbenchError(f"{flag} {path}: cannot make this folder ({err.strerror}). Pass a folder you "
                             "can write to.") from None
    return path


# --- reading what someone else wrote ----------------------------------------------

MiB = 1 << 20
# The most dawnbench reads of each kind of file it is handed; a larger one is refused.
LIMITS: dict[str, int] = {
    "submission": 1 * MiB,         # a DAWNBench JSON (the largest public one is 2 KB)
    "training log": 16 * MiB,      # a DAWNBench TSV, a run's epochs.tsv
    "latency table": 64 * MiB,     # inference/latencies.tsv
    "run record": 64 * MiB,        # result.json (hours of evaluations every few seconds)
    "profile": 64 * MiB,           # summary.json, ops.tsv of `dawnbench profile`
    "kernel result": 64 * MiB,     # kernels.json of `dawnbench kernels` (a few thousand rows)
    "Hugging Face config": 1 * MiB,  # a model's config.json (a few KiB)
    "GPU datasheet": 1 * MiB,      # a datasheet for `predict --device FILE.json` (a few hundred bytes)
    "figure": 32 * MiB,            # a PNG embedded in a report
    "scale table": 16 * MiB,
    "site manifest": 16 * MiB,     # the list of files a leaderboard site wrote
    "machine's roofs": 64 * 1024,  # the last undisturbed roofs of a machine (profiling/load.py)
    "MLPerf log": 256 * MiB,
    "event log": 256 * MiB,
    "resource samples": 256 * MiB,   # a run's resources.tsv (a row every half second)
    "model": 16 << 30,             # model.pt (read by torch with weights_only=True)
    "data": 64 << 30,              # official dataset files (IDX, CIFAR batches, SQuAD JSON, ...)
}
MAX_JSON_DEPTH = 64
MAX_INT_DIGITS = 40                # 10^40: no count, size or time dawnbench reads comes near it


def check_regular(path: Path, kind: str) -> os.stat_result:
    """``path``'s own status; a clear error if it is a link, a FIFO, a device or missing."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise FileError(path, "no such file.") from None
    except OSError as err:
        raise FileError(path, f"cannot read it ({err.strerror}).") from None
    if stat.S_ISLNK(st.st_mode):
        raise FileError(path, "a symbolic link. dawnbench reads only regular files from the folders it is "
                        f"handed (a link could point at any file of this machine); replace it with the {kind} itself.")
    if not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else \
            "a device or socket"
        raise FileError(path, f"{what}, not a regular file; a {kind} must be a plain file.")
    return st


def inside(root: str | Path, *parts: str) -> Path:
    """``root / parts…``, each step below ``root`` checked: never a symbolic link (it could lead out of the folder
    a user handed over, at any step of the path), a FileError naming it otherwise. What does not exist yet is
    not checked past it (a folder a command is about to make)."""
    path = Path(root)
    for part in Path(*parts).parts if parts else ():
        if part in ("..", "/"):
            raise FileError(path / part, "a step out of the folder; dawnbench reads and writes only inside the "
                                         "folders it is handed.")
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            break
        except OSError as err:
            raise FileError(path, f"cannot read it ({err.strerror}).") from None
        if stat.S_ISLNK(mode):
            raise FileError(path, "a symbolic link inside a folder dawnbench was handed. It reads and writes only "
                                  "inside that folder, and a link could lead anywhere on this machine: replace the "
                                  "link with what it points at.")
    return path


@contextlib.contextmanager
def _open_foreign(path: Path, kind: str) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """A regular file someone else wrote, open for reading, and its status: never through a link, never waiting
    on a FIFO (a FileError naming it otherwise)."""
    check_regular(path, kind)
    try:
        # O_NOFOLLOW and O_NONBLOCK: if the file was swapped for a link or a FIFO since the check,
        # the open fails (or returns at once) instead of following it or hanging.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise FileError(path, f"cannot open it ({err.strerror}); a {kind} must be a regular file you can "
                        "read.") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise FileError(path, f"not a regular file; a {kind} must be a plain file.")
        yield f, st


@contextlib.contextmanager
def _open_limited(path: Path, kind: str) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """:func:`_open_foreign`, and the file at most ``LIMITS[kind]`` bytes (a FileError naming it otherwise)."""
    if kind not in LIMITS:
        raise DawnbenchError(f"{kind!r} is not a kind of file dawnbench reads; name one of {', '.join(LIMITS)}.")
    with _open_foreign(path, kind) as (f, st):
        if st.st_size > LIMITS[kind]:
            raise FileError(path, f"{st.st_size / MiB:,.1f} MiB, more than the {LIMITS[kind] / MiB:,.0f} MiB "
                            f"dawnbench reads for a {kind}; this is not a {kind}.")
        yield f, st


def read_foreign(path: str | Path, kind: str) -> bytes:
    """The bytes of a regular file someone else wrote, at most ``LIMITS[kind]`` of them."""
    with _open_limited(Path(path), kind) as (f, st):
        return f.read(st.st_size)  # what it held when checked: a file growing meanwhile is read that far


def read_foreign_end(path: str | Path, kind: str, size: int) -> str:
    """The last ``size`` bytes of a regular file someone else wrote (a log of any length), decoded as UTF-8 with
    undecodable bytes replaced."""
    with _open_foreign(Path(path), kind) as (f, st):
        f.seek(max(0, st.st_size - size))
        return f.read(size).decode("utf-8", errors="replace")


def read_foreign_lines(path: str | Path, kind: str) -> Iterator[tuple[int, str]]:
    """Each line of a regular file someone else wrote, numbered from 1 and decoded as UTF-8 (undecodable bytes
    replaced), streamed: a reader keeps what it needs of a log, never the whole of it. The file is checked as
    :func:`read_foreign` checks it (at most ``LIMITS[kind]`` bytes), and read only as far as it held then."""
    with _open_limited(Path(path), kind) as (f, st):
        left = st.st_size
        for number, raw in enumerate(f, 1):
            if left <= 0:
                return
            raw = raw[:left]
            left -= len(raw)
            yield number, raw.decode("utf-8", errors="replace").rstrip("\r\n")


def read_foreign_text(path: str | Path, kind: str) -> str:
    """:func:`read_foreign` decoded as UTF-8 (undecodable bytes replaced, so a message can quote it)."""
    return read_foreign(path, kind).decode("utf-8", errors="replace")


def walk_foreign(root: str | Path, skipped: list[tuple[Path, str]] | None = None) -> Iterator[Path]:
    """Every regular file under ``root``, sorted, never following a link. Links, FIFOs and
    devices are not yielded; each goes to ``skipped`` (when given) as (path, why) for a warning."""
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames.sort()
        for name in list(dirnames):
            if (here / name).is_symlink():
                dirnames.remove(name)
                if skipped is not None:
                    skipped.append((here / name, "a symbolic link to a folder, not followed"))
        for name in sorted(filenames):
            path = here / name
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode):
                yield path
            elif skipped is not None:
                what = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
                skipped.append((path, f"{what}, skipped (dawnbench reads only regular files from a folder)"))


class _Refused(ValueError):
    """A JSON literal dawnbench does not read; ``literal`` is its text (to find its line)."""

    def __init__(self, message: str, literal: str):
        super().__init__(message)
        self.literal = literal


def _strict_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(text.lstrip('-'))} digits", text)
    return int(text)


def _strict_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is out of range", text)
    return value


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON", name)


def _line_of(text: str, literal: str) -> int | None:
    """The line of the first ``literal`` outside a JSON string (None if not found)."""
    quoted = escaped = False
    for i, char in enumerate(text):
        if quoted:
            escaped, quoted = (not escaped and char == "\\"), quoted and (escaped or char != '"')
        elif char == '"':
            quoted = True
        elif text.startswith(literal, i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in ".-+")):
            return text.count("\n", 0, i) + 1
    return None


def json_depth(doc: Any) -> int:
    """How deep ``doc`` nests lists and objects (counted up to just past ``MAX_JSON_DEPTH``)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                return deepest
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


class RepeatedKey(ValueError):
    """An object that gives one key twice: JSON keeps the last, so which one is meant cannot be told."""

    def __init__(self, key: str):
        super().__init__(f"'{key}' is given more than once")
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise RepeatedKey(key)
        obj[key] = value
    return obj


def strict_loads(text: str, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """``json.loads`` that refuses NaN/Infinity, integers over ``MAX_INT_DIGITS`` digits and
    non-finite decimals (``ValueError``) and a key given twice in one object (:class:`RepeatedKey`, unless
    ``object_pairs_hook`` builds the objects instead); nesting is bounded by Python's own recursion limit
    (``RecursionError``). :func:`parse_json` turns these into located errors."""
    return json.loads(text, parse_int=_strict_int, parse_float=_strict_float, parse_constant=_no_constant,
                      object_pairs_hook=object_pairs_hook or _unique)


def parse_json(data: bytes | str, where: str | Path) -> Any:
    """Strict JSON: no NaN or Infinity, integers of at most ``MAX_INT_DIGITS`` digits, finite
    floats, nesting at most ``MAX_JSON_DEPTH`` deep; a located error otherwise."""
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError as err:
        raise FileError(where, f"not UTF-8 text (byte {err.start}); it is not a JSON file.") from None
    try:
        doc = strict_loads(text)
    except json.JSONDecodeError as err:
        raise FileError(where, f"not valid JSON ({err.msg}, column {err.colno}).", err.lineno) from None
    except RecursionError:
        raise FileError(where, f"JSON nested deeper than Python can read; no dawnbench file is nested more "
                        f"than {MAX_JSON_DEPTH} deep.") from None
    except RepeatedKey as err:
        seen = [m.start() for m in re.finditer(re.escape(json.dumps(err.key)) + r"\s*:", text)]
        line = text.count("\n", 0, seen[1]) + 1 if len(seen) > 1 else None
        raise FileError(where, f"field {err} in one object: JSON keeps only the last, so which one is meant "
                        "cannot be told. Keep one.", line) from None
    except ValueError as err:
        line = _line_of(text, err.literal) if isinstance(err, _Refused) else None
        raise FileError(where, f"{err}; dawnbench reads only plain JSON numbers (integers up to "
                        f"{MAX_INT_DIGITS} digits, finite decimals).", line) from None
    if json_depth(doc) > MAX_JSON_DEPTH:
        raise FileError(where, f"JSON nested more than {MAX_JSON_DEPTH} deep; no dawnbench file is.")
    return doc


def read_json(path: str | Path, kind: str) -> Any:
    """The JSON of a file someone else wrote: a regular file (no link, no FIFO), at most ``LIMITS[kind]`` bytes
    (``kind``: "run record", "profile", "GPU datasheet", … — a key of ``LIMITS``), strict JSON. Its fields are not
    checked: the readers in ``records/`` check each document (a run's: ``records.record.read_result``)."""
    return parse_json(read_foreign(path, kind), path)
