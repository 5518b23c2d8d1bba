"""Inference at the threshold: latency, throughput, cost, LoadGen scenarios."""

from dawnbench.inference.measure import InferenceOptions, measure_run

__all__ = ["InferenceOptions", "measure_run"]
