"""The command line: JSON output, user entry files, and one-paragraph errors for bad input."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from dawnbench.cli import main

from helpers import run_cli

USER_ENTRY = '''
import torch
from dawnbench.entries import Entry, Progress

class Majority(Entry):
    """Predicts the most common training label: about 11 % on MNIST."""
    hparams = {"batch_size": 1}

    def train(self, ctx):
        _, labels = ctx.load_train()
        self.label = int(torch.from_numpy(labels).bincount().argmax())
        yield Progress(epoch=1.0, samples=len(labels), loss=0.0)

    def predict(self, inputs):
        return torch.full((len(inputs),), self.label)
'''


def test_run_json_with_user_entry_file(mnist_ready, tmp_path):
    entry = tmp_path / "majority.py"
    entry.write_text(USER_ENTRY)
    code, out, err = run_cli(["run", "mnist", "--entry", str(entry), "--runs", "2", "--target", "11",
                              "--instance", "p3.2xlarge", "--out", str(tmp_path / "runs"), "--json"])
    assert code == 0, err
    doc = json.loads(out)  # stdout holds one JSON document and nothing else
    assert [r["seed"] for r in doc["runs"]] == [0, 1]
    assert all(r["status"] == "success" and r["entry"] == "majority" for r in doc["runs"])
    assert doc["runs"][0]["evals"][0]["value"] == pytest.approx(11.35)
    assert doc["runs"][0]["cost_per_hour"] == 3.06
    assert doc["summary"]["runs"] == 2 and doc["summary"]["success_fraction"] == 1.0
    # no flop_model(): "—" for GFLOP/s, with why in the record (and under the runs table)
    assert "defines no flop_model()" in doc["runs"][0]["throughput"]["flops_error"]


def test_not_reached_exits_1_and_prints_card(mnist_ready, tmp_path):
    entry = tmp_path / "majority.py"
    entry.write_text(USER_ENTRY)
    code, out, _ = run_cli(["run", "mnist", "--entry", str(entry), "--out", str(tmp_path / "runs")])
    assert code == 1
    assert "not_reached" in out and "∞ (target not reached)" in out


@pytest.mark.parametrize("args, message", [
    (["run", "imagenet2"], "unknown task 'imagenet2'. Known tasks: mnist, fashion-mnist"),
    (["run", "--entry", "nope"], "unknown entry 'nope'. Built-in entries: cifar10-fast, cifar10-resnet164"),
    (["run", "--entry", "missing.py"], "missing.py: entry file not found"),
    (["run", "--instance", "p3.2xlarge-spot"], "spot, preemptible and low-priority prices are refused"),
    (["run", "--instance", "p9.huge"], "--instance p9.huge: not in the price catalog"),
    (["run", "--cost-per-hour", "-1"], "--cost-per-hour -1.0: must be a number > 0"),
    (["run", "--set", "nonsense"], "--set 'nonsense': write it as KEY=VALUE"),
    (["run", "--set", "lrr=0.1"], "--set lrr: not a hyperparameter of entry 'small-cnn'"),
    (["run", "--runs", "0"], "--runs 0: must be an integer from 1"),
    (["run", "--max-epochs", "0"], "--max-epochs 0.0: must be a number > 0"),
    (["data", "fetch", "svhn"], "unknown dataset 'svhn'. Known datasets: mnist, fashion-mnist, cifar10"),
    (["data", "fetch", "mnist", "--from", "/nonexistent/mnist"], "/nonexistent/mnist: no such file or folder"),
])
def test_bad_input_gets_one_paragraph(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in " ".join(err.split())
    assert "Traceback" not in err


def test_a_long_set_value_is_shortened_in_its_error(capsys):
    assert main(["run", "imagenet", "--set", "workers=" + "a" * 100_000]) == 2
    err = capsys.readouterr().err
    assert len(err) < 1000 and "(100,002 characters)" in " ".join(err.split())


@pytest.mark.parametrize("value", ["yes", "2", "\udcff\udcfe", "x" * 100_000])
def test_a_torch_switch_pytorch_cannot_read_is_refused_before_torch_reads_it(capsys, monkeypatch, value):
    monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", value)    # not UTF-8: PyTorch's first tensor would raise
    assert main(["tasks"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "THP_MEM_ALLOC_ENABLE is" in err and "Set it to 1 or 0, or unset it" in err and len(err) < 400


def test_broken_entry_file_names_line(tmp_path, capsys):
    entry = tmp_path / "broken.py"
    entry.write_text("import torch\n\nx = 1 / 0\n")
    assert main(["run", "--entry", str(entry)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{entry}:3: importing the entry file failed with ZeroDivisionError" in err


def test_entry_file_without_entry_class(tmp_path, capsys):
    entry = tmp_path / "empty.py"
    entry.write_text("x = 1\n")
    assert main(["run", "--entry", str(entry)]) == 2
    assert "exactly one concrete subclass" in capsys.readouterr().err


@pytest.mark.parametrize("args, key", [(["tasks"], "tasks"), (["prices"], "instances"), (["data", "list"], "datasets")])
def test_listings_json(capsys, args, key):
    assert main([*args, "--json"]) == 0
    assert key in json.loads(capsys.readouterr().out)


def test_price_catalog_has_the_required_families():
    from dawnbench.records import prices
    names = set(prices.instances())
    for family in ("p3.", "p4d.", "p5.", "p5en.", "p6-b200.", "g4dn.", "g5.", "g6.", "g6e.", "c5.", "a2-", "a3-",
                   "g2-", "n1-standard-8+1xV100",
                   "Standard_NC6s_v3", "Standard_ND96asr_v4", "Standard_ND96isr_H100_v5"):
        assert any(n.startswith(family) for n in names), family
    assert all(i["usd_per_hour"] > 0 for i in prices.instances().values())


def test_price_catalog_rows_are_dated_and_sourced():
    import re

    from dawnbench.records import prices
    cat = prices.catalog()
    for row in cat["instances"]:
        assert re.fullmatch(r"20\d\d(-\d\d)?", row["as_of"]), row
        assert row["source"] in cat["sources"], row
    # the current generation: a single and an 8-GPU H100, H200, B200, L4 and L40S
    by_acc = {}
    for row in cat["instances"]:
        by_acc.setdefault((row["accelerator"] or "").split("-")[0], set()).add(row["accelerator_count"])
    assert {1, 8} <= by_acc["H100"]
    for acc in ("H200", "B200", "L4", "L40S"):
        assert acc in by_acc, acc
    # AWS's 2025 cut is in the rows, not only in the note
    assert prices.resolve("p5.48xlarge", None) == ("p5.48xlarge", 55.04)


def test_prices_filtered_by_accelerator(capsys):
    assert main(["prices", "--accelerator", "h100", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["instances"]
    assert rows and all("H100" in r["accelerator"] for r in rows)
    assert main(["prices", "--accelerator", "cpu", "--json"]) == 0
    assert all(r["accelerator"] is None for r in json.loads(capsys.readouterr().out)["instances"])
    assert main(["prices", "--accelerator", "TPU9"]) == 2
    assert "Accelerators in it:" in capsys.readouterr().err


def test_scale_and_sweep_take_every_run_option_and_hand_them_on():
    from dawnbench.cli import build_parser
    from dawnbench.cli.common import run_argv, run_options

    parser = build_parser()
    run = vars(parser.parse_args(["run", "mnist"]))
    for command in (["scale", "mnist"], ["sweep", "mnist", "--grid", "batch_size=32,64"]):
        given = vars(parser.parse_args(command))
        assert set(run) - {"func", "nproc", "nnodes", "node_rank", "rdzv_endpoint", "include_suspect"} <= set(given), command
    flags = ["--entry", "small-cnn", "--seed", "3", "--target", "98.5", "--max-epochs", "2", "--max-seconds", "9",
             "--max-wall-seconds", "60", "--continue", "--device", "cpu", "--cost-per-hour", "2.5", "--set",
             "lr=0.1", "--precision", "bf16", "--compile", "--org", "me", "--platform", "box",
             "--resource-interval", "0.25", "--collective-timeout", "7"]
    scale = parser.parse_args(["scale", "mnist", "--workers", "1,2", *flags])
    handed_on = parser.parse_args(["run", "mnist", *run_argv(scale)])  # what each launched `run` receives
    expected = run_options(parser.parse_args(["run", "mnist", *flags]))
    assert run_options(handed_on) == expected
    assert expected.compile == "default" and expected.collective_timeout == 7 and expected.max_seconds == 9


def test_an_entrants_common_mistakes_get_errors_that_name_what_is_wrong(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    entry = tmp_path / "half.py"
    entry.write_text("from dawnbench.entries import Entry\n\nclass Half(Entry):\n    name = 'half'\n\n"
                     "    def train(self, ctx):\n        yield from ()\n")
    assert main(["run", "mnist", "--entry", str(entry), "--out", str(tmp_path / "r")]) == 2
    message = " ".join(capsys.readouterr().err.split())
    assert "Half lacks predict()" in message and "add the missing method" in message
    with pytest.raises(SystemExit) as exited:
        main(["run", "mnist", "--seeds", "3"])
    message = " ".join(capsys.readouterr().err.split())
    assert exited.value.code == 2 and "--seeds: did you mean --seed or --runs?" in message
    assert "See `dawnbench run --help`" in message


def test_the_leaderboard_shows_the_whole_date(tmp_path, capsys):
    from dawnbench.cli.results import board_table

    rows = [{"rank": 1, "display": "0:00:12", "model": "m", "author": "a", "hardware": "h", "framework": "f",
             "date": "2026-11-26"}]
    console = Console(width=200, record=True)
    console.print(board_table("mnist", "training_time", rows))
    assert "2026-11-26" in console.export_text()
