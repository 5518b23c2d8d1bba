"""The same runs counted the same way by every command (records/selection.py): run's summary, analyze,
compare, report and export agree on which runs count, each says what it left out and why, an empty
selection is a sentence — never an empty figure — and export refuses what validate would reject."""

from __future__ import annotations

import argparse
import io
import json
import re

import pytest
from rich.console import Console

from dawnbench.analysis import analyze
from dawnbench.cli import main
from dawnbench.cli.training import _report
from dawnbench.records.record import RunResult
from dawnbench.records.selection import select
from dawnbench.reports.html import build_report
from dawnbench.submissions import export_training

from helpers import write_run

BUSY = {"interference": "other processes took 12.0 CPU-s (30 % of this machine's 2 cores) while the clock was "
                        "timing: the TTA is suspect; rerun on an otherwise idle machine"}


def _runs(folder, ttas, **fields) -> list:
    for i, tta in enumerate(ttas):
        write_run(folder / f"run{i}", i, tta, 0.6, **fields)
        (folder / f"run{i}" / "epochs.tsv").write_text(
            f"epoch\thours\ttop1Accuracy\n0.6\t{(tta or 9.0) / 3600:.9f}\t{99.1 if tta else 98.0}\n")
    return sorted(folder.iterdir())


def test_every_command_leaves_the_flagged_runs_out_and_says_so(tmp_path, capsys):
    flagged = _runs(tmp_path / "busy", [94.9, 95.2, 94.1], resources=BUSY)
    _runs(tmp_path / "quiet", [90.0, 91.0, 92.0])
    records = [RunResult.from_dict(json.loads((d / "result.json").read_text())) for d in flagged]
    # run's own summary: the same selection, not "TTA median 94.90 s"
    out, err = io.StringIO(), io.StringIO()
    _report(records, argparse.Namespace(json=False, include_suspect=False), Console(file=out, width=200),
            Console(file=err, width=400))
    assert "no run counted" in out.getvalue() and "TTA median" not in out.getvalue()
    assert "3 of 3 run(s) left out, none counted: 3 flagged as disturbed" in err.getvalue()
    assert "--include-suspect counts them" in err.getvalue()
    # analyze: 0 runs, each with the reason
    [group] = analyze(tmp_path / "busy")["groups"]
    assert group["runs"] == 0 and len(group["excluded"]) == 3 and "flagged: other processes" in group["excluded"][0]["reason"]
    # compare: a reason and the way to count them, not "no runs."
    assert main(["compare", str(tmp_path / "busy"), str(tmp_path / "quiet")]) == 2
    message = " ".join(capsys.readouterr().err.split())
    assert "no runs counted. 3 of 3 run(s) left out" in message and "--include-suspect counts them" in message
    assert main(["compare", str(tmp_path / "busy"), str(tmp_path / "quiet"), "--include-suspect", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs_a"] == 3
    # report: a sentence, not an empty TTA figure with a 0–0.05 s axis
    said: list[str] = []
    page = build_report(tmp_path / "busy", tmp_path / "rep", notes=said).read_text()
    assert said == ["the page has no time to accuracy to show: 3 of 3 run(s) left out, none counted: 3 flagged as "
                    "disturbed: other processes took the CPU while their clocks ran (--include-suspect counts them)."]
    assert 'id="empty"' in page and "none counted" in page and "Distribution of time to accuracy" not in page
    # export: refused before anything is written
    with pytest.raises(Exception, match="flagged as disturbed") as refused:
        export_training([tmp_path / "busy"], tmp_path / "sub", "A", "a@b")
    assert "Nothing was written" in str(refused.value) and not (tmp_path / "sub").exists()
    # exported with --include-suspect, the flag travels: misc names the runs, validate warns, the board marks it
    [json_path, _] = export_training([tmp_path / "busy"], tmp_path / "sub", "A", "a@b", include_suspect=True)
    flagged = json.loads(json_path.read_text())["misc"]["dawnbench"]["flagged"]
    assert [f["seed"] for f in flagged] == [0, 1, 2] and "other processes took" in flagged[0]["interference"]
    assert main(["validate", str(tmp_path / "sub"), "--json"]) == 0
    [warning] = [p for p in json.loads(capsys.readouterr().out)["problems"] if "disturbed" in p["message"]]
    assert warning["severity"] == "warning" and "3 of its 3 runs" in warning["message"]
    assert main(["leaderboard", str(tmp_path / "sub"), "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["tasks"]["mnist"]["training_time"]
    assert row["flagged"] == 3


def test_an_interrupted_run_measures_nothing_and_is_not_a_failure(tmp_path):
    _runs(tmp_path / "r", [10.0, 11.0])
    write_run(tmp_path / "r" / "stopped", 9, None, 0.1, status="interrupted")
    [group] = analyze(tmp_path / "r")["groups"]
    assert group["runs"] == 2 and group["successes"] == 2                 # not a third run that failed
    assert group["excluded"][0]["reason"].startswith("interrupted before it finished")


def test_export_refuses_an_unofficial_run_with_why_and_prices_at_export(tmp_path):
    _runs(tmp_path / "low", [5.0], threshold=90.0, official=False)
    with pytest.raises(Exception) as refused:
        export_training([tmp_path / "low"], tmp_path / "sub", "A", "a@b")
    message = str(refused.value)
    assert "unofficial: its target 90 is not mnist's 99" in message and "validate" in message
    _runs(tmp_path / "ok", [5.0, 6.0])
    notes: list[str] = []
    [unpriced, _] = export_training([tmp_path / "ok"], tmp_path / "sub1", "A", "a@b", notes=notes)
    assert "costPerHour" not in json.loads(unpriced.read_text()) and "training-cost board" in notes[0]
    [priced, _] = export_training([tmp_path / "ok"], tmp_path / "sub2", "A", "a@b", cost_per_hour=3.06)
    doc = json.loads(priced.read_text())
    assert doc["costPerHour"] == 3.06 and doc["misc"]["dawnbench"]["priced_at_export"] is True
    [by_instance, _] = export_training([tmp_path / "ok"], tmp_path / "sub3", "A", "a@b", instance="p3.2xlarge")
    assert json.loads(by_instance.read_text())["costPerHour"] == 3.06


def test_the_selection_keeps_failures_and_reports_each_left_out_run():
    seeds = iter(range(100))

    def result(status: str, busy: bool = False) -> RunResult:
        return RunResult(task="mnist", entry="e", seed=next(seeds), status=status, official=True, metric="top1",
                         threshold=99.0, run_dir=status, resources=BUSY if busy else None)

    chosen = select([result("success"), result("not_reached"), result("aborted"), result("interrupted"),
                     result("success", busy=True)])
    assert [r.status for r in chosen.counted] == ["success", "not_reached", "aborted"]
    assert [r.run_dir for r, _ in chosen.left_out] == ["interrupted", "success"]
    assert chosen.sentence() == ("2 of 5 run(s) left out, 3 counted: 1 flagged as disturbed: other processes took "
                                 "the CPU while their clocks ran (--include-suspect counts them); 1 interrupted "
                                 "before they finished.")
    assert len(select([result("success", busy=True)], include_suspect=True).counted) == 1


def test_a_run_both_unofficial_and_flagged_is_refused_for_what_no_flag_changes():
    """For a submission the run's unofficial target is the reason (--include-suspect would not help); for the
    analyses, which count unofficial runs, it is the flag."""
    run = RunResult(task="mnist", entry="e", seed=0, status="success", official=False, metric="top1",
                    threshold=90.0, run_dir="low", resources=BUSY)
    [(_, why)] = select([run], official=True).left_out
    assert why.startswith("unofficial: its target 90 is not mnist's 99")
    [(_, why)] = select([run]).left_out
    assert why.startswith("flagged")


def test_a_seed_counts_once_however_many_records_of_it_there_are():
    """Five copies of seed 0 are one run; the same seed of another configuration is another run."""
    def result(seed: int, run_dir: str, lr: float = 0.1) -> RunResult:
        return RunResult(task="mnist", entry="e", seed=seed, status="not_reached", official=True, metric="top1",
                         threshold=99.0, run_dir=run_dir, hparams={"lr": lr})

    chosen = select([result(0, f"copy{i}") for i in range(5)] + [result(1, "s1"), result(0, "other", lr=0.2)])
    assert [r.run_dir for r in chosen.counted] == ["copy0", "s1", "other"]
    assert all("a second record of seed 0 of this configuration (copy0 is counted)" in why
               for _, why in chosen.left_out)
    assert "4 second record(s) of a seed already counted" in chosen.sentence()


def test_a_copy_with_its_seed_relabelled_inside_one_folder_counts_once(tmp_path, capsys):
    """The attack's case: a run copied beside itself with a new seed in its record — the same event log, one run —
    was counted twice in one group. The second folder met is left out, naming the first."""
    import shutil

    [first, _] = _runs(tmp_path / "runs", [5.0, 6.0])
    shutil.copytree(first, tmp_path / "runs" / "run9")
    record = json.loads((tmp_path / "runs" / "run9" / "result.json").read_text())
    (tmp_path / "runs" / "run9" / "result.json").write_text(json.dumps({**record, "seed": 9}))
    [group] = analyze(tmp_path / "runs")["groups"]
    assert group["runs"] == 2, group
    [left] = group["excluded"]
    assert left["run"].endswith("run9") and f"a second record of the run in {first}" in left["reason"]
    assert main(["analyze", str(tmp_path / "runs")]) == 0
    said = " ".join(capsys.readouterr().err.split())
    assert "kept out of mnist · small-cnn · fp32:" in said and "records the same start, to the millisecond" in said
    # its log edited too (a line added, the last removed): the same start, the same run
    lines = (tmp_path / "runs" / "run9" / "events.log").read_text().splitlines()
    (tmp_path / "runs" / "run9" / "events.log").write_text("\n".join([*lines, ""][:max(1, len(lines))]) + "\n\n")
    assert analyze(tmp_path / "runs")["groups"][0]["runs"] == 2
    # logs that say no start (emptied) prove nothing: two different runs stay two
    for run in (tmp_path / "runs").iterdir():
        (run / "events.log").write_text("")
    doc = analyze(tmp_path / "runs")        # the copy is still found by what it measured: its evaluations
    assert doc["groups"][0]["runs"] == 2 and len(doc["problems"]) == 3       # each said, none dropped unsaid
    assert all("whether the run is a copy of another cannot be checked" in p["message"] for p in doc["problems"])
    _runs(tmp_path / "other", [7.0, 8.0])          # compare says so too, side by side (the attack found it silent)
    assert main(["compare", str(tmp_path / "other"), str(tmp_path / "runs")]) == 0
    said = " ".join(capsys.readouterr().err.split())
    assert said.count("B: problem: ") == 3 and "whether the run is a copy of another cannot be checked" in said


def test_a_flag_is_not_trusted_only_as_written_and_a_quick_trial_cannot_say_it_is_official(tmp_path):
    from dawnbench.errors import DawnbenchError
    from dawnbench.records.record import read_result

    # the interference sentence deleted, the monitor's own figures kept: still flagged
    [run] = _runs(tmp_path / "edited", [9.0], resources={"others_share_timed": 0.62, "timed_s_sampled": 9.0,
                                                           "own_cpus": 2})
    [group] = analyze(tmp_path / "edited")["groups"]
    assert group["runs"] == 0 and "its interference sentence is missing" in group["excluded"][0]["reason"]
    # a quick trial edited to say official, a subset MNIST does not have: refused, naming the field
    for fields, said in (({"subset": "quick", "official": True}, "official is true, but the run trained on a subset"),
                         ({"subset": "x", "official": False}, "mnist has one official dataset")):
        write_run(tmp_path / str(fields["subset"]), 0, 9.0, 0.6, **fields)
        with pytest.raises(DawnbenchError, match=said):
            read_result(tmp_path / str(fields["subset"]))


def _flagged(share: float) -> dict:
    """What the monitor records of a run other processes disturbed: its sentence and its own figures."""
    return {**BUSY, "others_share_timed": share, "timed_s_sampled": 9.0, "own_cpus": 2}


def test_every_line_a_user_copies_names_the_flagged_runs_behind_it(tmp_path, capsys):
    """The newcomer's case: "B is 2.87× slower than A" with nothing saying the runs behind it were flagged. Now the
    verdict of compare, analyze's row, the report's verdicts and the run summary each carry it, with the share."""
    for i, (tta, share) in enumerate([(5.0, 0.61), (6.0, 0.664), (7.0, None), (8.0, None)]):
        write_run(tmp_path / "ref" / f"run{i}", i, tta, 0.6, **({"resources": _flagged(share)} if share else {}))
    _runs(tmp_path / "mine", [14.0, 16.0, 18.0, 21.0])
    ref, mine = tmp_path / "ref", tmp_path / "mine"
    counted = "A: 2 of 4 runs counted were flagged as disturbed (other processes took 61–66 % of the CPUs while their " \
              "clocks ran)."
    # compare: in the verdict, and the JSON lists the flagged runs counted, per side
    assert main(["compare", str(ref), str(mine), "--include-suspect", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"].startswith("B is") and doc["verdict"].endswith(counted)
    assert [f["others_share_timed"] for f in doc["flagged_counted"]["a"]] == [0.61, 0.664] and doc["flagged_counted"]["b"] == []
    assert main(["compare", str(ref), str(mine)]) == 0       # left out: the verdict's line says so, and how to count them
    verdict = " ".join(capsys.readouterr().out.split())
    assert verdict.endswith("could reach p < 0.05. A: 2 flagged runs left out (--include-suspect counts them).")
    # analyze: each group's row, and its JSON
    [group] = analyze(ref, include_suspect=True)["groups"]
    assert group["disturbed"] == counted[3:-1] and len(group["flagged_counted"]) == 2
    assert main(["analyze", str(ref)]) == 0
    row = " ".join(capsys.readouterr().out.replace("│", "").split())
    assert "⚠ 2 flagged runs left out (--include-suspect counts them)" in row
    # report: the comparison's verdict and the configuration's row on the page, and the terminal's note
    said: list[str] = []
    page = build_report([ref, mine], tmp_path / "rep", include_suspect=True, notes=said).read_text()
    assert page.count(counted[3:-1]) == 2 and counted in page and said == [f"ref: mnist · small-cnn · fp32: {counted[3:-1]}"]
    # run's summary and each flagged run's own card, on the result's line
    records = [RunResult.from_dict(json.loads((d / "result.json").read_text())) for d in sorted(ref.iterdir())]
    out = io.StringIO()
    _report(records, argparse.Namespace(json=False, include_suspect=True), Console(file=out, width=400),
            Console(file=io.StringIO()))
    shown = " ".join(out.getvalue().split())
    assert "success · flagged as disturbed (other processes took 61 % of the CPUs while its clock ran): its time is " \
           "suspect" in shown and shown.count("while its clock ran): its time is suspect") == 2
    assert f"max 8.00 s · {counted[3:-1]}" in shown and shown.count("│ success ⚠ flagged │") == 2   # and their rows


def test_a_side_of_one_flagged_run_says_1_of_1_as_every_side_does_and_a_card_says_it_plainly(tmp_path, capsys):
    write_run(tmp_path / "ref" / "run0", 0, 5.0, 0.6, resources=_flagged(0.61))
    _runs(tmp_path / "mine", [14.0])
    assert main(["compare", str(tmp_path / "ref"), str(tmp_path / "mine"), "--include-suspect"]) == 0
    verdict = " ".join(capsys.readouterr().out.split())
    assert "A: 1 of 1 run counted was flagged as disturbed (other processes took 61 % of the CPUs while its clock " \
           "ran)." in verdict
    from dawnbench.records.selection import disturbance

    [record] = [RunResult.from_dict(json.loads((tmp_path / "ref" / "run0" / "result.json").read_text()))]
    assert disturbance([record]).startswith("flagged as disturbed (other processes took 61 %")


def test_compare_refuses_a_folder_of_several_configurations_naming_them(tmp_path, capsys):
    """Two learning rates in one folder were pooled into one group by compare, where report and analyze kept two."""
    for lr in (0.1, 0.2):
        _runs(tmp_path / "lr" / f"lr={lr}", [5.0, 6.0], hparams={"lr": lr})
    _runs(tmp_path / "other", [9.0, 9.5])
    assert main(["compare", str(tmp_path / "other"), str(tmp_path / "lr")]) == 2
    message = " ".join(capsys.readouterr().err.split())
    assert f"B: {tmp_path / 'lr'} holds runs of 2 configurations — mnist · small-cnn · fp32 · lr=0.1" in message
    assert "mnist · small-cnn · fp32 · lr=0.2" in message and "Traceback" not in message
    assert f"name a folder that holds one configuration's runs, e.g. {tmp_path / 'lr' / 'lr=0.1'}" in message
    assert main(["compare", str(tmp_path / "other"), str(tmp_path / "lr" / "lr=0.1"), "--json"]) == 0   # as it says
    assert json.loads(capsys.readouterr().out)["runs_b"] == 2
    # both configurations' runs side by side in one folder: no sub-folder to name, so it says to make them
    (tmp_path / "mixed").mkdir()
    for run in (tmp_path / "lr").glob("*/run*"):
        run.rename(tmp_path / "mixed" / f"{run.parent.name}-{run.name}")
    assert main(["compare", str(tmp_path / "mixed"), str(tmp_path / "other")]) == 2
    assert "move each configuration's runs into a folder of its own" in " ".join(capsys.readouterr().err.split())


def test_a_run_still_running_or_killed_before_its_end_is_left_out_not_counted_a_failure(tmp_path, capsys):
    """A record that still says running (the run trains yet, or was killed) measures nothing: a 0× from it misled."""
    _runs(tmp_path / "a", [90.0, 91.0])
    _runs(tmp_path / "b", [45.0, 46.0])
    write_run(tmp_path / "b" / "run9", 9, None, 0.6, status="running", evals=[])
    chosen = select([RunResult.from_dict(json.loads((d / "result.json").read_text()))
                     for d in sorted((tmp_path / "b").iterdir())])
    assert len(chosen.counted) == 2 and "not finished: its record still says running" in chosen.left_out[0][1]
    assert "1 not finished (still running, or killed before writing their end)" in chosen.sentence()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs_b"] == 2 and doc["failures_b"] == 0 and doc["speedup"] == pytest.approx(2.0, rel=0.05)
    [group] = analyze(tmp_path / "b")["groups"]
    assert group["runs"] == 2 and "not finished" in group["excluded"][0]["reason"]


def test_compare_names_the_target_on_its_verdict_and_says_when_the_sides_trained_to_different_ones(tmp_path, capsys):
    _runs(tmp_path / "a", [90.0, 91.0, 92.0, 93.0])
    _runs(tmp_path / "b", [45.0, 46.0, 47.0, 48.0])
    _runs(tmp_path / "low", [40.0, 41.0, 42.0], threshold=97.0, official=False)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    verdict = " ".join(capsys.readouterr().out.split())
    assert "faster than A to mnist ≥ 99 (" in verdict and "different targets" not in verdict
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "low"), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["verdict"]
    assert "to each side's target" in said and "A (mnist ≥ 99) and B (mnist ≥ 97) trained to different targets" in said


@pytest.mark.parametrize("resources, said", [
    ({"others_share_timed": 5}, "others_share_timed' is 5: a share of the run's CPUs, between 0 and 1"),
    ({"others_share_timed": "x"}, "others_share_timed' is 'x'"),
    ({"interference": 5}, "interference' is 5: the monitor's sentence"),
    ({"interference": "busy\nerror: a line of its own"}, "holds U+000A"),
    ({"interference": "busy \u202e"}, "holds U+202E")])
def test_a_monitors_figures_are_what_a_monitor_can_write(tmp_path, resources, said):
    """Every verdict line prints the monitor's sentence and share: 500 % of the CPUs, or a forged line, is refused."""
    from dawnbench.errors import DawnbenchError
    from dawnbench.records.record import read_result

    write_run(tmp_path / "r", 0, 9.0, 0.6, resources=resources)
    with pytest.raises(DawnbenchError, match=re.escape(said)):
        read_result(tmp_path / "r")
