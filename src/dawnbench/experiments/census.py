"""A task's reference entry as a census model (SPEC §24): its network on the meta device, counted by
``profiling/census.py`` (here, above the entries, because it builds one)."""

from __future__ import annotations

from typing import Any

import torch

from dawnbench.errors import DawnbenchError
from dawnbench.profiling.census import CensusModel


class Positional(torch.nn.Module):
    """An entry's network called as the census calls a model: with keyword inputs (``x``)."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> Any:
        return self.inner(x)


def task_model(task_name: str, entry_name: str | None = None, overrides: dict[str, Any] | None = None
               ) -> CensusModel:
    """A task's reference entry (or the built-in ``entry_name``, its hyperparameters changed by ``overrides``): its
    network and a training-shaped input from its ``flop_model()``, both made on the meta device."""
    from dawnbench.entries import load_entry_class
    from dawnbench.tasks import get_task
    task = get_task(task_name)
    name = entry_name or task.default_entry
    if name.endswith(".py"):
        raise DawnbenchError(f"--entry {name}: the census counts built-in entries and Hugging Face configs; an entry "
                             "file is your code, which the census does not import. Profile it on a machine "
                             "(`dawnbench profile TASK --entry FILE --trust-entry`).")
    entry = load_entry_class(name)(task, torch.device("meta"), overrides)
    try:
        with torch.device("meta"):
            entry.model = entry.make_model()
            made = entry.flop_model()
    except (RuntimeError, NotImplementedError, TypeError, AttributeError, OSError) as err:
        raise DawnbenchError(f"{name}: its network could not be made on the meta device ({type(err).__name__}: "
                             f"{str(err).splitlines()[0][:200] if str(err) else '-'}); profile it on a machine "
                             "(`dawnbench profile`).") from None
    if made is None:
        raise DawnbenchError(f"{name}: the entry gives no flop_model() (its network and an input), so the census has "
                             "nothing to count; profile it on a machine instead (`dawnbench profile`).")
    module, example = made
    trailing = tuple(example.shape[1:])

    def inputs(batch: int, seqlen: int | None, device: str) -> dict[str, torch.Tensor]:
        x = torch.empty((batch, *trailing), dtype=example.dtype, device=device)
        return {"x": x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 and
                example.is_contiguous(memory_format=torch.channels_last) else x}

    def loss(out: Any, given: dict[str, torch.Tensor]) -> torch.Tensor:
        logits = out if isinstance(out, torch.Tensor) else out[0]
        logits = logits.reshape(logits.shape[0], -1)
        return torch.nn.functional.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.int64,
                                                                     device=logits.device))

    return CensusModel(name, "entry", Positional(module), inputs, loss, "sgd", False,
                       task.name)
