"""Why a run is as fast as it is: FLOPs per sample, achieved rates, the machine's roofs.

* ``flops.py``  forward + backward FLOPs per training sample; achieved FLOP/s of a run
                against the roof of the precision it used;
* ``roofs.py``  the roofs, measured in this process: dense FLOP/s per precision,
                memory bandwidth, ridge points;
* ``resources.py`` the monitor of every run; ``ops.py`` the op census and profiler
                window; ``steps.py`` the optimizer-step counter; ``machine.py`` the
                hardware and its roofs. The ``profile`` command that drives them is
                :mod:`dawnbench.experiments.profile`.
"""

from dawnbench.profiling.flops import throughput, training_flops_per_sample
from dawnbench.profiling.roofs import Roofs, measure_roofs

__all__ = ["Roofs", "measure_roofs", "throughput", "training_flops_per_sample"]
