"""Generalisation (SPEC §15): the shifted suite, the unseen-set loaders, the re-check, --continue's final model."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from dawnbench.cli.figures import generalization_figures
from dawnbench.data.corruptions import FAMILIES, corrupt
from dawnbench.data.formats import write_idx
from dawnbench.data.unseen import find_unseen, load_cifar10_1, load_qmnist_extra
from dawnbench.errors import DawnbenchError
from dawnbench.experiments.generalization import (
    GeneralizeOptions,
    generalize,
    parse_severities,
)
from dawnbench.harness.options import RunOptions, prepare
from dawnbench.harness.runner import run_seed

from tiny_model_entry import TinyLinear

RNG = np.random.default_rng(7)
GREY = RNG.integers(0, 256, (6, 28, 28), dtype=np.uint8)
RGB = RNG.integers(0, 256, (6, 32, 32, 3), dtype=np.uint8)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("images", [GREY, RGB], ids=["grey", "rgb"])
def test_corruptions_are_deterministic_uint8_and_keep_shapes(family, images):
    before = images.copy()
    for severity in range(1, 6):
        a = corrupt(images, family, severity)
        b = corrupt(images, family, severity)
        assert a.dtype == np.uint8 and a.shape == images.shape
        assert np.array_equal(a, b), f"{family} {severity} is not deterministic"
    assert not np.array_equal(corrupt(images, family, 5), images)  # severity 5 changes the images
    assert np.array_equal(images, before)  # the input is never modified
    assert np.array_equal(corrupt(images, family, 0), images)  # severity 0 is the identity


def test_severity_grows_and_seed_matters():
    smooth = np.tile(np.linspace(0, 255, 32, dtype=np.uint8), (4, 32, 1))  # a gradient: blur shows
    for family in ("gaussian_noise", "contrast", "defocus_blur", "impulse_noise"):
        dist = [np.abs(corrupt(smooth, family, s).astype(int) - smooth).mean() for s in (1, 5)]
        assert dist[1] > dist[0], family
    assert not np.array_equal(corrupt(GREY, "gaussian_noise", 3, seed=1), corrupt(GREY, "gaussian_noise", 3, seed=2))


def test_bad_corruption_arguments_are_refused():
    with pytest.raises(DawnbenchError, match="unknown; the families are"):
        corrupt(GREY, "fog", 1)
    with pytest.raises(DawnbenchError, match="severity 6"):
        corrupt(GREY, "jpeg", 6)
    with pytest.raises(DawnbenchError, match="expected uint8 images"):
        corrupt(GREY.astype(np.float32), "jpeg", 1)
    assert parse_severities("1-5") == (1, 2, 3, 4, 5) and parse_severities("1,3") == (1, 3)
    with pytest.raises(DawnbenchError, match="severities run from 1 to 5"):
        parse_severities("0-5")


def _write_int_idx(path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x0C, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    path.write_bytes(header + array.astype(">i4").tobytes())


def test_cifar10_1_loader_and_its_errors(tmp_path):
    np.save(tmp_path / "cifar10.1_v6_data.npy", RGB)
    np.save(tmp_path / "cifar10.1_v6_labels.npy", np.array([0, 1, 2, 3, 4, 9]))
    [found] = find_unseen("cifar10", [tmp_path])
    assert found.name == "cifar10.1" and found.split.inputs.shape == (6, 32, 32, 3)
    assert list(found.split.labels) == [0, 1, 2, 3, 4, 9]
    np.save(tmp_path / "bad.npy", GREY)
    with pytest.raises(DawnbenchError, match=r"bad\.npy: expected uint8 images N×32×32×3"):
        load_cifar10_1(tmp_path / "bad.npy", tmp_path / "cifar10.1_v6_labels.npy")
    np.save(tmp_path / "short.npy", np.array([0, 1]))
    with pytest.raises(DawnbenchError, match=r"short\.npy: expected 6 integer labels"):
        load_cifar10_1(tmp_path / "cifar10.1_v6_data.npy", tmp_path / "short.npy")
    with pytest.raises(DawnbenchError, match="no unseen set for mnist there. Expected qmnist"):
        find_unseen("mnist", [tmp_path])


def test_qmnist_loader_keeps_only_the_50000_extra_digits(tmp_path):
    n = 10_004  # the first 10,000 rows are MNIST's test set; the rest are unseen
    images = np.zeros((n, 28, 28), np.uint8)
    images[10_000:, 0, 0] = [1, 2, 3, 4]
    labels = np.zeros((n, 8), np.int64)
    labels[10_000:, 0] = [7, 8, 9, 0]
    write_idx(tmp_path / "qmnist-test-images-idx3-ubyte.gz", images, compress=True)
    _write_int_idx(tmp_path / "qmnist-test-labels-idx2-int", labels)
    [found] = find_unseen("mnist", [tmp_path])
    assert found.name == "qmnist-extra" and found.split.inputs.shape == (4, 28, 28)
    assert list(found.split.inputs[:, 0, 0]) == [1, 2, 3, 4] and list(found.split.labels) == [7, 8, 9, 0]
    _write_int_idx(tmp_path / "wrong-labels", labels[:, :1].reshape(-1))
    with pytest.raises(DawnbenchError, match=r"wrong-labels: expected 10004 rows of QMNIST's extended labels"):
        load_qmnist_extra(tmp_path / "qmnist-test-images-idx3-ubyte.gz", tmp_path / "wrong-labels")
    with pytest.raises(DawnbenchError, match=r"IDX element type 0x08 is not 0x0c"):
        load_qmnist_extra(tmp_path / "qmnist-test-images-idx3-ubyte.gz", tmp_path / "qmnist-test-images-idx3-ubyte.gz")


def test_continue_saves_the_final_model_too(tiny_task, tmp_path):
    options = RunOptions(task=tiny_task, entry=TinyLinear, continue_after_target=True)
    result = run_seed(options, prepare(options), seed=0, run_dir=tmp_path / "a")
    assert result.status == "success"
    assert result.checkpoint == "model.pt" and result.checkpoint_final == "model_final.pt"
    assert (tmp_path / "a" / "model_final.pt").is_file()
    options = RunOptions(task=tiny_task, entry=TinyLinear)
    stopped = run_seed(options, prepare(options), seed=0, run_dir=tmp_path / "b")
    assert stopped.checkpoint_final is None and not (tmp_path / "b" / "model_final.pt").exists()


def test_recheck_equals_the_runs_own_evaluation(mnist_run_97, tmp_path):
    run = shutil.copytree(mnist_run_97, tmp_path / "run")  # generalize writes into the run: not the shared one
    doc = generalize([run], GeneralizeOptions(families=("contrast",), severities=(5,), out=tmp_path))
    [model] = doc["models"]
    recorded = json.loads((run / "result.json").read_text())["evals"][-1]["value"]
    assert model["recheck"] and model["scored"] == pytest.approx(recorded, abs=1e-9)
    assert model["values"]["contrast/5"] < model["scored"]  # contrast 0.15 hurts
    assert model["suite_drop"] == pytest.approx(model["scored"] - model["values"]["contrast/5"])
    saved = json.loads((run / "result.json").read_text())["generalization"]["at target"]
    assert saved["scored"] == model["scored"] and (run / "generalization.json").is_file()
    [figure] = generalization_figures(doc, tmp_path)  # what `dawnbench generalize` draws
    assert figure == tmp_path / "generalization-mnist.png" and figure.stat().st_size > 10_000
