"""The reference entry on real MNIST: a short run to a lower target, and bit-for-bit determinism."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dawnbench import RunOptions, run_many
from dawnbench.cli import main
from dawnbench.entries import load_entry_class
from dawnbench.entries.small_cnn import make_net
from dawnbench.records.record import RunResult, read_result


def test_network_shapes():
    net = make_net([16, 32, 64])
    assert net(torch.zeros(5, 1, 28, 28)).shape == (5, 10)


def test_real_mnist_run_to_lower_target(mnist_run_97):
    result = RunResult.from_dict(read_result(mnist_run_97))
    assert result.status == "success" and result.official is False
    assert result.evals[-1].value >= 97.0 and all(e.value < 97.0 for e in result.evals[:-1])
    assert 0 < result.epochs_to_target <= 1.0
    assert 0 < result.time_to_accuracy_s < result.wall_s
    assert result.hparams["batch_size"] == 64
    assert result.checkpoint == "model.pt" and (mnist_run_97 / "model.pt").is_file()


@pytest.mark.slow
def test_same_seed_same_evaluations_bit_for_bit(mnist_ready, tmp_path):
    options = RunOptions(task="mnist", target=100.0, max_epochs=0.35, seed=3, out_dir=tmp_path,
                         overrides={"first_eval_epoch": 0.1, "evals_per_epoch": 10})
    first, second = run_many(options)[0], run_many(options)[0]
    assert first.status == second.status == "not_reached"
    # The entry's own evaluations (at about 0.2 and 0.3 with these settings), then the budget's at 0.35, inside
    # the entry's epoch: the budget holds to the step, not to the entry's next evaluation (0.4).
    assert [e.stopped_by for e in first.evals] == [None, None, "max_epochs"]
    assert first.evals[-1].epoch == pytest.approx(0.35, abs=2 * 64 / 60_000)
    assert [(e.epoch, e.samples, e.value) for e in first.evals] == [(e.epoch, e.samples, e.value) for e in second.evals]
    run_dir = Path(first.run_dir)
    assert (run_dir / "epochs.tsv").read_text().splitlines()[-1].startswith(f"{first.evals[-1].epoch:g}\t")
    assert '"stopped_by": "max_epochs"' in (run_dir / "events.log").read_text()
    assert main(["check-log", str(run_dir)]) == 0
    other = run_many(RunOptions(**{**options.__dict__, "seed": 4}))[0]
    assert [e.value for e in other.evals] != [e.value for e in first.evals]


def test_builtin_entry_found_by_name():
    assert load_entry_class("small-cnn").tasks == ("mnist", "fashion-mnist")
