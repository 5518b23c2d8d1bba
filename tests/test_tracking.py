"""dawnbench.track(): a script's own loop recorded as a run folder an entry's run would be, under the same clock
rules; self-reported accuracy said everywhere; imported MLPerf logs as run folders (SPEC §2–§4, §8, §10)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from mlperf_logging import mllog

import dawnbench
from dawnbench import tasks
from dawnbench.analysis import analyze
from dawnbench.analysis.imported import import_log
from dawnbench.errors import DawnbenchError
from dawnbench.leaderboard import build_boards
from dawnbench.records.record import RunResult, read_result
from dawnbench.records.selection import select
from dawnbench.submissions import export_training

from helpers import flag_every_run, run_cli

RECORD_FILES = {"result.json", "events.log", "epochs.tsv", "resources.tsv"}


def right(inputs: torch.Tensor) -> torch.Tensor:
    """The tiny task's answer (every label is 0)."""
    return torch.zeros(len(inputs), dtype=torch.long)


def wrong(inputs: torch.Tensor) -> torch.Tensor:
    return torch.ones(len(inputs), dtype=torch.long)


def steps(n: int, seconds: float = 0.0) -> torch.Tensor:
    """``n`` optimizer steps of a small model (and ``seconds`` of sleep on the clock)."""
    model = torch.nn.Linear(16, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(n):
        loss = model(torch.randn(8, 16)).logsumexp(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    time.sleep(seconds)
    return loss.detach()


def test_a_tracked_loop_is_recorded_as_an_entry_s_run_is(tiny_task, tmp_path):
    answers = iter([wrong, right])
    with dawnbench.track(tiny_task, predict=lambda x: current(x), out=tmp_path, name="my-loop", seed=3,
                         hparams={"batch_size": 8}, quiet=True) as run:
        for epoch in (1, 2):
            loss = steps(5, seconds=0.05)
            current = next(answers)
            if run.evaluate(epoch=epoch, samples=epoch * 8, loss=loss):     # the tiny task's 8 items an epoch
                break
    r = run.result
    assert {p.name for p in run.dir.iterdir()} == RECORD_FILES
    assert RunResult.from_dict(read_result(run.dir)).status == r.status == "success"
    assert r.entry == "my-loop" and r.seed == 3 and r.official and not r.self_reported
    assert [e.value for e in r.evals] == [0.0, 100.0] and r.epochs_to_target == 2 and r.samples_to_target == 16
    # the clock: the two training stretches (≥ 2 × 50 ms of sleep), never the evaluations
    assert 0.1 <= r.time_to_accuracy_s == r.evals[-1].timed_s < r.wall_s
    assert r.tracked["scored_by"] == "harness" and r.setup_s > 0 and r.harness["share"] < 0.5
    assert run_cli(["check-log", str(run.dir)])[0] == 0     # MLCommons' checker accepts its events.log


def test_a_self_reported_run_says_so_in_every_reader(tiny_task, tmp_path):
    for seed in (0, 1):
        with dawnbench.track(tiny_task, out=tmp_path / "runs", name="mine", seed=seed, quiet=True) as run:
            steps(2)
            assert not run.evaluate(epoch=0.5, samples=20, accuracy=40.0)
            assert run.evaluate(epoch=1, samples=40, accuracy=lambda: 75.0)   # called with the clock stopped
        assert run.result.self_reported and run.result.tracked["scored_by"] == "script"
    [group] = analyze(tmp_path / "runs")["groups"]
    assert "self-reported" in group["name"]
    # a configuration of its own: never pooled with the harness's scoring of the same script
    harness_scored = RunResult.from_dict(read_result(run.dir))
    harness_scored.self_reported = False
    harness_scored.run_dir = str(tmp_path / "scored")    # a run of its own (the same folder's log is one run)
    assert len(select([run.result, harness_scored]).counted) == 2


def test_export_validate_and_the_board_mark_a_self_reported_submission(mnist_ready, tmp_path, monkeypatch):
    import dawnbench.submissions.export as export

    with dawnbench.track("mnist", out=tmp_path / "runs", name="mine", quiet=True) as run:
        steps(2)
        time.sleep(tasks.FLOORS_S["mnist"])  # no MNIST run reaches 99 % faster: a claim that did is refused
        run.evaluate(epoch=1, samples=60_000, accuracy=99.2)
    monkeypatch.setattr(export, "_git_config", lambda key: None)
    files = export_training([run.dir], tmp_path / "sub", author="A", email="a@b.c")
    doc = json.loads(files[0].read_text())
    assert doc["misc"]["dawnbench"]["self_reported"] is True
    code, out, err = run_cli(["validate", str(tmp_path / "sub"), "--json"])
    problems = json.loads(out)["problems"] if code == 0 else err
    assert code == 0 and any("self-reported" in p["message"] and p["severity"] == "warning" for p in problems)
    rows = [row for board in build_boards(tmp_path / "sub").tasks["mnist"].values() for row in board]
    assert rows and all(row["self_reported"] for row in rows)


def test_a_tracked_quick_trial_compares_with_the_quick_reference_as_to_the_same_target(mnist_ready, tmp_path):
    """The newcomer's case: a script trained on the quick trial's items could not say so, and `compare` against
    `run --quick` said the sides trained to different targets or data."""
    from helpers import write_run

    items, target = tasks.QUICK_TRIALS["mnist"]
    with dawnbench.track("mnist", out=tmp_path / "mine", name="mine", quick=True, quiet=True) as run:
        assert run.train_limit == items
        steps(2)
        time.sleep(tasks.FLOORS_S["mnist"])
        run.evaluate(epoch=1, samples=items, accuracy=target + 0.5)
    r = run.result
    assert (r.subset, r.threshold, r.official, r.status) == ("quick", target, False, "success")
    write_run(tmp_path / "ref" / "run0", 0, 5.0, 0.6, subset="quick", threshold=target, official=False)
    code, out, err = run_cli(["compare", str(tmp_path / "ref"), str(tmp_path / "mine")])
    said = " ".join(out.split())
    assert code == 0 and f"mnist ≥ {target:g} (quick)" in said and "different targets" not in said, out + err


def test_the_run_s_end_is_recorded_whatever_ends_the_loop(tiny_task, tmp_path):
    with pytest.raises(ZeroDivisionError):
        with dawnbench.track(tiny_task, predict=wrong, out=tmp_path, quiet=True) as run:
            steps(1)
            raise ZeroDivisionError("the loop failed")
    assert run.result.status == "aborted" and "ZeroDivisionError" in run.result.error
    assert (run.dir / "error.txt").is_file()
    with pytest.raises(KeyboardInterrupt):
        with dawnbench.track(tiny_task, predict=wrong, out=tmp_path, quiet=True) as run:
            raise KeyboardInterrupt
    assert run.result.status == "interrupted"
    with dawnbench.track(tiny_task, predict=wrong, out=tmp_path, max_epochs=2, quiet=True) as run:
        assert not run.evaluate(epoch=1, samples=8)
        assert run.evaluate(epoch=2, samples=16)           # the budget: over, and the clock stays stopped
        assert run.evaluate(epoch=3, samples=24) and len(run.result.evals) == 2   # nothing more is recorded
    assert run.result.status == "not_reached"
    with dawnbench.track(tiny_task, predict=wrong, out=tmp_path, quiet=True) as run:
        steps(1)                                          # the loop ends without reaching the target
    assert run.result.status == "not_reached" and run.result.evals == []


def test_the_last_line_says_a_flagged_run_was_flagged_and_epochs_are_rounded(tiny_task, tmp_path, monkeypatch,
                                                                           capsys):
    """A tracked run the monitor flagged ended on "dawnbench: success, ..." alone: the line a user copies said nothing
    of it. And a trainer's epoch of 3.2500000001 is "epoch 3.25" on its line."""
    flag_every_run(monkeypatch, 0.62)
    with dawnbench.track(tiny_task, predict=right, out=tmp_path) as run:
        run.evaluate(epoch=3.2500000001, samples=26)
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith("dawnbench: epoch 3.25: top1_accuracy 100.0000") for line in lines), lines
    assert lines[-1].startswith("dawnbench: success, time to accuracy ") and run.result.status == "success"
    assert ", flagged as disturbed (other processes took 62 % of the CPUs while its clock ran): its time is suspect " \
           "(analyze, compare, report and export leave it out unless --include-suspect) — " in lines[-1]
    assert not select([run.result]).counted          # as it says
    with dawnbench.track(tiny_task, predict=wrong, out=tmp_path / "missed", max_epochs=1) as run:
        run.evaluate(epoch=1, samples=8)
    last = capsys.readouterr().err.splitlines()[-1]      # a run that missed names the target it missed, too
    assert last.startswith("dawnbench: not_reached (target top1_accuracy ≥ ") and run.result.status == "not_reached"


@pytest.mark.parametrize("call, says", [
    (lambda run: run.evaluate(epoch=-1, samples=0), "evaluate(epoch=-1)"),
    (lambda run: run.evaluate(epoch=float("nan"), samples=0), "evaluate(epoch=nan)"),
    (lambda run: run.evaluate(epoch=1, samples=1e308), "evaluate(samples=1e+308)"),
    (lambda run: (run.evaluate(epoch=2, samples=80), run.evaluate(epoch=1, samples=40)), "training went back"),
    (lambda run: run.evaluate(epoch=1, samples=8, accuracy=50.0), "takes no accuracy of its own"),
])
def test_bad_evaluation_points_are_refused_naming_the_value(tiny_task, tmp_path, call, says):
    with pytest.raises(DawnbenchError) as caught, \
            dawnbench.track(tiny_task, predict=wrong, out=tmp_path, quiet=True) as run:
        call(run)
    assert says in str(caught.value)
    assert run.result.status == "aborted"                  # what was measured before it is kept


@pytest.mark.parametrize("value", [1e308, -1, float("inf"), "high", True, 0.5 + 0j])
def test_a_self_reported_accuracy_outside_the_metric_is_refused(tiny_task, tmp_path, value):
    with pytest.raises(DawnbenchError, match="a number from 0 to 100"), \
            dawnbench.track(tiny_task, out=tmp_path, quiet=True) as run:
        run.evaluate(epoch=1, samples=8, accuracy=value)


@pytest.mark.parametrize("options, says", [
    ({"name": "a/b"}, "without / or"),
    ({"name": ""}, "1 to 60 printable"),
    ({"predict": 3}, "is not callable"),
    ({"model": torch.nn.Linear(2, 2)}, "give both"),
    ({"hparams": {"lr": float("nan")}}, "finite numbers only"),
    ({"hparams": {"f": print}}, "track(hparams=...)"),
    ({"profile_steps": 0}, "profile_steps=0"),
    ({"target": 1e308}, "track(target=1e+308)"),
    ({"seed": -1}, "track(seed=-1)"),
    ({"precision": "fp8"}, "track(precision='fp8')"),
    ({"quick": "yes"}, "track(quick='yes')"),
    ({"quick": True}, "track(quick=...): "),       # a task without a quick trial
])
def test_bad_tracker_options_are_refused_before_anything_runs(tiny_task, tmp_path, options, says):
    with pytest.raises(DawnbenchError) as caught:
        dawnbench.track(tiny_task, out=tmp_path / "runs", quiet=True, **options)
    assert says in str(caught.value) and not (tmp_path / "runs").exists()


def test_the_profile_environment_variable_is_checked(tiny_task, tmp_path, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_PROFILE_STEPS", "ten")
    with pytest.raises(DawnbenchError, match="DAWNBENCH_PROFILE_STEPS='ten'"):
        dawnbench.track(tiny_task, out=tmp_path, quiet=True)


def test_calls_outside_the_run_are_refused(tiny_task, tmp_path):
    run = dawnbench.track(tiny_task, predict=wrong, out=tmp_path, quiet=True)
    with pytest.raises(DawnbenchError, match="outside the run"):
        run.evaluate(epoch=1, samples=8)
    with run:
        with pytest.raises(DawnbenchError, match="started already"):
            run.start()


def test_a_profiled_window_of_a_tracked_loop_is_what_explain_reads(tiny_task, tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    with dawnbench.track(tiny_task, predict=right, out=tmp_path, quiet=True, profile_steps=3,
                         model=model, example=torch.randn(2, 16), hparams={"batch_size": 8}) as run:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(10):
            loss = model(torch.randn(8, 16)).logsumexp(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        run.evaluate(epoch=1, samples=80)
    assert run.result.status == "success" and not run.result.official   # a profiler was on its clock
    summary = json.loads((run.dir / "profile" / "summary.json").read_text())
    assert summary["steps"] == 3 and summary["samples_per_s"] > 0 and summary["flop_check"]["ratio"]
    # what explain reads is the point, not its speed: a few kernel problems suffice
    code, out, err = run_cli(["explain", str(run.dir / "profile"), "--json", "--max-problems", "1"], seconds=120)
    assert code == 0, err
    assert "ops" in json.loads(out) or json.loads(out)
    code, _, err = run_cli(["profile", str(run.dir)])
    assert code == 2 and "DAWNBENCH_PROFILE_STEPS=10" in err


def _mllog(path: Path, accuracies: list[float], status: str = "success", benchmark: str | None = "mnist") -> Path:
    """An MLPerf log written by MLCommons' own mllog (as a user's instrumented script writes one)."""
    mllog.config(filename=str(path), default_stack_offset=1)
    log = mllog.get_mllogger()
    if benchmark:
        log.event(key=mllog.constants.SUBMISSION_BENCHMARK, value=benchmark)
    log.event(key=mllog.constants.SEED, value=7)
    log.start(key=mllog.constants.RUN_START)
    for epoch, value in enumerate(accuracies, 1):
        # past MNIST's floor of a time to target even after time_ms truncates each end (10 ms a step was flaky)
        time.sleep(tasks.FLOORS_S["mnist"] + 0.01)
        log.event(key=mllog.constants.EVAL_ACCURACY, value=value, metadata={"epoch_num": epoch})
    log.end(key=mllog.constants.RUN_STOP, metadata={"status": status})
    for handler in list(log.logger.handlers):    # the next log goes to its own file
        log.logger.removeHandler(handler)
        handler.close()
    return path


def test_an_imported_mlperf_log_is_a_self_reported_run_folder(tmp_path):
    log = _mllog(tmp_path / "result_0.txt", [98.0, 99.1, 99.3])
    folder = import_log(log, tmp_path / "runs")
    r = RunResult.from_dict(read_result(folder))
    assert r.status == "success" and r.self_reported and r.official and r.seed == 7
    assert [e.value for e in r.evals] == [98.0, 99.1]          # up to the first that passed
    assert r.time_to_accuracy_s == pytest.approx(r.timed_s) and r.imported["clock"].startswith("MLPerf")
    assert (folder / "epochs.tsv").read_text().splitlines()[0] == "epoch\thours\ttop1Accuracy"
    # beside a native run: one table, separate groups, the imported one named self-reported
    code, out, err = run_cli(["analyze", str(tmp_path / "runs"), "--json"])
    assert code == 0 and "self-reported" in json.loads(out)["groups"][0]["name"]


@pytest.mark.parametrize("accuracies, options, says", [
    ([0.97, 0.991], {}, "--scale 100"),
    ([97.0, 98.0], {}, "no eval_accuracy reached the target 99"),
    ([99.5], {"scale": 0.0}, "--scale"),
    ([99.5], {"task": "nope"}, "not a dawnbench task"),
])
def test_a_log_that_cannot_be_a_run_is_refused_naming_the_line(tmp_path, accuracies, options, says):
    log = _mllog(tmp_path / "result_0.txt", accuracies)
    with pytest.raises(DawnbenchError) as caught:
        import_log(log, tmp_path / "runs", **options)
    assert says in str(caught.value) and (str(log) in str(caught.value) or {"scale", "task"} & set(options))
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_log_without_its_benchmark_needs_the_task_and_a_log_of_fractions_its_scale(tmp_path):
    log = _mllog(tmp_path / "result_0.txt", [0.985, 0.992], benchmark=None)
    code, _, err = run_cli(["import-log", str(log), "--out", str(tmp_path / "runs")])
    assert code == 2 and "--task" in err
    code, out, err = run_cli(["import-log", str(log), "--task", "mnist", "--scale", "100", "--out",
                              str(tmp_path / "runs"), "--json"])
    assert code == 0, err
    [folder] = json.loads(out)["run_dirs"]
    assert read_result(Path(folder))["evals"][-1]["value"] == pytest.approx(99.2)
    code, _, err = run_cli(["export", str(log), "--author", "A", "--email", "a@b.c"])
    assert code == 2 and "import-log" in err


def test_what_the_attack_found_is_refused_or_recorded(tiny_task, tmp_path, monkeypatch):
    # predict's answers of the wrong form, a loss that is not one: a clear error, the clock running again after it
    for answers, says in ((lambda x: torch.zeros(3), "returned shape (3,) for a batch of 4"),
                          (lambda x: "zero", "returned str"),
                          (lambda x: -torch.ones(len(x), dtype=torch.long), "labels from -1 to -1"),
                          (lambda x: torch.full((len(x),), 0.5), "labels of torch.float32"),
                          (lambda x: torch.full((len(x), 2), float("nan")), "scores that are not all finite")):
        with pytest.raises(DawnbenchError, match="track.predict"), \
                dawnbench.track(tiny_task, predict=answers, out=tmp_path, quiet=True) as run:
            try:
                run.evaluate(epoch=1, samples=8)
            except DawnbenchError as err:
                assert says in str(err)
                steps(1, seconds=0.1)                     # the script goes on: timed again
                raise
        assert run.result.timed_s >= 0.1
    with pytest.raises(DawnbenchError, match="evaluate.loss=...."), \
            dawnbench.track(tiny_task, predict=right, out=tmp_path, quiet=True) as run:
        run.evaluate(epoch=1, samples=8, loss="abc")
    # a tracker records one run: started again after its end, refused
    with pytest.raises(DawnbenchError, match="started already"):
        run.start()
    # one profiled run at a time in a process
    first = dawnbench.track(tiny_task, predict=right, out=tmp_path, quiet=True, profile_steps=1).start()
    with pytest.raises(DawnbenchError, match="profiling in this process already"):
        dawnbench.track(tiny_task, predict=right, out=tmp_path, quiet=True, profile_steps=1).start()
    first.finish()
    # the script's own exit inside the block, with an error code
    with pytest.raises(SystemExit), dawnbench.track(tiny_task, predict=right, out=tmp_path, quiet=True) as run:
        raise SystemExit(3)
    assert run.result.status == "aborted" and "code 3" in run.result.error
    for options, says in (({"hparams": {"batch_size": 0}}, "batch_size"), ({"out": None}, "track(out=None)")):
        with pytest.raises(DawnbenchError, match=re.escape(says)):
            dawnbench.track(tiny_task, quiet=True, **options)
    monkeypatch.setenv("DAWNBENCH_PROFILE_STEPS", "²")
    with pytest.raises(DawnbenchError, match="DAWNBENCH_PROFILE_STEPS"):
        dawnbench.track(tiny_task, out=tmp_path, quiet=True)


@pytest.mark.parametrize("change, says", [
    (lambda lines: lines + lines, "a second run_start"),
    (lambda lines: [x.replace('"value": "mnist"', '"value": ["mnist"]') for x in lines], "not a dawnbench task"),
    (lambda lines: [x.replace('"status": "success"', '"status": {"a": 1}') for x in lines], "reached the target"),
])
def test_a_damaged_log_is_refused_not_crashed_on(tmp_path, change, says):
    log = _mllog(tmp_path / "result_0.txt", [99.5])
    log.write_text("\n".join(change(log.read_text().splitlines())) + "\n")
    code, out, err = run_cli(["import-log", str(log), "--out", str(tmp_path / "runs"), "--json"])
    assert code == 2 and says in err and "Traceback" not in err


def test_a_budget_spent_before_the_script_s_evaluation_is_never_a_time_to_accuracy(tiny_task, tmp_path):
    with dawnbench.track(tiny_task, predict=right, out=tmp_path, max_seconds=0.05, quiet=True) as run:
        steps(1, seconds=0.1)
        assert run.evaluate(epoch=1, samples=8)         # it passes, but the budget had gone: over
    r = run.result
    assert r.status == "not_reached" and r.time_to_accuracy_s is None and r.evals[0].stopped_by == "max_seconds"


def test_the_tracker_is_not_called_back_from_its_own_scoring(tiny_task, tmp_path):
    with dawnbench.track(tiny_task, out=tmp_path, quiet=True) as run:
        with pytest.raises(DawnbenchError, match="while the tracker is scoring"):
            run.evaluate(epoch=1, samples=8, accuracy=lambda: run.evaluate(epoch=2, samples=16, accuracy=50.0) or 50)
        assert run.evaluate(epoch=2, samples=16, accuracy=np.float32(60.0))   # numpy's numbers are numbers
    assert run.result.status == "success" and code_of(run) == 0


def code_of(run) -> int | None:
    """check-log's verdict on the run's events.log."""
    return run_cli(["check-log", str(run.dir)])[0]


def test_two_runs_started_in_the_same_second_get_folders_of_their_own(tiny_task, tmp_path):
    runs = [dawnbench.track(tiny_task, predict=right, out=tmp_path, name="same", quiet=True).start() for _ in range(3)]
    for run in runs:
        run.finish()
    assert len({run.dir for run in runs}) == 3
