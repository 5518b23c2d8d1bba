"""MNIST time-to-accuracy of the reference entry over several seeds.

    python benchmarks/mnist_tta.py [--runs 5] [--task fashion-mnist] [--entry NAME]

Prints each run (status, TTA, epochs, samples/s, GFLOP/s, % of peak) and the
median, min and max TTA and the success fraction; the README records them.
"""

import sys

from tta_common import main

if __name__ == "__main__":
    sys.exit(main(__doc__.splitlines()[0], task="mnist", runs=5))
