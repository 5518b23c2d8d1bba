"""What the batch reads of the scheduler, without a cluster (SPEC §21): states as ``scontrol`` prints
them, jobs it no longer knows, a controller that does not answer, and each job's thread count."""

from __future__ import annotations

import os
import subprocess

import pytest

from dawnbench.experiments.slurm import job, scheduler

PENDING_ARRAY = ("JobId=41 ArrayJobId=40 ArrayTaskId=2-4%2 JobState=PENDING Reason=JobArrayTaskLimit "
                 "NodeList=(null) ExitCode=0:0\n"
                 "JobId=40 ArrayJobId=40 ArrayTaskId=0 JobState=RUNNING Reason=None NodeList=n1 ExitCode=0:0\n"
                 "JobId=42 ArrayJobId=40 ArrayTaskId=1 JobState=COMPLETED Reason=None NodeList=n1 ExitCode=0:0\n")


def fake_scontrol(monkeypatch, answers: dict[str, tuple[int, str, str]]) -> None:
    """``scontrol -o show job BASE`` answers (returncode, stdout, stderr); there is no sacct."""
    def run(argv, **kwargs):
        assert argv[:4] == ["scontrol", "-o", "show", "job"]
        code, out, err = answers[argv[4]]
        return subprocess.CompletedProcess(argv, code, out, err)

    monkeypatch.setattr(scheduler.subprocess, "run", run)
    monkeypatch.setattr(scheduler.shutil, "which", lambda name: None)


@pytest.mark.parametrize(("spec", "ids"), [("0", ["0"]), ("2-4%2", ["2", "3", "4"]), ("1,3-5", ["1", "3", "4", "5"]),
                                           ("0-6:2", ["0", "2", "4", "6"]), ("[7-8]", ["7", "8"])])
def test_folded_array_tasks_unfold(spec, ids):
    assert scheduler._task_ids(spec) == ids


def test_pending_array_tasks_are_pending_not_missing(monkeypatch):
    fake_scontrol(monkeypatch, {"40": (0, PENDING_ARRAY, "")})
    states = scheduler.job_states(["40_0", "40_1", "40_2", "40_3", "40_4"])
    assert [states[f"40_{i}"]["state"] for i in range(5)] == ["RUNNING", "COMPLETED", "PENDING", "PENDING", "PENDING"]


def test_a_job_the_scheduler_forgot_is_unknown_and_ended_everywhere(monkeypatch):
    """The watch loop and the cancel agree: a job neither scontrol nor sacct knows has ended (UNKNOWN),
    where before the loop counted it PENDING — forever, on a cluster without accounting."""
    fake_scontrol(monkeypatch, {"7": (1, "", "slurm_load_jobs error: Invalid job id specified\n")})
    state = scheduler.job_states(["7"])["7"]
    assert state["state"] == "UNKNOWN" and state["state"] in scheduler.ENDED and "no longer knows" in state["reason"]
    cancelled = []
    monkeypatch.setattr(scheduler.subprocess, "run", lambda argv, **kw: cancelled.append(argv) or
                        subprocess.CompletedProcess(argv, 1, "", "Invalid job id specified"))

    class Job:
        job_id = "7"

    scheduler.cancel([Job()], wait_s=5)                     # returns at once: the job has ended
    assert cancelled[0] == ["scancel", "7"] and len(cancelled) == 2


def test_a_failing_scontrol_is_an_error_not_a_pending_job(monkeypatch):
    fake_scontrol(monkeypatch, {"8": (1, "", "slurm_load_jobs error: Unable to contact slurm controller "
                                              "(connect failure)\n")})
    with pytest.raises(scheduler.SchedulerError, match="Unable to contact slurm controller"):
        scheduler.job_states(["8"])


@pytest.mark.parametrize(("env", "workers", "threads"), [
    ({"SLURM_CPUS_ON_NODE": "4"}, 1, "4"),
    ({"SLURM_CPUS_ON_NODE": "4"}, 2, "2"),             # each worker its share of the node's CPUs
    ({"SLURM_CPUS_ON_NODE": "1"}, 2, "1"),             # never 0
    ({"SLURM_CPUS_ON_NODE": "4", "OMP_NUM_THREADS": "3"}, 2, "3"),   # the user's own setting wins
    ({}, 1, None),                                     # not in a job: left alone
])
def test_each_job_runs_as_many_threads_as_its_allocation(monkeypatch, env, workers, threads):
    """The rule that took two 1-CPU jobs on a 2-core node from 4 busy threads (87 s to a 5 s target) to 2."""
    for name in ("SLURM_CPUS_ON_NODE", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert job._thread_env(workers).get("OMP_NUM_THREADS") == threads


def test_a_batch_sbatch_refuses_is_one_paragraph_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    """No cluster behind `sbatch` (or a partition it does not have): submitit's FailedJobError becomes the
    command's one-paragraph error, exit 2, and the batch's own folder (OUT/.slurm) is removed again."""
    pytest.importorskip("submitit")
    from dawnbench.cli import main

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text("#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Unable to contact slurm "
                      "controller (connect failure)' >&2\nexit 1\n")
    sbatch.chmod(0o755)
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 1\n")      # submitit looks for srun before it calls sbatch:
    (bin_dir / "srun").chmod(0o755)                             # this machine need not have Slurm installed
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    out = tmp_path / "jobs"
    code = main(["jobs", "mnist", "--slots", "1", "--types", "multiple", "--executor", "slurm", "--out", str(out)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "Traceback" not in err
    assert "could not be submitted" in err and "Unable to contact slurm controller" in err and "Nothing ran" in err
    assert not list(out.rglob(".slurm"))


def test_a_job_that_ended_before_its_run_wrote_is_a_record_every_reader_takes(tmp_path):
    """A job that failed on its node before `dawnbench run` wrote anything (CI once saw one): its record is
    written by the batch, with the planned run's seed, and reads back as a run of the batch (never refused)."""
    from dawnbench.experiments.slurm.batch import PlannedRun
    from dawnbench.experiments.slurm.records import records_in, settle
    from dawnbench.records.record import read_result

    run = PlannedRun("seed=3", ["run", "mnist", "--seed", "3"], tmp_path / "seed-3")
    log = tmp_path / "13_0_log.err"
    log.write_text("srun: error: n1: task 0: Exited with exit code 1\nImportError: no module named x\n")
    [result] = settle(run.out, run.task, run.seed, "13", {"state": "FAILED", "reason": "NonZeroExitCode", "nodes": "n1"},
                      cancelled=False, job_log=log)
    [folder] = records_in(run.out)
    record = read_result(folder)
    assert record["status"] == result.status == "aborted" and record["seed"] == 3 and record["task"] == "mnist"
    assert "Slurm job 13 ended FAILED" in record["error"] and record["scheduler"]["node_names"] == ["n1"]
    assert "its log (" in record["error"] and record["error"].endswith("ImportError: no module named x")
    assert PlannedRun("x", ["run", "mnist"], tmp_path).seed == 0


def test_a_job_log_that_is_a_link_a_fifo_or_huge_is_never_followed_waited_on_or_read_whole(tmp_path):
    import os

    from dawnbench.experiments.slurm.records import _log_end

    secret = tmp_path / "secret"
    secret.write_text("password=hunter2\n")
    (tmp_path / "link.err").symlink_to(secret)
    os.mkfifo(tmp_path / "fifo.err")
    (tmp_path / "huge.err").write_bytes(b"\xff" * 50_000_000 + b"\nthe last line\n")
    assert _log_end(tmp_path / "link.err") is None and _log_end(tmp_path / "fifo.err") is None
    assert _log_end(tmp_path / "huge.err").endswith("the last line") and len(_log_end(tmp_path / "huge.err")) < 1000


def test_a_job_is_recorded_on_the_nodes_it_ran_on_not_those_still_completing(monkeypatch):
    # A two-node job that lost a node showed NodeList=n1 while COMPLETING: its record said it ran on one node.
    from types import SimpleNamespace

    from dawnbench.experiments.slurm import batch

    polls = iter([{"7": {"state": "PENDING", "reason": "Resources", "nodes": "(null)"}},
                  {"7": {"state": "RUNNING", "reason": "None", "nodes": "n[1-2]"}},
                  {"7": {"state": "COMPLETING", "reason": "NodeDown", "nodes": "n1"}},
                  {"7": {"state": "NODE_FAIL", "reason": "NodeDown", "nodes": "n1"}}])
    monkeypatch.setattr(batch, "job_states", lambda ids: next(polls))
    states, cancelled = batch._watch({"run": SimpleNamespace(job_id="7")}, SimpleNamespace(poll_s=0.0),
                                     lambda counts: None)
    assert not cancelled and states["7"]["state"] == "NODE_FAIL" and states["7"]["nodes"] == "n[1-2]"
