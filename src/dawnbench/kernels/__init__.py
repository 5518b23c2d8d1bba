"""DeepBench's kernels beside the applications: GEMM, convolution, RNN and all-reduce,
timed on any PyTorch device and compared with the devices DeepBench published.

    from dawnbench.kernels import KernelOptions, run_kernels
    document = run_kernels(KernelOptions(suites=("gemm", "conv"), quick=True))
    document.doc["rows"]                     # one per problem × pass × precision

* ``passes``    one pass of one problem as a statement to time;
* ``timing``    ``torch.utils.benchmark`` around it;
* ``allreduce`` the collective, in the workers torchrun starts; ``launch``: starting, joining and being them;
* ``run``       the plan (estimates, memory, caps), the rows, ``kernels.json`` and ``kernels.csv``;
* ``compare``   time ratios against the published devices or another ``kernels.json``.

DeepBench's problem lists and published times (``deepbench/``, package data, Apache-2.0) are read and checked by
``records/problems.py`` and ``records/published.py``, which the predictors read too.

``dawnbench kernels`` is the command; ``similarity`` and ``roofline`` read ``kernels.json`` as a
document and never import this package.
"""

from typing import Any

__all__ = ["Document", "KernelOptions", "run_kernels"]


def __getattr__(name: str) -> Any:
    """``run``'s names, imported when first asked for (the command line's parser needs none of them)."""
    if name in __all__:
        from dawnbench.kernels import run
        return getattr(run, name)
    raise AttributeError(f"module 'dawnbench.kernels' has no attribute {name!r}")
