"""The model a run saved at its first passing evaluation (``model.pt`` in the run directory),
and with ``--continue`` also the model at the end of its schedule (``model_final.pt``).

Saved untimed (``checkpoint_s``) so that every successful run can be measured for
inference (SPEC §5) later, by ``dawnbench infer``. The file holds what the entry's
``inference_state()`` returned plus the facts needed to rebuild the entry: task,
entry name, hyperparameters, and the evaluation at which it was taken. It is
written to a temporary file and renamed, so a kill never leaves a torn model, and
read back with ``weights_only=True``: loading a model file never runs code.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from dawnbench.errors import DawnbenchError

MODEL_FILE = "model.pt"
FINAL_MODEL_FILE = "model_final.pt"   # after the last evaluation of a run that continued past its target
FORMAT = 1


def save(run_dir: Path, state: dict[str, Any], *, task: str, entry: str, hparams: dict[str, Any],
         epoch: float, value: float, name: str = MODEL_FILE) -> Path:
    path = Path(run_dir) / name
    payload = {"format": FORMAT, "task": task, "entry": entry, "hparams": hparams,
               "epoch": float(epoch), "value": float(value), "state": state}
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=path.parent)
    os.close(fd)
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
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
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a torn or foreign file: say which, never a traceback
        raise DawnbenchError(f"{path}: not a readable dawnbench model file ({type(err).__name__}: "
                             f"{str(err).splitlines()[0] if str(err) else ''}). Re-run training to "
                             "save it again.") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or "state" not in payload:
        raise DawnbenchError(f"{path}: not a dawnbench model file of format {FORMAT}. "
                             "Re-run training to save it again.")
    return payload
