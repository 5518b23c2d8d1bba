"""Entries: built-in reference recipes found by name, or a user's own file.

    load_entry_class("small-cnn")            # built-in
    load_entry_class("path/to/my_entry.py")  # exactly one Entry subclass inside
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

from dawnbench.entries.base import Entry, Progress, TrainContext
from dawnbench.errors import EntryError

# name -> module under dawnbench.entries; imported only when asked for.
BUILTIN: dict[str, str] = {
    "small-cnn": "small_cnn",
    "cifar10-fast": "cifar10_fast",
    "cifar10-resnet20": "resnet_seed",
    "cifar10-resnet56": "resnet_seed",
    "cifar10-resnet164": "resnet_seed",
    "cifar10-resnet18": "cifar10_resnet18",
    "mnist-standard": "standard_cnn",
    "fashion-mnist-standard": "standard_cnn",
    "imagenet-resnet50": "imagenet_resnet50",
    "squad-minilm": "squad_minilm",
    "squad-bidaf": "squad_bidaf",
    "squad-drqa": "squad_drqa",
}


def _entry_classes(module) -> list[type[Entry]]:
    return [obj for _, obj in inspect.getmembers(module, inspect.isclass)
            if issubclass(obj, Entry) and obj is not Entry and obj.__module__ == module.__name__]


def load_entry_class(name_or_path: str) -> type[Entry]:
    """Find a built-in entry by name, or load the single Entry subclass of a .py file."""
    if name_or_path in BUILTIN:
        module = importlib.import_module(f"dawnbench.entries.{BUILTIN[name_or_path]}")
        return next(c for c in _entry_classes(module) if c.name == name_or_path)
    path = Path(name_or_path)
    if path.suffix != ".py":
        raise EntryError(
            f"unknown entry '{name_or_path}'. Built-in entries: {', '.join(sorted(BUILTIN))}; "
            "or pass the path of your own entry file ending in .py."
        )
    if not path.is_file():
        raise EntryError(f"{path}: entry file not found. Check the path passed to --entry.")
    module_name = f"dawnbench_user_entry_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # the user's file failed to import: say where
        tb = err.__traceback__
        line = None
        while tb is not None:
            if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
                line = tb.tb_lineno
            tb = tb.tb_next
        where = f"{path}:{line}" if line else str(path)
        raise EntryError(f"{where}: importing the entry file failed with "
                         f"{type(err).__name__}: {err}. Fix the file and run again.") from None
    defined = _entry_classes(module)
    classes = [c for c in defined if not inspect.isabstract(c)]
    if len(classes) != 1:
        abstract = [c for c in defined if inspect.isabstract(c)]
        if not classes and abstract:   # the class is there, but a method the contract needs is not
            missing = "; ".join(f"{c.__name__} lacks {', '.join(f'{m}()' for m in sorted(c.__abstractmethods__))}"
                                for c in abstract)
            raise EntryError(f"{path}: {missing}. An entry defines train() and predict() (see "
                             "dawnbench/entries/base.py, or docs/writing-an-entry.md); add the missing method(s).")
        found = ", ".join(c.__name__ for c in classes) or "none"
        raise EntryError(
            f"{path}: an entry file must define exactly one concrete subclass of "
            f"dawnbench.entries.Entry (with train() and predict()); found {found}."
        )
    cls = classes[0]
    if not cls.name:
        cls.name = path.stem
    return cls


__all__ = ["BUILTIN", "Entry", "Progress", "TrainContext", "load_entry_class"]
