"""The model a run saved at its first passing evaluation (``model.pt`` in the run directory),
and with ``--continue`` also the model at the end of its schedule (``model_final.pt``).

Saved untimed (``checkpoint_s``) so that every successful run can be measured for
inference later, by ``dawnbench infer``. The file holds what the entry's
``inference_state()`` returned plus the facts needed to rebuild the entry: task,
entry name, hyperparameters, and the evaluation at which it was taken. It is
written atomically (:mod:`dawnbench.io`), so a kill never leaves a torn model, and
read back with ``weights_only=True``: loading a model file never runs code.

:func:`load_saved_entry` is the one way to rebuild an entry from a run directory
(``infer``, ``generalize``, ``profile`` of a run, the benchmarks). It runs no code from
the folder: a built-in entry is found by name, and an entry file the record names is
imported only with ``trust`` (``--trust-entry``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from dawnbench.entries import BUILTIN, Entry, load_entry_class
from dawnbench.errors import DawnbenchError
from dawnbench.io import atomic_write_with, check_regular, read_json
from dawnbench.tasks import Task, get_task

MODEL_FILE = "model.pt"
FINAL_MODEL_FILE = "model_final.pt"   # after the last evaluation of a run that continued past its target
FORMAT = 1


def save(run_dir: Path, state: dict[str, Any], *, task: str, entry: str, hparams: dict[str, Any],
         epoch: float, value: float, name: str = MODEL_FILE) -> Path:
    path = Path(run_dir) / name
    payload = {"format": FORMAT, "task": task, "entry": entry, "hparams": hparams,
               "epoch": float(epoch), "value": float(value), "state": state}
    atomic_write_with(path, lambda f: torch.save(payload, f))
    return path


def load(run_dir: Path, name: str = MODEL_FILE) -> dict[str, Any]:
    """The saved payload; a clear error when the file is missing or unreadable."""
    path = Path(run_dir) / name
    if not path.is_file():
        if name == FINAL_MODEL_FILE:
            raise DawnbenchError(f"{path}: no final model. A run saves one only when it trained on past "
                                 "its target (`dawnbench run --continue`).")
        raise DawnbenchError(f"{path}: no saved model. A run saves its model when it first reaches "
                             "its target; measure inference on a run whose status is success.")
    check_regular(path, "model")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a torn or foreign file: say which, never a traceback
        raise DawnbenchError(f"{path}: not a readable dawnbench model file ({type(err).__name__}: "
                             f"{str(err).splitlines()[0] if str(err) else ''}). Re-run training to "
                             "save it again.") from None
    if (not isinstance(payload, dict) or payload.get("format") != FORMAT or "state" not in payload
            or not isinstance(payload.get("task"), str) or not isinstance(payload.get("entry"), str)
            or not isinstance(payload.get("hparams"), dict)):
        raise DawnbenchError(f"{path}: not a dawnbench model file of format {FORMAT}. "
                             "Re-run training to save it again.")
    return payload


def recorded_entry(run_dir: Path, name: str | None = None, trust: bool = False) -> str:
    """What to load for the entry that trained the run in ``run_dir``: its built-in name, or —
    only with ``trust`` — the file its ``result.json`` names (``software.entry_file``).

    A run folder is data: someone may have sent it, and its record can name any file. So
    dawnbench imports an entry file named by a record only when the user says so
    (``--trust-entry``); built-in entries are found by name and run no code from the folder.
    """
    run_dir = Path(run_dir)
    path = run_dir / "result.json"
    try:
        result = read_json(path, "run record")
    except DawnbenchError:
        result = {}
    if not isinstance(result, dict):
        result = {}
    name = name or result.get("entry")
    if isinstance(name, str) and name in BUILTIN:
        return name
    software = result.get("software")
    entry_file = software.get("entry_file") if isinstance(software, dict) else None
    if not trust:
        raise DawnbenchError(f"{path}: entry {name!r} is not built in; rebuilding it means importing and running "
                             f"the Python file the record names ({entry_file or 'none recorded'}). A run folder is "
                             "data and dawnbench runs no code from it unless you say so: if you trust that file, "
                             "pass --trust-entry.")
    if not isinstance(entry_file, str) or not Path(entry_file).is_file():
        raise DawnbenchError(f"{path}: entry {name!r} is not built in and its file ({entry_file or 'not recorded'}) "
                             "is not there any more. Restore the entry file at that path to rebuild the model.")
    return entry_file


def entry_class_of(run_dir: Path, entry: str | None = None, trust: bool = False) -> type[Entry]:
    """The entry class that trained the run in ``run_dir`` (see :func:`recorded_entry`)."""
    return load_entry_class(recorded_entry(run_dir, entry, trust))


def load_saved_entry(run_dir: Path, device: torch.device, name: str = MODEL_FILE, task: Task | None = None,
                     overrides: dict[str, Any] | None = None, payload: dict[str, Any] | None = None,
                     trust: bool = False) -> tuple[Entry, dict[str, Any]]:
    """The entry of ``run_dir`` with the weights of its saved model ``name``, and the file's payload.
    ``overrides`` change saved hyperparameters that do not shape the weights (say, a batch size);
    ``payload``: the file, when the caller has read it already with :func:`load`; ``trust``:
    import the entry file the record names if the entry is not built in (``--trust-entry``)."""
    payload = payload or load(run_dir, name)
    task = task or get_task(payload["task"])
    entry_cls = entry_class_of(run_dir, payload["entry"], trust)
    unknown = sorted(set(overrides or {}) - set(payload["hparams"]))
    if unknown:
        raise DawnbenchError(f"--set {', '.join(unknown)}: not a hyperparameter of entry '{entry_cls.name}' "
                             f"as saved in {Path(run_dir) / name}. Its hyperparameters: "
                             f"{', '.join(sorted(payload['hparams']))}.")
    entry_cls.check_hparams(task, overrides or {})
    entry = entry_cls(task, device, {**payload["hparams"], **(overrides or {})})
    try:
        entry.load_inference_state(payload["state"])
    except DawnbenchError:
        raise
    except Exception as err:  # the entry's code changed since the run
        raise DawnbenchError(f"{Path(run_dir) / name}: entry '{entry.name}' could not load it "
                             f"({type(err).__name__}: {err}). The entry's code changed since the run; "
                             "re-run training.") from None
    return entry, payload
