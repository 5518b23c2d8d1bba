"""DAWNBench v1.0 submission files (SPEC §8): validation (validate.py) and export from run records (export.py)."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name in ("export_inference", "export_training"):  # export needs torch and scipy; validate does not
        from dawnbench.submissions import export
        return getattr(export, name)
    raise AttributeError(f"module 'dawnbench.submissions' has no attribute {name!r}")


__all__ = ["export_inference", "export_training"]
