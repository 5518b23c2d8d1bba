"""Inference at the threshold (SPEC §5): latency, throughput, cost, LoadGen scenarios."""

from dawnbench.inference.measure import InferenceOptions, measure_run

__all__ = ["InferenceOptions", "measure_run"]
