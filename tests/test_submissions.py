"""DAWNBench submissions: the validator, the real 118 entries, the boards, export, and fuzzing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dawnbench.leaderboard import build_boards, display
from dawnbench.leaderboard.site import entry_page
from dawnbench.records.submission import read_submission
from dawnbench.submissions import export_training

from helpers import run_cli, write_run

GOOD = {"version": "v1.0", "author": "A", "authorEmail": "a@b", "framework": "PyTorch", "model": "M",
        "hardware": "1 V100", "costPerHour": 3.06, "timestamp": "2019-01-02", "misc": {}}
GOOD_TSV = "epoch\thours\ttop1Accuracy\n1\t0.01\t90.5\n2\t0.02\t94.1\n3\t0.03\t94.5\n"


def write_entry(root: Path, name: str, fields=GOOD, tsv: str | None = GOOD_TSV, task="CIFAR10") -> Path:
    folder = root / task / "train"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(fields if isinstance(fields, str) else json.dumps(fields, indent=4))
    if tsv is not None:
        path.with_suffix(".tsv").write_text(tsv)
    return path


def messages(sub) -> list[tuple[int | None, str, str]]:
    return [(p.line, p.severity, p.message) for p in sub.problems]


# --- the validator on written examples ------------------------------------------------------
def test_good_entry_has_no_problems_and_its_time(tmp_path):
    sub = read_submission(write_entry(tmp_path, "good"), tmp_path)
    assert sub.problems == [] and sub.training_hours == 0.02 and sub.task.key == "cifar10"


@pytest.mark.parametrize("fields, tsv, line, severity, text", [
    ('{\n  "version": "v1.0",\n  "author": \n}', GOOD_TSV, 4, "error", "not valid JSON"),
    ({k: v for k, v in GOOD.items() if k != "author"}, GOOD_TSV, None, "error", "required field 'author' is missing"),
    ({**GOOD, "hardware": " "}, GOOD_TSV, 7, "error", "'hardware' is empty"),
    ({**GOOD, "costPerHour": "3.06"}, GOOD_TSV, 8, "error", "'costPerHour' must be a number of USD an hour"),
    ({**GOOD, "timestamp": "2019-13-45"}, GOOD_TSV, 9, "error", "is not a date"),
    ({**GOOD, "timestamp": "2019-1-2"}, GOOD_TSV, 9, "warning", "should be written 2019-01-02"),
    ({**GOOD, "timestamp": "1900-01-01"}, GOOD_TSV, 9, "error", "is before DAWNBench began (2017-01-01)"),
    ({**GOOD, "timestamp": "\u0662\u0660\u0661\u0668-04-20"}, GOOD_TSV, 9, "error", "is not a date"),
    ({**GOOD, "timestamp": "2018-04-20\u202e"}, GOOD_TSV, 9, "error", "is not a date"),
    ({**GOOD, "author": "A" * 100_000}, GOOD_TSV, 3, "error", "'author' is 100,000 characters long"),
    ({**GOOD, "model": "Res\u202eNet"}, GOOD_TSV, 6, "error", "'model' holds U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    ({**GOOD, "author": "A\nB"}, GOOD_TSV, 3, "error", "'author' holds U+000A"),
    ('{\n"version": "v1.0",\n"author": "Alice",\n"author": "Mallory"\n}', GOOD_TSV, 3, "error",
     "'author' is given more than once"),
    (GOOD, "epoch\thours\ttop1Accuracy\thours\n1\t0.1\t95\t9\n", 1, "error", "column hours appears more than once"),
    (GOOD, "epoch\thours\ttop1Accuracy\n1\t0.1\t93.99999999999\n", None, "error", "(best 93.99999999999)"),
    ({**GOOD, "misc": "batch 512"}, GOOD_TSV, 10, "warning", "'misc' should be an object"),
    (GOOD, None, None, "error", "its training log CIFAR10/train/e.tsv is missing"),
    (GOOD, "epoch\thours\tacc\n1\t0.1\t95\n", 1, "error", "header lacks top1Accuracy"),
    (GOOD, "epoch\thours\ttop1Accuracy\n1\t0.1\t9O.5\n", 2, "error", "top1Accuracy '9O.5' is not a number"),
    (GOOD, "epoch\thours\ttop1Accuracy\n1\t0.2\t90\n2\t0.1\t95\n", 3, "error", "hours 0.1 is less than"),
    (GOOD, "epoch\thours\ttop1Accuracy\n1\t0.1\t90\n1\t0.2\t95\n", 3, "warning", "epoch 1 does not increase"),
    (GOOD, "epoch\thours\ttop1Accuracy\n1e308\t0.01\t95\n", 2, "error", "epoch 1e+308 is impossible"),
    (GOOD, "epoch\thours\ttop1Accuracy\n-5\t0.01\t95\n", 2, "error", "epoch -5 is impossible"),
    (GOOD, "epoch\thours\ttop1Accuracy\n1\t0.1\t90\n2\t0.2\t93.9\n", None, "error", "never reaches top1Accuracy ≥ 94"),
    (GOOD, "epoch\thours\ttop1Accuracy\n1\t0.1\t0.9\n2\t0.2\t0.95\n", 1, "warning", "looks like a 0–1 fraction"),
    (GOOD, "epoch\thours\ttop1Accuracy\t\n1\t0.1\t95\t\n", 1, "warning", "blank column name"),
    (GOOD, "\ufeffepoch\thours\ttop1Accuracy\r\n1\t0.1\t95\r\n", 1, "warning", "byte-order mark"),
])
def test_each_flaw_is_located(tmp_path, fields, tsv, line, severity, text):
    sub = read_submission(write_entry(tmp_path, "e", fields, tsv), tmp_path)
    assert any(at == line and s == severity and text in m for at, s, m in messages(sub)), messages(sub)


def test_a_name_that_would_turn_a_board_row_around_is_refused_and_never_printed_raw(tmp_path):
    path = write_entry(tmp_path, "name\u202egpj.exe")
    assert any(m.startswith("the file's name holds U+202E") for _, _, m in messages(read_submission(path, tmp_path)))
    code, out, _ = run_cli(["validate", str(tmp_path)])
    assert code == 1 and "\u202e" not in out and "name\\u202egpj.exe.json" in out
    write_entry(tmp_path / "nl", "ok.json:1: error: all fine\nx")     # a name that would print a line of its own
    code, out, _ = run_cli(["validate", str(tmp_path / "nl")])
    assert code == 1 and "ok.json:1: error: all fine\\nx.json" in out and len(out.strip().splitlines()) == 2


def test_every_cell_that_is_no_number_is_said_not_only_the_first(tmp_path):
    tsv = "epoch\thours\ttop1Accuracy\n1\tx\t80\n2\ty\t95\n3\tnan\t95\n"
    sub = read_submission(write_entry(tmp_path, "e", GOOD, tsv), tmp_path)
    assert [(line, m) for line, _, m in messages(sub)] == [
        (2, "hours 'x' is not a number"), (3, "hours 'y' is not a number"), (4, "hours 'nan' is not a finite number")]


def test_a_blank_timestamp_is_one_problem_not_two(tmp_path):
    sub = read_submission(write_entry(tmp_path, "e", {**GOOD, "timestamp": " "}), tmp_path)
    assert [m for _, _, m in messages(sub)] == ["'timestamp' is empty; a submission says who made it, with what and on "
                                                "which machine: fill it in"]


def test_fraction_accuracies_are_rescaled_and_ranked(tmp_path):
    sub = read_submission(write_entry(tmp_path, "e", GOOD, "epoch\thours\ttop1Accuracy\n1\t0.1\t0.9\n2\t0.2\t0.95\n"),
                          tmp_path)
    assert sub.ok and sub.training_hours == 0.2


def test_unknown_task_folder(tmp_path):
    sub = read_submission(write_entry(tmp_path, "e", task="Cifar100"), tmp_path)
    assert not sub.ok and "not under a known task folder" in sub.problems[0].message


def test_validate_cli_exit_status(tmp_path):
    write_entry(tmp_path, "good")
    code, out, _ = run_cli(["validate", str(tmp_path)])
    assert code == 0 and "0 error(s)" in out
    write_entry(tmp_path, "bad", {**GOOD, "timestamp": "soon"})
    code, out, err = run_cli(["validate", str(tmp_path), "--json"])
    doc = json.loads(out)
    assert code == 1 and doc["errors"] == 1 and "Traceback" not in err
    assert doc["problems"][0] == {"file": "CIFAR10/train/bad.json", "line": 9, "severity": "error",
                                  "message": "timestamp 'soon' is not a date; write yyyy-mm-dd"}


# --- fuzzing: never a traceback, always a located message ------------------------------------
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(json_text=st.one_of(st.text(max_size=300), st.binary(max_size=200),
                           st.dictionaries(st.sampled_from(list(GOOD) + ["latency", "cost", "top1Accuracy"]),
                                           st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                                                     st.text(max_size=20), st.lists(st.integers(), max_size=3)),
                                           max_size=12).map(json.dumps)),
       tsv_text=st.one_of(st.text(alphabet="epochursTt1A\t\n\r.0123456789-e ", max_size=300), st.binary(max_size=100)),
       kind=st.sampled_from(["train", "inference"]))
def test_fuzzed_files_give_located_problems(tmp_path_factory, json_text, tsv_text, kind):
    root = tmp_path_factory.mktemp("fuzz")
    folder = root / "SQuAD" / kind
    folder.mkdir(parents=True)
    path = folder / "x.json"
    (path.write_bytes if isinstance(json_text, bytes) else path.write_text)(json_text)
    tsv = path.with_suffix(".tsv")
    (tsv.write_bytes if isinstance(tsv_text, bytes) else tsv.write_text)(tsv_text)
    sub = read_submission(path, root)
    for p in sub.problems:
        assert p.file.startswith("SQuAD/") and p.severity in ("error", "warning") and p.message
        assert p.line is None or p.line >= 1
    if sub.ok:
        assert sub.kind == "inference" or sub.training_hours is not None
    build_boards(root)  # the boards never fail on what the validator let through


# --- the real entries ---------------------------------------------------------------------------
def test_all_118_real_entries_import_with_their_real_flaws(dawnbench_entries):
    boards = build_boards(dawnbench_entries)
    assert len(boards.submissions) == 118 and all(s.ok for s in boards.submissions)
    found = {(p.file, p.line, p.severity): p.message for p in boards.problems}
    assert ("CIFAR10/train/KRes34_1GTX1080Ti_pytorch.tsv", 1, "warning") in found  # BOM
    assert "'misc' should be an object" in found[("ImageNet/train/ppwwyyxx_resnet152_8P100-DGX1_tensorpack.json", 11, "warning")]
    assert "f1Score looks like 0–100" in found[("SQuAD/inference/dawn_fastfusionnet-1080ti.json", 13, "warning")]
    assert "epoch 18 does not increase" in found[("ImageNet/train/google_resnet50_tpu_tensorflow111_fastai.tsv", 21, "warning")]
    haifan = "ImageNet/inference/HaifanData_resnet50_1GTX1080Ti_tensorflow.json"
    assert "should be written 2019-07-22" in found[(haifan, 12, "warning")]


def test_real_boards_now_and_at_the_end_of_round_one(dawnbench_entries):
    code, out, _ = run_cli(["leaderboard", str(dawnbench_entries), "--json"])
    doc = json.loads(out)
    assert set(doc["tasks"]) == {"cifar10", "imagenet", "squad"}
    cifar = doc["tasks"]["cifar10"]
    first = cifar["training_time"][0]
    assert (first["rank"], first["display"], first["model"]) == (1, "0:00:10", "Custom Resnet 9")
    assert [r["rank"] for r in cifar["training_time"]] == list(range(1, 32))
    assert cifar["inference_cost"][0]["display"] == "$0.0021"  # BaiduNet8: 2.078e-07 $/item × 10,000
    assert cifar["inference_latency"][1]["display"] == "0.683 ms"
    squad = doc["tasks"]["squad"]["inference_latency"]
    assert squad[1]["model"] == "FastFusionNet"  # ranked after its F1 was rescaled
    round_one = build_boards(dawnbench_entries, until=__import__("datetime").date(2018, 4, 20)).tasks
    assert round_one["imagenet"]["training_time"][0]["display"] == "0:30:43"  # Google, TPUv2 pod
    assert round_one["cifar10"]["training_time"][0]["display"] == "0:02:54"   # fast.ai, 8 V100


def test_display_rules_by_hand():
    assert display("training_time", 10.0) == "0:00:10"
    assert display("training_time", 10.0001) == "0:00:11"      # rounded up
    assert display("training_time", 3 * 3600 + 61.2) == "3:01:02"
    assert display("training_cost", 12.596) == "$12.60"
    assert display("training_cost", 0.0023) == "$0.0023" and display("training_cost", 0.05) == "$0.05"  # not $0.00
    assert display("inference_latency", 0.683) == "0.683 ms"
    assert display("inference_cost", 0.002078) == "$0.0021"


def test_ties_keep_file_name_order(tmp_path):
    for name in ("b", "a", "c"):      # three results of one time (three authors: a copy is ranked once)
        write_entry(tmp_path, name, {**GOOD, "author": f"author {name}"})
    rows = build_boards(tmp_path).tasks["cifar10"]["training_time"]
    assert [(r["rank"], r["file"]) for r in rows] == [
        (1, "CIFAR10/train/a.json"), (2, "CIFAR10/train/b.json"), (3, "CIFAR10/train/c.json")]
    assert rows[0]["value"] == 72.0 and build_boards(tmp_path).tasks["cifar10"]["training_cost"][0]["display"] == "$0.061"


# --- export: this project's runs rank beside the historical entries ------------------------------
def test_export_runs_of_one_configuration(tmp_path):
    for i, tta in enumerate([10.0, 14.0, None, 12.0]):
        write_run(tmp_path / "runs" / f"run{i}", i, tta, 0.6)
        (tmp_path / "runs" / f"run{i}" / "epochs.tsv").write_text(
            f"epoch\thours\ttop1Accuracy\n0.6\t{(tta or 9.0) / 3600:.9f}\t{99.1 if tta else 98.0}\n")
    json_path, tsv_path = export_training([tmp_path / "runs"], tmp_path / "sub", "A <b>", "a@b")
    doc = json.loads(json_path.read_text())
    facts = doc["misc"]["dawnbench"]
    assert json_path.parent == tmp_path / "sub" / "MNIST" / "train" and tsv_path.is_file()
    assert facts["runs"] == 4 and facts["success_fraction"] == 0.75 and facts["representative_seed"] == 3
    assert facts["tta_cov"] == pytest.approx(((4 + 4) / 3) ** 0.5 / 12)
    [row] = build_boards(tmp_path / "sub").tasks["mnist"]["training_time"]
    assert row["display"] == "0:00:12" and row["runs"] == 4 and row["success_fraction"] == 0.75
    # priced as a cloud instance: the price's instance said apart, the hardware as measured
    [priced, _] = export_training([tmp_path / "runs"], tmp_path / "priced", "A <b>", "a@b", instance="p3.2xlarge")
    doc = json.loads(priced.read_text())
    assert doc["costPerHour"] == 3.06 and doc["misc"]["dawnbench"]["priced_as"] == "p3.2xlarge"
    assert "p3.2xlarge" not in doc["hardware"] and "p3.2xlarge" not in priced.name
    # a price of one's own names no instance it was read from; validate holds priced_as to the catalog's price
    [own, _] = export_training([tmp_path / "runs"], tmp_path / "own", "A <b>", "a@b", instance="p3.2xlarge",
                               cost_per_hour=1.0)
    assert json.loads(own.read_text())["misc"]["dawnbench"]["priced_as"] is None
    for forged, said in (("p5.48xlarge", "whose catalog price is 55.04 $/h, not costPerHour 3.06"),
                         ("p9.huge", "which is not in the price catalog"), ("p3\u202e", "U+202E")):
        doc["misc"]["dawnbench"]["priced_as"] = forged
        priced.write_text(json.dumps(doc, indent=4))
        errors = [p.message for p in read_submission(priced, tmp_path / "priced").problems if p.severity == "error"]
        assert any(said in e for e in errors), errors


def test_leaderboard_html_says_where_the_site_is_and_not_every_board_again(tmp_path, dawnbench_entries, capsys):
    from dawnbench.cli import main

    assert main(["leaderboard", str(dawnbench_entries), "--html", str(tmp_path / "site")]) == 0
    out, err = capsys.readouterr()
    assert "website:" in err and "submissions read" in out and "training time" not in out
    assert (tmp_path / "site" / "index.html").is_file()
    (tmp_path / "blocker").write_text("a file where a folder should go")
    for bad, said in (("", "--html needs a folder"), (str(tmp_path / "blocker" / "site"), "cannot make this folder")):
        assert main(["leaderboard", str(dawnbench_entries), "--html", bad]) == 2
        assert said in " ".join(capsys.readouterr().err.split())


@pytest.mark.browser
def test_website_in_chromium(tmp_path, dawnbench_entries):
    from helpers import render

    root = tmp_path / "entries"
    shutil.copytree(dawnbench_entries, root)
    write_entry(root, "zz_hostile", {**GOOD, "author": "<script>document.title='pwned'</script>",
                                     "codeURL": "javascript:alert(1)"})
    proc = subprocess.run([sys.executable, "-m", "dawnbench", "leaderboard", str(root), "--html",
                           str(tmp_path / "site"), "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    site = tmp_path / "site"
    html = "".join(p.read_text() for p in site.rglob("*.html"))
    assert "https://cdn" not in html and "<script src" not in html
    dom, shot = render(site / "index.html", tmp_path / "a")
    assert "Custom Resnet 9" in dom and "0:00:10" in dom and shot.stat().st_size > 20_000
    dom, shot = render(site / "task-cifar10.html", tmp_path / "b")
    first_row = dom.split('<table class="sortable" id="training_time">')[1].split("<tr>")[2]
    assert "0:00:10" in first_row and "Custom Resnet 9" in first_row
    hostile_row = next(r for r in dom.split("<tr>") if "zz_hostile" in r)
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in hostile_row
    board = dom.split('id="training_time"')[1].split("</table>")[0]
    assert 'href="javascript:' not in board and "<td>javascript:alert(1)</td>" in board  # shown, not linked
    page = site / entry_page("CIFAR10/train/zz_hostile.json")
    dom, _ = render(page, tmp_path / "c")
    assert "pwned</title>" not in dom and "&lt;script&gt;" in dom and "<svg" in dom
    sorted_dom, _ = render(site / "task-cifar10.html", tmp_path / "d", "#sort=training_time:1:desc")
    first_sorted = sorted_dom.split('id="training_time"')[1].split("<tr>")[2]
    assert "0:00:10" not in first_sorted and 'class="sorted-desc"' in sorted_dom
