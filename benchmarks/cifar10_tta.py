"""CIFAR-10 time-to-accuracy (94 %) of cifar10-fast over N seeds.

    python benchmarks/cifar10_tta.py [--runs 1] [--entry cifar10-resnet20] [--seed 0]

On the 2-core development CPU one run takes about 1.5 hours (the network trains at
~100 images/s); on a GPU, seconds. Prints each run's status, TTA, epochs, last
accuracy, images/s, GFLOP/s and fraction of the measured matmul peak.
"""

import sys

from tta_common import main

if __name__ == "__main__":
    sys.exit(main(__doc__.splitlines()[0], task="cifar10", runs=1))
