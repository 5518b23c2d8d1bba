"""Why a run is as fast as it is: FLOPs per sample, achieved rates, the machine's roofs.

* ``flops.py``  forward + backward FLOPs per training sample; achieved FLOP/s of a run
                against the roof of the precision it used;
* ``roofs.py``  the roofs, measured in this process: dense FLOP/s per precision,
                memory bandwidth, ridge points.
"""

from dawnbench.profiling.flops import throughput, training_flops_per_sample
from dawnbench.profiling.roofs import Roofs, measure_roofs

__all__ = ["Roofs", "measure_roofs", "throughput", "training_flops_per_sample"]
