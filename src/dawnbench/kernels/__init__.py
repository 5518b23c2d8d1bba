"""DeepBench's kernels beside the applications (SPEC §19): GEMM, convolution, RNN and all-reduce,
timed on any PyTorch device and compared with the devices DeepBench published.

    from dawnbench.kernels import KernelOptions, run_kernels
    document = run_kernels(KernelOptions(suites=("gemm", "conv"), quick=True))
    document.doc["rows"]                     # one per problem × pass × precision

* ``problems``  DeepBench's problem lists (carried as package data, Apache-2.0) and ``--quick``;
* ``passes``    one pass of one problem as a statement to time;
* ``timing``    ``torch.utils.benchmark`` around it;
* ``allreduce`` the collective, in the workers torchrun starts;
* ``run``       the plan (estimates, memory, caps), the rows, ``kernels.json`` and ``kernels.csv``;
* ``compare``   time ratios against the published devices or another ``kernels.json``.

``dawnbench kernels`` is the command; ``similarity`` and ``roofline`` read ``kernels.json`` as a
document and never import this package.
"""

from dawnbench.kernels.run import Document, KernelOptions, run_kernels

__all__ = ["Document", "KernelOptions", "run_kernels"]
