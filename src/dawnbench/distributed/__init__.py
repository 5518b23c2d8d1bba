"""Many workers (SPEC §13): launch under torchrun, the world a worker sees, communication timing.

* ``launch``    ``dawnbench run --nproc N``: re-run the command under torchrun; settle
                rank 0's record with what only the launcher knows (a worker died, a signal);
* ``world``     rank, world size, backend; the collectives the harness needs; sharding
                and per-worker seeds;
* ``comm``      DDP with a communication hook that times the all-reduces, and the
                accounting of a run's time per epoch (compute, exposed communication);
* ``follower``  what ranks other than 0 do during a run.

The analyses built on them — ``scale`` and ``schedule`` — live in :mod:`dawnbench.analysis`.
"""
