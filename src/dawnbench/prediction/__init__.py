"""Explain and predict: an application's training step as the kernel benchmarks see it.

* ``step.py``      a profile's ops per step, each mapped to the kernel problems it runs
* ``devices.py``   a device: its timed kernels (DeepBench's published sheet, or a kernels.json) and
                   a model for the rest (rated or measured peaks, an efficiency fitted on its rows)
* ``predict.py``   the step, epoch, TTA and cost on a device you do not have
* ``validate.py``  the model against DeepBench's published times: leave-one-out, and across devices

``explain`` times those kernels here (it measures, so it lives with the experiments: ``experiments/explain.py``).
"""
