"""Timing rules and statuses, against a fake clock (SPEC §2–§4)."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys

import pytest

from dawnbench.harness.clock import Clock
from dawnbench.records import mllog

from helpers import run_scripted
from scripted_entry import (
    BUILD_S,
    LOAD_S,
    PREDICT_S,
    STEP_S,
    WARMUP_S,
    FakeTime,
    Scripted,
)


def test_tta_is_timed_seconds_at_first_passing_evaluation(tiny_task, tmp_path):
    result, _ = run_scripted(tiny_task, tmp_path, passes=[False, False, True, True])
    setup = LOAD_S + BUILD_S
    assert result.status == "success"
    assert [e.timed_s for e in result.evals] == [setup + STEP_S, setup + 2 * STEP_S, setup + 3 * STEP_S]
    assert result.time_to_accuracy_s == setup + 3 * STEP_S  # data loading and model building are timed
    assert result.epochs_to_target == 3.0 and result.samples_to_target == 24
    assert result.eval_s == pytest.approx(3 * PREDICT_S)     # evaluation is not timed ...
    assert result.wall_s == pytest.approx(result.time_to_accuracy_s + result.eval_s)  # ... but in wall
    assert result.init_s == WARMUP_S                          # warm-up is recorded, not timed, not wall
    assert [e.value for e in result.evals] == [0.0, 0.0, 100.0]


def test_continue_keeps_first_pass_as_tta(tiny_task, tmp_path):
    result, _ = run_scripted(tiny_task, tmp_path, passes=[False, True, True, False], continue_after_target=True)
    assert result.status == "success"
    assert len(result.evals) == 4
    assert result.time_to_accuracy_s == LOAD_S + BUILD_S + 2 * STEP_S


def test_schedule_ends_without_pass_is_not_reached(tiny_task, tmp_path):
    result, _ = run_scripted(tiny_task, tmp_path, passes=[False, False])
    assert result.status == "not_reached"
    assert result.time_to_accuracy_s is None and result.epochs_to_target is None
    assert len(result.evals) == 2


@pytest.mark.parametrize("budget, evals", [({"max_epochs": 2}, 2), ({"max_seconds": LOAD_S + BUILD_S + STEP_S}, 1)])
def test_budgets_end_as_not_reached(tiny_task, tmp_path, budget, evals):
    result, _ = run_scripted(tiny_task, tmp_path, passes=[False] * 5, **budget)
    assert result.status == "not_reached" and len(result.evals) == evals


def test_nonfinite_loss_is_diverged(tiny_task, tmp_path):
    result, _ = run_scripted(tiny_task, tmp_path, passes=[False, False, True], losses=[2.0, math.nan, 0.1])
    assert result.status == "diverged"
    assert len(result.evals) == 1 and "nan" in result.error


def test_entry_exception_is_aborted_and_keeps_evaluations(tiny_task, tmp_path):
    result, run_dir = run_scripted(tiny_task, tmp_path, passes=[False, False, True], fail_at=2)
    assert result.status == "aborted"
    assert "entry failed on purpose" in result.error
    assert len(result.evals) == 2
    assert "ValueError" in (run_dir / "error.txt").read_text()


def test_sigint_is_interrupted(tiny_task, tmp_path):
    result, run_dir = run_scripted(tiny_task, tmp_path, passes=[False, False, True], signal_at=1)
    assert result.status == "interrupted" and len(result.evals) == 1
    assert json.loads((run_dir / "result.json").read_text())["status"] == "interrupted"


def test_a_sigterm_is_passed_on_once_the_run_is_recorded():
    """A run stops at SIGTERM as interrupted; the program around it (a test suite, a user's script) that handles
    SIGTERM is then told too, once, after the block, so that it stops as well (the suite's conftest does)."""
    import os
    import time

    from dawnbench.harness.signals import StopRun, stop_on_signals

    told: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: told.append(signum))
    try:
        stopped = None
        with stop_on_signals(None) as budgets:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)                    # the handler's StopRun ends the sleep at once
            except StopRun as stop:
                stopped = stop.status
                budgets.caught()
            assert not told                      # not before the run holds its stop
        assert stopped == "interrupted" and told == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_sigint_evaluates_first_when_asked(tiny_task, tmp_path):
    result, run_dir = run_scripted(tiny_task, tmp_path, passes=[False, True, True], signal_at=1, eval_on_interrupt=True)
    assert result.status == "interrupted" and result.time_to_accuracy_s is None  # never a TTA, even passing
    assert [(e.value, e.stopped_by) for e in result.evals] == [(0.0, None), (100.0, "signal")]
    assert (run_dir / "epochs.tsv").read_text().count("\n") == 3


def test_wall_time_limit_is_timeout(tiny_task, tmp_path):
    result, _ = run_scripted(tiny_task, tmp_path, passes=[False] * 10, sleep_s=0.1, max_wall_seconds=0.25)
    assert result.status == "timeout" and 1 <= len(result.evals) <= 3


def test_the_wall_budget_counts_the_setup_before_the_run_and_the_card_shows_every_part(tiny_task, tmp_path):
    import time

    from rich.console import Console

    from dawnbench.cli.display import result_card

    # a setup of 100 s already spent: a 50 s budget has nothing left, the run ends as it opens
    result, _ = run_scripted(tiny_task, tmp_path, since=time.time() - 100, passes=[False] * 10, sleep_s=0.1,
                             max_wall_seconds=50)
    assert result.status == "timeout" and result.setup_s >= 100 and result.evals == []
    assert "setup and warm-up included" in result.error
    console = Console(width=300, record=True)
    console.print(result_card(result))
    card = " ".join(console.export_text().split())
    assert f"wall time {result.total_wall_s:.2f} s from the start: setup {result.setup_s:.2f} s" in card


def test_unofficial_target_and_cost(tiny_task, tmp_path):
    result, _ = run_scripted(tiny_task, tmp_path, passes=[False, True], target=40.0, cost_per_hour=36.0)
    assert result.official is False and result.threshold == 40.0
    assert result.training_cost_usd == pytest.approx(result.time_to_accuracy_s / 3600 * 36.0)


def test_no_price_means_null_cost(tiny_task, tmp_path):
    result, _ = run_scripted(tiny_task, tmp_path, passes=[True])
    assert result.official is True
    assert result.cost_per_hour is None and result.training_cost_usd is None


def test_run_record_files(tiny_task, tmp_path):
    result, run_dir = run_scripted(tiny_task, tmp_path, passes=[False, True])
    saved = json.loads((run_dir / "result.json").read_text())
    for key in ("task", "entry", "seed", "status", "official", "metric", "threshold", "time_to_accuracy_s",
                "wall_s", "eval_s", "init_s", "epochs_to_target", "evals", "hparams", "hardware", "software",
                "cost_per_hour", "training_cost_usd", "inference"):
        assert key in saved, key
    assert saved["evals"][1] == {"epoch": 2.0, "samples": 16, "timed_s": LOAD_S + BUILD_S + 2 * STEP_S, "value": 100.0,
                                 "extra": {}, "stopped_by": None}
    assert {"python", "torch", "dawnbench"} <= set(saved["software"])
    assert {"cpu", "cores", "accelerator", "memory_gib"} <= set(saved["hardware"])

    tsv = (run_dir / "epochs.tsv").read_text().splitlines()
    assert tsv[0].split("\t") == ["epoch", "hours", "top1Accuracy"]
    assert [float(x) for x in tsv[2].split("\t")] == pytest.approx([2.0, (LOAD_S + BUILD_S + 2 * STEP_S) / 3600, 100.0])

    events = [mllog.parse_line(line) for line in (run_dir / "events.log").read_text().splitlines()]
    keys = [e["key"] for e in events]
    for key in ("submission_benchmark", "seed", "run_start", "eval_accuracy", "run_stop", "global_batch_size"):
        assert key in keys
    stop = next(e for e in events if e["key"] == "run_stop")
    assert stop["event_type"] == "INTERVAL_END" and stop["metadata"]["status"] == "success"
    accuracy = [e for e in events if e["key"] == "eval_accuracy"]
    assert [a["metadata"]["epoch_num"] for a in accuracy] == [1.0, 2.0]
    assert all(set(e) == {"namespace", "time_ms", "event_type", "key", "value", "metadata"} for e in events)


def test_clock_syncs_before_every_reading():
    fake, syncs = FakeTime(), []
    clock = Clock(now=fake.now, sync=lambda: syncs.append(fake.t))
    clock.start()
    with clock.segment("train"):
        fake.advance(4)
    with clock.segment("eval"):
        fake.advance(1)
    assert clock.timed_s == 4 and clock.total("eval") == 1 and clock.wall_s == 5
    assert len(syncs) == 5  # start, and both ends of two segments


def test_a_batch_command_stops_on_sigint_even_when_started_with_it_ignored():
    """A script's background job starts with SIGINT ignored; `kill -INT` must still stop a batch's wait."""
    code = ("import time\nfrom dawnbench.harness.signals import interruptible\n"      # says so once it listens
            "try:\n    with interruptible():\n        print('waiting', flush=True)\n        time.sleep(30)\n"
            "except KeyboardInterrupt:\n    raise SystemExit(130)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.stdout.readline() == "waiting\n"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 130


class _Counting(Scripted):
    """The scripted entry, remembering how many training items its run was handed."""

    seen: list[int] = []

    def train(self, ctx):
        _Counting.seen.append(len(ctx.load_train()[0]))
        yield from super().train(ctx)


def test_a_quick_trial_trains_on_the_first_items_and_is_unofficial(tiny_task, tmp_path, monkeypatch):
    from dawnbench import tasks
    from dawnbench.errors import DawnbenchError
    from dawnbench.harness.options import RunOptions, prepare
    from dawnbench.harness.runner import run_seed

    monkeypatch.setitem(tasks.QUICK_TRIALS, "tiny", (3, 40.0))   # the first 3 of its 8 items, target 40
    _Counting.seen = []
    options = RunOptions(task=tiny_task, entry=_Counting, quick=True, overrides={"passes": [False, True]})
    prep = prepare(options)
    assert (prep.task.subset, prep.task.train_limit, prep.threshold, prep.official) == ("quick", 3, 40.0, False)
    result = run_seed(options, prep, seed=0, run_dir=tmp_path / "run")
    assert _Counting.seen == [3]                 # the first 3 items, not the 8
    assert result.status == "success" and result.subset == "quick" and result.official is False
    events = [json.loads(line.split(":::MLLOG ", 1)[1]) for line in (tmp_path / "run" / "events.log").open()]
    assert next(e["value"] for e in events if e["key"] == mllog.TRAIN_SAMPLES) == 3
    # a lowered target of its own still leaves it unofficial; the data a user imports has --subset instead
    assert prepare(RunOptions(task="mnist", quick=True, target=99.0)).official is False
    assert prepare(RunOptions(task="mnist", quick=True)).threshold == 97.0
    with pytest.raises(DawnbenchError, match="--subset"):
        prepare(RunOptions(task="imagenet", quick=True))


def test_a_wall_budget_the_setup_already_spent_ends_with_a_card_not_a_traceback(mnist_ready, tmp_path, capsys):
    from dawnbench.cli import main

    code = main(["run", "mnist", "--quick", "--max-wall-seconds", "0.001", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err and "timeout" in out and "max_wall_seconds" in out


def test_the_python_api_refuses_in_one_paragraph_what_the_command_line_cannot_be_given(mnist_ready, tmp_path):
    """What argparse's choices keep from the command line, the API checks itself: an unknown keyword of ``run`` (a
    user's ``out=`` for ``out_dir=``), a scaling that is not one, a kind of file dawnbench does not read."""
    from dawnbench import RunOptions, prepare, read_json, run
    from dawnbench.errors import DawnbenchError

    with pytest.raises(DawnbenchError, match=r"run\(out=\.\.\.\): not an option of a run.*--out is out_dir="):
        run("mnist", out=str(tmp_path))
    with pytest.raises(DawnbenchError, match="--scaling 'diagonal': use weak or strong"):
        prepare(RunOptions(task="mnist", scaling="diagonal"))
    (tmp_path / "result.json").write_text("{}")
    with pytest.raises(DawnbenchError, match="'result.json' is not a kind of file dawnbench reads; name one of"):
        read_json(tmp_path / "result.json", "result.json")
    assert read_json(tmp_path / "result.json", "run record") == {}
