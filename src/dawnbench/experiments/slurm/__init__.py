"""Batches of runs as jobs of a Slurm cluster, through ``submitit``: no queue of our own.

    runs = [PlannedRun("seed=0", ["run", "mnist", "--seed", "0"], Path("runs/seed=0")), ...]
    results = run_batch(runs, SlurmOptions(partition="gpu", time_limit_min=30), Path("runs"))

**One run, one job.** Single-worker runs go in one submission as a job array (submitit batches
them), at most ``array_parallelism`` at a time; a run of W workers is one job of its own, on
⌈W / workers-per-node⌉ nodes with one task per node, each task starting ``dawnbench run
--nproc`` (torchrun) for its node's workers and, over several nodes, meeting the others
through torchrun's rendezvous at the job's first node (``--nnodes``, ``--node-rank``,
``--rdzv-endpoint``: the flags ``run`` already has). Every job writes its run folder into
the shared output folder with the crash safety it has on one machine, and records the
scheduler's facts about itself (job id, array task, node list, partition: ``scheduler`` in
``result.json``).

**Watching.** The command waits, showing the jobs queued, running, done and failed, and reads
each job's state with ``scontrol`` (and ``sacct``, where the cluster keeps accounting, for jobs
``scontrol`` has forgotten). A cluster without accounting — a single-node test cluster, say —
answers ``sacct`` with an error; submitit's own watcher would warn about it, so states are not
asked of it. A job neither knows is ``UNKNOWN``, which counts as ended — in the watch loop and
when cancelling alike — and settles as ``aborted`` unless its run had finished. A failing
``scontrol`` (the controller restarting) is borne for ``SCHEDULER_PATIENCE_S``; then the command
stops and says what ``scontrol`` said, and that ``--resume`` picks the batch up later.

**Endings** (:func:`settle`). When a job has ended, its record gets the scheduler's final state
and reason. A job that completed keeps its run's own status. One that timed out gives
``timeout``; one that failed, was cancelled, preempted, ran out of memory or lost its node
gives ``aborted`` — with the scheduler's state and reason in ``error`` — and a job that ended
before its run wrote anything gets a record of its own saying so. Ctrl-C on the command cancels
the jobs it submitted (and only those: ``scancel`` by job id), waits for them to go, and
records them ``interrupted``. ``--resume`` on the same output folder submits only the runs
without a finished record (``success``, ``not_reached`` or ``diverged``); the record of an
unfinished attempt is moved to ``OUT/.superseded/``, never deleted. ``OUT/.slurm/`` keeps
submitit's files and the batch's manifest.

Its parts: ``batch.py`` (the options, submitting and watching a batch), ``job.py`` (what runs inside a
job), ``scheduler.py`` (what the scheduler says of jobs: ``scontrol``, ``sacct``, ``scancel``) and
``records.py`` (a run's record settled with the scheduler's facts).
"""

from dawnbench.experiments.slurm.batch import PlannedRun, SlurmOptions, check, run_batch
from dawnbench.experiments.slurm.job import NODES_WAIT_S, job_main, rendezvous

__all__ = ["NODES_WAIT_S", "PlannedRun", "SlurmOptions", "check", "job_main", "rendezvous", "run_batch"]
