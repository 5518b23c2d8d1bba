"""CIFAR-10 time-to-accuracy (94 %) of cifar10-fast over N seeds.

    python benchmarks/cifar10_tta.py [--runs 1] [--entry cifar10-resnet20] [--seed 0] [--precision bf16]

On a 2-core CPU one run takes 10 minutes (AVX-512 BF16 machine, bf16) to 1.5 hours
(AVX2 machine, fp32); on a GPU, seconds. Prints each run's status, TTA, epochs, last
accuracy, images/s, GFLOP/s and fraction of the measured roof of the run's precision.
"""

import sys

from tta_common import main

if __name__ == "__main__":
    sys.exit(main(__doc__.splitlines()[0], task="cifar10", runs=1))
