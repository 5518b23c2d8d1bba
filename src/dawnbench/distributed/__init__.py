"""Many workers: the world a worker sees, and communication timing.

* ``world``     rank, world size, backend; the collectives the harness's one loop needs;
                sharding and per-worker seeds; how a worker tells its launcher where
                rank 0 records;
* ``comm``      DDP with a communication hook that times the all-reduces, and the
                accounting of a run's time per epoch (compute, exposed communication);
* ``launch``    starting workers with torchrun (PyTorch's ``torch.distributed.run``).

What a run launch adds (rank 0's records, their corrected statuses) is
:mod:`dawnbench.experiments.launch`; the analyses built on these — the scale table and
``schedule`` — live in :mod:`dawnbench.analysis`.
"""
