"""A census as a command counts it: a task's reference entry as a census model — its network on the
meta device, counted by ``profiling/census.py`` (here, above the entries, because it builds one) — and ``count``,
what ``profile MODEL --census`` does, callable from Python.

    summary = count("bert_large.json", batch=8, seqlen=512, precision="bf16", out="census/bert-large")
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
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


def count(target: str, batch: int | None, seqlen: int | None = None, mode: str = "train", precision: str = "fp32",
          optimizer: str | None = None, head: str | None = None, entry: str | None = None, out: str | Path | None = None,
          force: bool = False, progress: Callable[[str], None] = lambda phase: None) -> dict[str, Any]:
    """``profile TARGET --census``: a task's entry (``target`` a task's name) or a Hugging Face config (a ``.json``
    path) counted at ``batch`` (and ``seqlen``) and written to ``out`` (``census/<name>-<mode>-b<batch>…`` where not
    given; never through a link, never over another census unless ``force``): the summary written, with ``out``."""
    from dawnbench import bounds
    from dawnbench.io import output_dir
    from dawnbench.profiling.census import census, hf_config_model
    from dawnbench.records.census import write_census
    from dawnbench.tasks import TASKS

    if not isinstance(target, (str, Path)):
        raise DawnbenchError(f"{target!r}: a census counts a task's entry (its name) or a Hugging Face config (a .json "
                             "path).")
    target = str(target)
    if batch is None:
        raise DawnbenchError("--census needs --batch B (samples a step; a language model also --seqlen S).")
    bounds.check_option("--batch", batch)
    bounds.check_option("--seqlen", seqlen)
    if target.lower().endswith(".json"):
        model = hf_config_model(Path(target), mode, head)
    elif head:
        raise DawnbenchError(f"--head applies to a Hugging Face config; {target}'s entry has its own head.")
    elif target in TASKS:
        model = task_model(target, entry)
    else:
        raise DawnbenchError(f"{target}: a census counts a task's entry ({', '.join(TASKS)}) or a Hugging Face "
                             "config (a .json file); pass one of those.")
    if seqlen is not None and not model.sequence:
        raise DawnbenchError(f"--seqlen applies to a language model's config; {target}'s inputs have a fixed shape.")
    folder = Path(out or f"census/{Path(target).stem}-{mode}-b{batch}" + (f"-s{seqlen}" if seqlen else ""))
    for step in (folder, *folder.parents):          # written through no link, at any step of the path
        if step.is_symlink():
            raise DawnbenchError(f"--out {folder}: {step} is a symbolic link; the census is written only where the "
                                 "path says, never through a link. Pass the folder it points at.")
    for name in ("ops.tsv", "summary.json"):
        if os.path.lexists(folder / name) and not force:
            raise DawnbenchError(f"--out {folder}: it already holds {name}; pass another folder, or --force to "
                                 "replace it.")
    if folder.exists() and not folder.is_dir():
        raise DawnbenchError(f"--out {folder}: that is a file, not a folder. Pass a folder (it is made if it does "
                             "not exist).")
    doc = census(model, batch, seqlen, mode, precision, progress=progress, optimizer=optimizer)
    write_census(doc, output_dir(folder))    # made only once the step is counted: a refusal leaves nothing
    return {**doc["summary"], "out": str(folder)}
