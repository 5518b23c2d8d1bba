"""Explain and predict (SPEC §23): an application's training step as the kernel benchmarks see it.

* ``step.py``      a profile's ops per step, each mapped to the kernel problems it runs
* ``explain.py``   those kernels timed here: how much of the step they explain, by class
* ``devices.py``   a device: its timed kernels (DeepBench's published sheet, or a kernels.json) and
                   a model for the rest (rated or measured peaks, an efficiency fitted on its rows)
* ``predict.py``   the step, epoch, TTA and cost on a device you do not have
* ``validate.py``  the model against DeepBench's published times: leave-one-out, and across devices
"""
