"""Plausible by physics, safe by default: figures checked against each other and against what hardware can do,
writers through the same door as readers, nothing replaced unasked (docs/reference/documents.md, "Physics").

Every example is one a fresh attack broke: values each inside its bound but impossible together, a record the tool
wrote and its own readers refused, a file replaced without a word, a log read out of order."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

import dawnbench
from dawnbench import tasks
from dawnbench.analysis.imported import import_log
from dawnbench.errors import DawnbenchError
from dawnbench.records.record import read_result
from dawnbench.records.submission import read_submission

import bad_inputs
from helpers import main_in_process, write_run


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code, out, err = main_in_process(capsys, *args)
    return code, out, " ".join(err.split())


# --- values inside their bounds, impossible together ------------------------------------------------------------

@pytest.mark.parametrize("fields, said", [
    ({"epochs_to_target": 1e-9, "samples_to_target": 5888,
      "evals": [{"epoch": 1e-9, "samples": 5888, "timed_s": 10.0, "value": 99.1}]}, "make an epoch of 5.888e+12 samples"),
    ({"time_to_accuracy_s": 1e-3}, "below 0.02 s, the floor of a time to 99 on mnist"),
    ({"timed_s": 20.0, "wall_s": 10.0}, "more than wall_s 10 s"),
    ({"cost_per_hour": 3.0, "training_cost_usd": 500.0}, "is not cost_per_hour × time_to_accuracy_s"),
    ({"throughput": {"flops_per_sample": 1e13, "samples_per_s": 1.0}, "samples_to_target": 60_000},
     "what samples_to_target × throughput.flops_per_sample take"),
])
def test_a_record_whose_fields_cannot_be_true_together_is_refused_naming_them(capsys, tmp_path, fields, said):
    write_run(tmp_path / "runs" / "r", 0, 10.0, 1.0, **{k: v for k, v in fields.items() if k != "evals"})
    record = json.loads((tmp_path / "runs" / "r" / "result.json").read_text())
    if "evals" in fields:
        record["evals"] = fields["evals"]
        (tmp_path / "runs" / "r" / "result.json").write_text(json.dumps(record))
    if "time_to_accuracy_s" in fields:   # the passing evaluation moves with it
        record["evals"][-1]["timed_s"] = fields["time_to_accuracy_s"]
        record["evals"][0]["timed_s"] = fields["time_to_accuracy_s"] / 2
        (tmp_path / "runs" / "r" / "result.json").write_text(json.dumps(record))
    code, _, err = run_cli(capsys, "analyze", tmp_path / "runs")
    assert code == 2 and said in err and "result.json" in err


def test_a_million_samples_a_second_per_device_is_the_ceiling(tmp_path):
    write_run(tmp_path / "r", 0, 11.0, 1.0, task="custom")   # a task of the user's: no epoch size to hold to
    record = json.loads((tmp_path / "r" / "result.json").read_text())
    record["evals"][-1]["samples"] = 10**14        # 1e14 samples in 11 s, in 1e5 epochs
    record["evals"][-1]["epoch"] = record["epochs_to_target"] = 1e5
    (tmp_path / "r" / "result.json").write_text(json.dumps(record))
    with pytest.raises(DawnbenchError, match=r"samples/s on 1 device\(s\): no device trains on more than 1e\+09"):
        read_result(tmp_path / "r")


def _entry(tmp_path: Path, name: str, row: str) -> Path:
    """An MNIST training submission ``name`` under ``tmp_path/entries`` whose TSV is one ``row``; its JSON's path."""
    folder = tmp_path / "entries" / "MNIST" / "train"
    folder.mkdir(parents=True)
    doc = {"version": "v1.0", "author": "a", "authorEmail": "a@b.c", "framework": "PyTorch", "model": "m",
           "hardware": "h", "costPerHour": 3.0, "timestamp": "2026-11-01"}
    (folder / f"{name}.json").write_text(json.dumps(doc))
    (folder / f"{name}.tsv").write_text(f"epoch\thours\ttop1Accuracy\n{row}\n")
    return folder / f"{name}.json"


def test_a_submission_faster_than_the_task_s_floor_is_an_error_and_never_ranked(capsys, tmp_path):
    sub = read_submission(_entry(tmp_path, "fast", "0.001\t1e-6\t99.1"), tmp_path / "entries")   # 3.6 ms
    assert any("below 0.02 s, the floor" in p.message for p in sub.problems if p.severity == "error")
    code, out, _ = run_cli(capsys, "leaderboard", tmp_path / "entries", "--json")
    assert code in (0, 1) and "fast.json" not in json.dumps(json.loads(out)["tasks"])


def test_numbers_in_a_submission_tsv_are_ascii_digits(tmp_path):
    sub = read_submission(_entry(tmp_path, "x", "١\t٠.٥\t٩٩.١"), tmp_path / "entries")
    assert any("'١' is not a number" in p.message for p in sub.problems)


@pytest.mark.parametrize("entry, said", [("cafe\u0301", "composed form (NFC)"), ("a\u200bb", "U+200B"),
                                         ("a\u202eb", "U+202E (RIGHT-TO-LEFT OVERRIDE)")])
def test_a_name_prints_as_it_is(tmp_path, entry, said):
    write_run(tmp_path / "r", 0, 10.0, 1.0, entry=entry)
    with pytest.raises(DawnbenchError, match=rf"field 'entry'.*{re.escape(said)}"):
        read_result(tmp_path / "r")


# --- MLPerf logs in time order ----------------------------------------------------------------------------------

def _log(path: Path, *lines: tuple[str, float, dict]) -> Path:
    records = [{"key": "submission_benchmark", "value": "mnist", "time_ms": 0, "metadata": {}}]
    records += [{"key": key, "value": meta.pop("value", None), "time_ms": t * 1000, "metadata": meta}
                for key, t, meta in lines]
    path.write_text("".join(f":::MLLOG {json.dumps(r)}\n" for r in records))
    return path


@pytest.mark.parametrize("lines, said", [
    ([("run_start", 1, {}), ("eval_accuracy", 2, {"value": 99.5, "epoch_num": 1}),
      ("run_stop", 500, {"status": "aborted"}), ("run_stop", 3, {"status": "success"})], "goes back"),
    ([("run_start", 1, {}), ("eval_accuracy", 2, {"value": 99.5, "epoch_num": 1}),
      ("run_stop", 3, {"status": "aborted"}), ("run_stop", 4, {"status": "success"})], "a second run_stop"),
    ([("run_start", 1, {}), ("run_stop", 3, {"status": "success"}),
      ("eval_accuracy", 4, {"value": 99.5, "epoch_num": 1})], "eval_accuracy at 4.000 s comes after run_stop"),
    ([("run_start", 1, {}), ("eval_accuracy", 2, {"value": 99.5, "epoch_num": 1e6, "samples_count": 1}),
      ("run_stop", 3, {"status": "success"})], "make an epoch of 1e-06 samples"),
])
def test_an_mlperf_log_is_read_in_time_order_and_refused_in_one_paragraph(capsys, tmp_path, lines, said):
    log = _log(tmp_path / "result_0.txt", *lines)
    code, _, err = run_cli(capsys, "import-log", log, "--out", tmp_path / "runs")
    assert code == 2 and said in err and "result_0.txt" in err and not (tmp_path / "runs").exists()


def test_a_v05_log_with_an_infinite_time_is_refused_not_a_traceback(capsys, tmp_path):
    log = tmp_path / "v05.log"
    log.write_text(f":::MLPv0.5.0 mnist 1{'0' * 400} (x.py:3) run_start\n:::MLPv0.5.0 mnist 5 (x.py:4) run_stop: "
                   '{"success": true}\n')
    code, _, err = run_cli(capsys, "analyze", log)
    assert code == 2 and "is not a number of seconds from 0 to" in err and "v05.log:1" in err


# --- the tracker: what it writes its readers take; one thread at a time ---------------------------------------

def test_hparams_nested_deeper_than_a_record_is_read_are_refused_at_track(tmp_path):
    deep: dict = {}
    for _ in range(5000):
        deep = {"a": deep}
    with pytest.raises(DawnbenchError, match="nested more than 61 deep"):
        dawnbench.track("mnist", out=tmp_path, hparams=deep, quiet=True)


def test_a_success_at_no_training_is_refused_as_it_is_claimed(tmp_path):
    with pytest.raises(DawnbenchError, match="a time to accuracy at an evaluation that saw no training"):
        with dawnbench.track("mnist", out=tmp_path, quiet=True) as run:
            import time
            time.sleep(tasks.FLOORS_S["mnist"])
            run.evaluate(epoch=0, samples=0, accuracy=99.5)
    assert read_result(run.dir)["status"] == "aborted"


@pytest.mark.parametrize("samples, said", [(15, "make an epoch of 9.33333 samples, but an epoch of mnist's training split "
                                                  "holds 60,000"), (270_000_000, "holds 60,000")])
def test_an_epoch_of_a_task_holds_about_its_split(tmp_path, samples, said):
    write_run(tmp_path / "r", 0, 10.0, 1.5)
    record = json.loads((tmp_path / "r" / "result.json").read_text())
    record["evals"][0]["samples"], record["evals"][-1]["samples"] = samples // 2, samples
    (tmp_path / "r" / "result.json").write_text(json.dumps(record))
    with pytest.raises(DawnbenchError, match=said):
        read_result(tmp_path / "r")


def test_many_evaluations_are_appended_and_all_kept(tmp_path):
    with dawnbench.track("mnist", out=tmp_path, quiet=True) as run:
        for i in range(1, 601):
            run.evaluate(epoch=i / 100, samples=i * 600, accuracy=50.0)
    assert len(read_result(run.dir)["evals"]) == 600
    assert len((run.dir / "epochs.tsv").read_text().splitlines()) == 601


def test_evaluate_from_two_threads_at_once_is_refused_in_one_paragraph(tmp_path):
    errors: list[BaseException] = []
    inside, leave = threading.Event(), threading.Event()

    def slow(*_):                         # holds the tracker while the other thread calls
        inside.set()
        leave.wait(10)
        return 50.0

    with dawnbench.track("mnist", out=tmp_path, quiet=True) as run:
        first = threading.Thread(target=lambda: run.evaluate(epoch=0.5, samples=30000, accuracy=slow))
        first.start()
        assert inside.wait(10)
        try:
            run.evaluate(epoch=1, samples=60000, accuracy=50.0)
        except DawnbenchError as err:
            errors.append(err)
        leave.set()
        first.join()
    assert len(errors) == 1 and "another thread is inside the tracker" in str(errors[0])
    assert len(read_result(run.dir)["evals"]) == 1


# --- nothing replaced unasked -------------------------------------------------------------------------------------

def test_a_second_export_to_one_folder_is_refused_and_force_replaces(capsys, tmp_path):
    for seed in range(3):
        write_run(tmp_path / "runs" / f"r{seed}", seed, 10.0 + seed, 1.0)
        hours = (10.0 + seed) / 3600
        (tmp_path / "runs" / f"r{seed}" / "epochs.tsv").write_text(
            f"epoch\thours\ttop1Accuracy\n0.5\t{hours / 2}\t98\n1\t{hours}\t99.1\n")     # its record's evaluations
    args = ["export", tmp_path / "runs", "--out", tmp_path / "sub", "--author", "a", "--email", "a@b.c"]
    assert run_cli(capsys, *args)[0] == 0
    [json_file] = (tmp_path / "sub").rglob("*.json")
    before = json_file.read_bytes()
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and f"{json_file} and " in err and "exist, and this command did not write it" in err
    assert "--force" in err
    assert json_file.read_bytes() == before
    assert run_cli(capsys, *args, "--force")[0] == 0


def test_a_report_does_not_replace_a_page_it_did_not_write(capsys, tmp_path):
    for seed in range(3):
        write_run(tmp_path / "runs" / f"r{seed}", seed, 10.0 + seed, 1.0)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "index.html").write_text("MINE")
    code, _, err = run_cli(capsys, "report", tmp_path / "runs", "--out", tmp_path / "out")
    assert code == 2 and "index.html: exists" in err and (tmp_path / "out" / "index.html").read_text() == "MINE"


def test_an_imported_log_s_record_is_what_its_readers_take(tmp_path):
    log = _log(tmp_path / "result_0.txt", ("run_start", 1, {}), ("eval_accuracy", 2, {"value": 98.0, "epoch_num": 1}),
               ("eval_accuracy", 3, {"value": 99.5, "epoch_num": 2}), ("run_stop", 4, {"status": "success"}))
    folder = import_log(log, tmp_path / "runs")
    assert read_result(folder)["time_to_accuracy_s"] == pytest.approx(3.0)


def test_a_tracked_evaluation_no_epoch_could_hold_is_refused_as_it_is_taken_and_not_kept(tmp_path):
    with pytest.raises(DawnbenchError, match="make an epoch of 0.3001 samples"):
        with dawnbench.track("mnist", out=tmp_path, quiet=True) as run:
            run.evaluate(epoch=0.5, samples=30000, accuracy=98.0)
            run.evaluate(epoch=100000, samples=30010, accuracy=98.5)
    record = read_result(run.dir)
    assert record["status"] == "aborted" and [e["epoch"] for e in record["evals"]] == [0.5]
    assert len((run.dir / "epochs.tsv").read_text().splitlines()) == 2


def test_every_writer_s_record_is_read_by_every_reader(capsys, tmp_path):
    """One door, both ways: a tracked run's and an imported log's records, and the submission exported from them,
    read by each command that reads them (the profile's and kernels file's writers call their readers' checks)."""
    import time

    for seed in range(3):
        with dawnbench.track("mnist", out=tmp_path / "tracked", seed=seed, quiet=True) as run:
            time.sleep(tasks.FLOORS_S["mnist"] * (1 + seed))
            run.evaluate(epoch=0.5, samples=30000, accuracy=98.0)
            run.evaluate(epoch=1.0, samples=60000, accuracy=99.2)
    log = _log(tmp_path / "result_0.txt", ("run_start", 1, {}), ("eval_accuracy", 2, {"value": 99.5, "epoch_num": 1}),
               ("run_stop", 3, {"status": "success"}))
    import_log(log, tmp_path / "imported")
    for folder in (tmp_path / "tracked", tmp_path / "imported"):
        for args in (["analyze", folder, "--include-suspect"], ["compare", folder, folder, "--include-suspect"],
                     ["report", folder, "--out", tmp_path / f"report-{folder.name}", "--include-suspect"],
                     ["check-log", next(folder.iterdir())]):
            code, _, err = run_cli(capsys, *args)
            # a folder compared with itself is read whole on both sides, then refused: one run on both sides
            assert code in (0, 1) or (args[0] == "compare" and code == 2 and "the same run is on both sides" in err), \
                (args, err)
    code, _, err = run_cli(capsys, "export", tmp_path / "tracked", "--out", tmp_path / "sub", "--author", "a",
                           "--email", "a@b.c", "--include-suspect")
    assert code == 0, err
    for args in (["validate", tmp_path / "sub"], ["leaderboard", tmp_path / "sub"]):
        code, _, err = run_cli(capsys, *args)
        assert code == 0, (args, err)


def test_a_planted_site_manifest_deletes_nothing_the_site_did_not_write(capsys, tmp_path):
    """A manifest names any file it likes, with the digest it likes: only the list a build of this user signed in
    this folder removes anything, and only a page as the site wrote it."""
    import hashlib
    import shutil

    _entry(tmp_path, "x", "1\t0.01\t99.1")
    site = tmp_path / "site"
    site.mkdir()
    (site / "notes.txt").write_text("mine")
    (site / ".dawnbench-site.json").write_text(json.dumps({"files": ["notes.txt"],
                                                           "sha256": {"notes.txt": "0" * 64}}))
    code, _, err = run_cli(capsys, "leaderboard", tmp_path / "entries", "--html", site)
    assert code == 2 and "signature does not match" in err and (site / "notes.txt").read_text() == "mine"
    # the outsider's case: a site built here, a user's copy of a page added to its manifest with the right digest
    (site / ".dawnbench-site.json").unlink()
    (site / "notes.txt").unlink()
    assert run_cli(capsys, "leaderboard", tmp_path / "entries", "--html", site)[0] in (0, 1)
    shutil.copy(site / "index.html", site / "my-copy.html")
    manifest = json.loads((site / ".dawnbench-site.json").read_text())
    manifest["sha256"]["my-copy.html"] = hashlib.sha256((site / "my-copy.html").read_bytes()).hexdigest()
    (site / ".dawnbench-site.json").write_text(json.dumps(manifest))
    assert run_cli(capsys, "leaderboard", tmp_path / "entries", "--html", site)[0] == 2
    assert (site / "my-copy.html").exists()
    # the signed manifest as the build left it: a rebuild replaces its own pages, and only them
    del manifest["sha256"]["my-copy.html"]
    (site / ".dawnbench-site.json").write_text(json.dumps(manifest))
    assert run_cli(capsys, "leaderboard", tmp_path / "entries", "--html", site)[0] in (0, 1)
    assert (site / "my-copy.html").exists() and (site / "index.html").exists()




# --- the old doors under one physics (issue 83) ------------------------------------------------------------------

@pytest.mark.parametrize("case_id", [c for c in bad_inputs.OLD_DOORS if c.startswith(("w8d-submission", "w8d-inference"))])
def test_a_submission_that_contradicts_itself_is_an_error_and_never_ranked(capsys, tmp_path, case_id):
    """Each of the attack's submissions (an epoch-0 row at the target, epochs going back, a billionth of an epoch, a
    million epochs a second, a price no machine has, a flagged seed not among the runs, a date in 2999): validate
    says error, and the leaderboard ranks none of them."""
    [(_, _, args_of)] = [c for c in bad_inputs.CASES if c[0] == case_id]
    folder = args_of(tmp_path, tmp_path)[1]
    code, out, _ = run_cli(capsys, "validate", folder)
    assert code == 1 and "error:" in out, out
    code, out, _ = run_cli(capsys, "leaderboard", folder, "--json")
    ranked = [r["file"] for boards in json.loads(out)["tasks"].values() for rows in boards.values() for r in rows]
    assert code in (0, 1) and not any(f.endswith("/x.json") for f in ranked), ranked


@pytest.mark.parametrize("command", ["analyze", "import-log", "check-log"])
def test_dawnbench_s_own_quick_log_passes_every_reader_of_a_log(capsys, tmp_path, command):
    """A --quick run's events.log (its train_samples, 6,000) was refused by analyze and import-log, held to MNIST's
    60,000-item split; each reader of a log now reads it by what it says of itself."""
    lines = [("submission_benchmark", 0, "mnist", {}), ("train_samples", 0, 6000, {}), ("eval_target", 0, 97.0, {}),
             ("seed", 0, 0, {}), ("run_start", 1, None, {}),
             ("eval_accuracy", 1.2, 90.3, {"epoch_num": 0.49, "samples_count": 2944}),
             ("eval_accuracy", 1.4, 97.3, {"epoch_num": 0.98, "samples_count": 5888}),
             ("run_stop", 1.5, None, {"status": "success"})]
    log = bad_inputs._mlperf_run(tmp_path, [(k, t, v, m) for k, t, v, m in lines])
    args = [command, log] + (["--out", tmp_path / "imported"] if command == "import-log" else [])
    code, out, err = run_cli(capsys, *args)
    if command == "check-log":      # MLCommons' rules want blocks this hand-made log lacks; dawnbench's reader is content
        assert "dawnbench's reader" not in out, out
    else:
        assert code == 0, err
    if command == "import-log":
        [folder] = (tmp_path / "imported").iterdir()
        record = read_result(folder)
        assert (record["subset"], record["official"], record["threshold"]) == ("quick", False, 97.0)


def test_a_flag_deleted_from_a_record_is_found_again_in_its_resources_tsv(tmp_path):
    """The attack's case: a run flagged as disturbed, its flag and figures deleted from result.json, while its
    resources.tsv still shows others taking 105 % of its CPUs: it was counted clean."""
    from dawnbench.analysis import analyze

    for seed, tta in ((0, 10.0), (1, 11.0)):
        write_run(tmp_path / "runs" / f"run{seed}", seed, tta, 1.0, hardware={"cpu": "x", "cores": 2})
    rows = "".join(f"{0.5 * (i + 1)}\t90\t45\t300\t210\t1e8\t1e8\t1e9\t1\n" for i in range(20))
    (tmp_path / "runs" / "run1" / "resources.tsv").write_text(
        "t_s\tproc_cpu_pct\tcpu_machine_pct\tsys_cpu_pct\tothers_cpu_pct\trun_rss_bytes\tproc_rss_bytes\t"
        "sys_mem_used_bytes\ttimed_frac\n" + rows)
    [group] = analyze(tmp_path / "runs")["groups"]
    [left] = group["excluded"]
    assert group["runs"] == 1 and left["run"].endswith("run1") and "its resources.tsv" in left["reason"]


def test_a_copy_whose_log_moved_or_went_is_found_by_what_it_measured(tmp_path):
    """A copy whose events.log had its run_start moved a millisecond, or was deleted, counted as a second seed."""
    import shutil

    from dawnbench.analysis import analyze

    write_run(tmp_path / "runs" / "run0", 0, 10.0, 1.0)
    write_run(tmp_path / "runs" / "run1", 1, 12.0, 1.0)
    def moved(log: Path) -> None:          # run_start a millisecond later
        events = [json.loads(line.split(":::MLLOG ", 1)[1]) for line in log.read_text().splitlines()]
        events[0]["time_ms"] += 0.5
        log.write_text("".join(f":::MLLOG {json.dumps(e)}\n" for e in events))

    for seed, (name, edit) in enumerate((("z-moved", moved), ("z-gone", Path.unlink)), 7):
        copy = tmp_path / "runs" / name
        shutil.copytree(tmp_path / "runs" / "run0", copy)
        doc = json.loads((copy / "result.json").read_text())
        (copy / "result.json").write_text(json.dumps({**doc, "seed": seed}))
        edit(copy / "events.log")
    [group] = analyze(tmp_path / "runs")["groups"]
    assert group["runs"] == 2 and {Path(e["run"]).name for e in group["excluded"]} == {"z-moved", "z-gone"}
    assert all("its evaluations are the same" in e["reason"] for e in group["excluded"]), group["excluded"]


def test_a_rebuild_checks_every_path_before_it_removes_anything(capsys, tmp_path):
    """The second attack's regression: a built site whose entries/ became a link to a user's folder lost its pages
    and the user's file before the build refused the link."""
    _entry(tmp_path, "x", "1\t0.01\t99.1")
    site = tmp_path / "site"
    assert run_cli(capsys, "leaderboard", tmp_path / "entries", "--html", site)[0] in (0, 1)
    mine = tmp_path / "mine"
    (site / "entries").rename(mine)
    (site / "entries").symlink_to(mine)
    kept = {p.name for p in mine.iterdir()} | {p.name for p in site.iterdir()}
    code, _, err = run_cli(capsys, "leaderboard", tmp_path / "entries", "--html", site)
    assert code == 2 and "symbolic link" in err
    assert {p.name for p in mine.iterdir()} | {p.name for p in site.iterdir()} == kept        # nothing removed


def test_a_record_is_held_to_its_epochs_tsv_without_its_log(tmp_path):
    """Every time in result.json halved, its events.log deleted: its epochs.tsv (what export ranks by) still says."""
    from dawnbench.analysis import analyze

    write_run(tmp_path / "runs" / "r", 0, 10.0, 1.0)
    (tmp_path / "runs" / "r" / "epochs.tsv").write_text(
        f"epoch\thours\ttop1Accuracy\n0.5\t{5 / 3600:.9f}\t98\n1\t{10 / 3600:.9f}\t99.1\n")
    doc = json.loads((tmp_path / "runs" / "r" / "result.json").read_text())
    doc.update(time_to_accuracy_s=5.0, timed_s=5.0, wall_s=10.0,
               evals=[{**e, "timed_s": e["timed_s"] / 2} for e in doc["evals"]])
    (tmp_path / "runs" / "r" / "result.json").write_text(json.dumps(doc))
    (tmp_path / "runs" / "r" / "events.log").unlink()
    with pytest.raises(DawnbenchError, match="its epochs.tsv has that epoch after 5 s"):
        analyze(tmp_path / "runs")


def test_epochs_between_rows_take_time_and_a_cpu_profile_is_held_to_a_cpu(tmp_path, capsys):
    sub = read_submission(_entry(tmp_path, "x", "1\t0.01\t90\n1000\t0.01\t99.5"), tmp_path / "entries")
    assert any("after epoch 1 at hours 0.01" in p.message for p in sub.problems if p.severity == "error")
    profile = bad_inputs._profile(tmp_path, bad_inputs.OP.replace("9.9e+07", "1.9e+15").format(calls=2, time=1),
                                  lambda d: d["roofs"]["flops"].update(fp32=2e15))
    code, _, err = run_cli(capsys, "classes", profile)
    assert code == 2 and "the fastest cpu's" in err


def test_an_import_past_a_record_s_evaluations_is_refused_as_the_log_streams(tmp_path):
    from dawnbench.records.mlperf import LogError, read_run

    log = bad_inputs._mlperf_run(tmp_path, [("run_start", 0, None, {})] + [
        ("eval_accuracy", i + 1, 50.0, {"epoch_num": i + 1}) for i in range(5)] + [("run_stop", 9, None, {})])
    assert len(read_run(log).evals) == 5
    with pytest.raises(LogError, match="more than 3 evaluations"):
        read_run(log, most_evaluations=3)


def test_a_copied_submission_is_ranked_once_and_a_log_states_each_fact_once(tmp_path, capsys):
    import shutil

    from dawnbench.records.mlperf import LogError, read_run

    first = _entry(tmp_path, "x", "1\t0.01\t99.5")
    for suffix in (".json", ".tsv"):
        shutil.copy(first.with_suffix(suffix), first.with_name("y" + suffix))
    code, out, _ = run_cli(capsys, "leaderboard", tmp_path / "entries", "--json")
    ranked = [r["file"] for rows in json.loads(out)["tasks"]["mnist"].values() for r in rows]
    assert "MNIST/train/x.json" in ranked and "MNIST/train/y.json" not in ranked
    log = bad_inputs._mlperf_run(tmp_path, [("seed", 0, 1, {}), ("seed", 0, 2, {}), ("run_start", 1, None, {}),
                                            ("run_stop", 9, None, {})])
    with pytest.raises(LogError, match="a log states each fact of its run once"):
        read_run(log)


def test_a_record_runs_the_task_its_command_line_ran(tmp_path):
    write_run(tmp_path / "runs" / "r", 0, 10.0, 1.0, software={"argv": ["dawnbench", "run", "cifar10", "--seed", "0"]})
    with pytest.raises(DawnbenchError, match="its command line .software.argv. ran \"cifar10\""):
        read_result(tmp_path / "runs" / "r")
