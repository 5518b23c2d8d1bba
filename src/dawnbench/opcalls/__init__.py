"""An op's call as data and what it costs: its text form in ``ops.tsv``, the call made again from it
(``calls.py``), and its FLOPs by torch's formulas (``formulas.py``). Below the documents that record calls
(``records/``) and the tools that make and time them (``profiling/``, ``kernels/``, ``prediction/``)."""
