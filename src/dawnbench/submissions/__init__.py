"""DAWNBench v1.0 submission files (SPEC §8): export from run records."""

from dawnbench.submissions.export import export_inference, export_training

__all__ = ["export_inference", "export_training"]
