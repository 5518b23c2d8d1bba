"""ImageNet (SPEC §16) on a generated tree in the official layout: import, shards, streaming,
both decode paths, top-5, and a whole run through export, inference and ``generalize``."""

from __future__ import annotations

import io
import json
import random
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from dawnbench import data
from dawnbench.cli import main
from dawnbench.data import imagenet
from dawnbench.data.imagenet import generate, pipeline, shards
from dawnbench.data.imagenet.tree import read_tree
from dawnbench.errors import DataError, DawnbenchError
from dawnbench.tasks import TOP5, Tally, get_task

CLASSES, TRAIN, VAL, SHARD = 10, 52, 6, 32   # 520 training images: 16 full shards and a short one
# A ResNet small enough to train on two cores in seconds, at a few pixels; the recipe's shape otherwise.
TINY = {"epochs": 4, "batch_size": 16, "lr": 0.4, "lr_batch": 256, "lr_peak_epoch": 1, "min_res": 32,
        "max_res": 48, "start_ramp": 2, "end_ramp": 3, "eval_res": 48, "width": 8, "layers": "[1,1,1,1]",
        "workers": 1}
SETS = [arg for key, value in TINY.items() for arg in ("--set", f"{key}={value}")]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return generate.write_tree(tmp_path_factory.mktemp("ilsvrc") / "tree", CLASSES, TRAIN, VAL, "csv", scale=0.3)


@pytest.fixture(scope="module")
def cache(tree, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cache")
    imagenet.import_tree(tree, root / "imagenet@mini", subset="mini", shard_size=SHARD, workers=2)
    return root


@pytest.fixture
def mini(cache, monkeypatch) -> Path:
    monkeypatch.setenv("DAWNBENCH_DATA", str(cache))
    return cache / "imagenet@mini"


@pytest.fixture(scope="module")
def imagenet_run(cache, tmp_path_factory) -> Path:
    """One run of imagenet-resnet50 (tiny) on the subset to the real threshold, 93 % top-5."""
    out = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DAWNBENCH_DATA", str(cache))
        assert main(["run", "imagenet", "--subset", "mini", "--max-epochs", "4", "--out", str(out), *SETS]) == 0
    [run] = out.iterdir()
    return run


def labels_of(tree_root: Path) -> dict[str, int]:
    return {p.name: label for p, label in read_tree(tree_root).val}


# --- the tree -------------------------------------------------------------------------------

def test_the_three_val_layouts_and_kaggles_folders_give_the_same_labels(tmp_path):
    trees = {layout: generate.write_tree(tmp_path / layout, 4, 2, 3, layout, scale=0.15)
             for layout in generate.VAL_LAYOUTS}
    found = {layout: read_tree(root) for layout, root in trees.items()}
    assert {layout: t.val_layout for layout, t in found.items()} == {layout: layout for layout in trees}
    reference = labels_of(trees["folders"])
    assert len(reference) == 12 and sorted(set(reference.values())) == [0, 1, 2, 3]
    assert all(labels_of(root) == reference for root in trees.values())
    # Kaggle's copy: ILSVRC/Data/CLS-LOC/{train,val} with the CSV at its top.
    kaggle = tmp_path / "kaggle"
    shutil.copytree(trees["csv"] / "train", kaggle / "ILSVRC" / "Data" / "CLS-LOC" / "train")
    shutil.copytree(trees["csv"] / "val", kaggle / "ILSVRC" / "Data" / "CLS-LOC" / "val")
    shutil.copy(trees["csv"] / "LOC_val_solution.csv", kaggle)
    assert labels_of(kaggle) == reference
    # The devkit's ids are not the sorted order: a reader that assumed it would get other labels.
    truth = (trees["devkit"] / "ILSVRC2012_devkit_t12" / "data" / "ILSVRC2012_validation_ground_truth.txt")
    ids = [int(line) for line in truth.read_text().split()]
    assert [i - 1 for i in ids] != [reference[f"ILSVRC2012_val_{n:08d}.JPEG"] for n in range(1, 13)]


def test_the_import_writes_webdataset_shards_of_rgb_jpegs(tree, cache):
    folder = cache / "imagenet@mini"
    meta = shards.read_meta(folder)
    assert meta["splits"]["train"]["count"] == CLASSES * TRAIN and meta["splits"]["val"]["count"] == CLASSES * VAL
    assert (meta["max_side"], meta["quality"], meta["subset"], meta["val_layout"]) == (384, 90, "mini", "csv")
    assert [s["count"] for s in meta["splits"]["train"]["shards"]] == [SHARD] * 16 + [8]
    import webdataset as wds  # any WebDataset reader reads them

    seen = []
    for s in meta["splits"]["train"]["shards"]:
        for sample in wds.WebDataset(str(folder / s["file"]), shardshuffle=False):
            assert set(sample) >= {"__key__", "jpg", "cls"}
            img = Image.open(io.BytesIO(sample["jpg"]))
            assert (img.format, img.mode) == ("JPEG", "RGB") and max(img.size) <= 384
            seen.append(int(sample["cls"]))
    assert sorted(seen) == sorted(label for _, label in read_tree(tree).train)
    assert len({tuple(seen[i:i + SHARD]) for i in range(0, 64, SHARD)}) == 2  # shuffled: shards mix classes
    assert len(set(seen[:SHARD])) > 3


def test_cmyk_greyscale_and_a_png_named_jpeg_import_as_their_pictures(tmp_path):
    img = generate.picture(3, 200, 150, np.random.default_rng(0))
    for odd in ("cmyk", "grey", "png"):
        source = tmp_path / f"{odd}.JPEG"
        source.write_bytes(generate._encode(img, odd))
        out = Image.open(io.BytesIO(shards.reencode(source, 384, 90)))
        expected = img.convert("L").convert("RGB") if odd == "grey" else img
        assert out.mode == "RGB"
        assert np.abs(np.asarray(out, float) - np.asarray(expected, float)).mean() < 12  # inverted CMYK: ~100


def test_counts_are_checked_unless_the_tree_is_named_a_subset(tree, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    assert main(["data", "fetch", "imagenet", "--from", str(tree)]) != 0
    err = capsys.readouterr().err
    assert "1,281,167" in err and "--subset NAME" in err and "Traceback" not in err
    assert not (tmp_path / "cache" / "imagenet").exists()
    assert main(["run", "imagenet", "--subset", "other"]) != 0
    assert "data fetch imagenet --from PATH --subset other" in " ".join(capsys.readouterr().err.split())


def test_an_unreadable_image_is_named_and_the_import_resumes(tmp_path):
    root = generate.write_tree(tmp_path / "tree", 3, 20, 2, "folders", scale=0.15)
    bad = sorted((root / "val").rglob("*.JPEG"))[1]
    good = bad.read_bytes()
    bad.write_bytes(b"\xff\xd8 not really a JPEG")
    dest = tmp_path / "cache" / "imagenet@t"
    with pytest.raises(DataError, match="cannot read this image") as err:
        imagenet.import_tree(root, dest, subset="t", shard_size=8, workers=1)
    assert str(bad) in str(err.value) and "resumes" in str(err.value)
    assert not dest.exists()  # nothing under the dataset's name until the import is whole
    staged = sorted((tmp_path / "cache" / ".imagenet@t.import" / "train").glob("shard-*.tar"))
    assert len(staged) == 8  # 60 images: every training shard was finished before val failed
    stamps = [p.stat().st_mtime_ns for p in staged]
    bad.write_bytes(good)
    figures = imagenet.import_tree(root, dest, subset="t", shard_size=8, workers=1)
    assert figures["train"]["images_written"] == 0 and figures["val"]["images_written"] == 6
    assert [p.stat().st_mtime_ns for p in sorted((dest / "train").glob("shard-*.tar"))] == stamps
    assert not (tmp_path / "cache" / ".imagenet@t.import").exists()


def test_a_link_in_the_tree_is_refused_by_name(tmp_path):
    root = generate.write_tree(tmp_path / "tree", 2, 2, 1, "folders", scale=0.15)
    victim = sorted((root / "train").rglob("*.JPEG"))[0]
    victim.unlink()
    victim.symlink_to("/etc/passwd")
    with pytest.raises(DataError, match="symbolic link|link") as err:
        imagenet.import_tree(root, tmp_path / "imagenet@x", subset="x", workers=1)
    assert str(victim) in str(err.value)


# --- streaming ------------------------------------------------------------------------------

@pytest.mark.parametrize("counts,world,batch,workers", [([32] * 16 + [8], 1, 16, 1), ([32] * 16 + [8], 2, 16, 3),
                                                        ([168], 1, 32, 1), ([256] * 5004 + [167], 8, 512, 8),
                                                        ([256] * 5004 + [167], 64, 32, 10)])
def test_an_epochs_samples_are_dealt_to_every_consumer_once(counts, world, batch, workers):
    steps, plan = shards.deal(counts, epoch=3, seed=7, world_size=world, batch_size=batch, workers=workers)
    assert steps == sum(counts) // (batch * world)                     # at most one global batch sits out
    taken = [(shard, k) for rank in plan for w in rank for shard, first, end in w for k in range(first, end)]
    assert len(taken) == len(set(taken)) == steps * batch * world
    for rank in plan:                                                  # whole batches, the same steps per rank
        sizes = [sum(end - first for _, first, end in w) for w in rank]
        assert sum(sizes) == steps * batch and all(size % batch == 0 for size in sizes)
    assert plan == shards.deal(counts, epoch=3, seed=7, world_size=world, batch_size=batch, workers=workers)[1]
    assert plan != shards.deal(counts, epoch=4, seed=7, world_size=world, batch_size=batch, workers=workers)[1]
    with pytest.raises(DataError, match="smaller batch"):
        shards.deal([10, 5], 0, 0, world_size=2, batch_size=8, workers=1)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")   # 3 workers on 2 cores, on purpose
@pytest.mark.parametrize("world", [1, 2])
@pytest.mark.parametrize("workers", [0, 1, 3])
def test_an_epoch_reads_every_training_key_once_the_short_shard_included(mini, world, workers):
    """Keys over one epoch, every rank and DataLoader worker: none twice, all but fewer than a global batch."""
    meta = shards.read_meta(mini)
    keys = []
    for rank in range(world):
        stream = shards.TrainStream(mini, meta, epoch=2, seed=1, rank=rank, world_size=world, batch_size=16, res=32,
                                    pipeline_name="cpu", device=torch.device("cpu"), workers=workers)
        consumer = stream._loader.dataset.consumer
        for worker in range(max(1, stream.workers)):
            keys += [sample["__key__"] for sample in consumer.samples(worker)]
        assert len(stream) == CLASSES * TRAIN // (16 * world) and len(list(stream)) == len(stream)
    total = CLASSES * TRAIN
    assert len(keys) == len(set(keys)) == len(stream) * 16 * world and total - len(keys) < 16 * world
    assert meta["splits"]["train"]["shards"][-1]["count"] < SHARD and any(int(k) >= total // SHARD * SHARD
                                                                          for k in keys)  # the short shard is read


def test_loader_workers_follow_the_machine_and_the_data(monkeypatch):
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    monkeypatch.setattr(shards.os, "sched_getaffinity", lambda pid: set(range(2)))
    assert shards.loader_workers("auto", cpu, steps=100) == 0           # a few cores: decoded in the step's process
    assert shards.loader_workers(3, cpu, steps=100) == 3                # asked for: as asked
    assert shards.loader_workers(64, cpu, steps=3) == 3                 # ... but never a worker without a batch
    monkeypatch.setattr(shards.os, "sched_getaffinity", lambda pid: set(range(16)))
    assert shards.loader_workers("auto", cpu, steps=100) == 1           # many: one worker decodes beside the step
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert shards.loader_workers("auto", cpu, steps=100) == 0           # 8 cores per rank: in the step's process
    assert shards.loader_workers("auto", gpu, steps=100) == 7           # 8 cores per GPU rank, one feeds the GPU
    assert shards.loader_workers("auto", gpu, steps=2) == 2             # never more than the epoch's batches


@pytest.mark.parametrize("workers", [0, 2])
def test_every_rank_takes_the_same_number_of_steps(mini, workers):
    meta = shards.read_meta(mini)
    streams = [shards.TrainStream(mini, meta, epoch=1, seed=0, rank=r, world_size=2, batch_size=16, res=32,
                                  pipeline_name="cpu", device=torch.device("cpu"), workers=workers)
               for r in range(2)]
    expected = CLASSES * TRAIN // (2 * 16)
    assert [len(s) for s in streams] == [expected, expected]
    for s in streams:
        batches = list(s)
        assert len(batches) == expected
        assert {(b.images.shape, b.images.dtype, b.layout) for b in batches} == {((16, 32, 32, 3), torch.uint8, "NHWC")}
        assert all(0 <= int(b.labels.min()) and int(b.labels.max()) < CLASSES for b in batches)


def test_the_gpu_path_crops_and_flips_as_the_cpu_path(mini):
    """Same seed, same boxes and flips, same labels; the pixels differ only by the decoders' rounding
    (the CPU path decodes at reduced size where the crop allows)."""
    meta = shards.read_meta(mini)
    common = dict(epoch=0, seed=5, rank=0, world_size=1, batch_size=16, res=48, device=torch.device("cpu"), workers=0)
    cpu = list(shards.TrainStream(mini, meta, pipeline_name="cpu", **common))
    gpu = list(shards.TrainStream(mini, meta, pipeline_name="gpu", decoder=pipeline.pillow_decoder, **common))
    assert len(cpu) == len(gpu) == CLASSES * TRAIN // 16
    for a, b in zip(cpu, gpu):
        assert torch.equal(a.labels, b.labels) and b.layout == "NCHW"
        diff = (a.images.permute(0, 3, 1, 2).int() - b.images.int()).abs().float()
        assert diff.mean() < 2.0


def test_full_size_crops_agree_between_paths():
    rng = np.random.default_rng(1)
    jpegs = [generate._encode(generate.picture(k, 500, 375, rng), None) for k in range(4)]
    boxes = np.array([pipeline.random_crop(500, 375, random.Random(k)) for k in range(4)])
    flips = np.array([True, False, True, False])
    cpu = np.stack([pipeline.decode_crop(j, tuple(b), bool(f), 176) for j, b, f in zip(jpegs, boxes, flips)])
    dev = pipeline.device_crop(jpegs, boxes, flips, 176, torch.device("cpu"), pipeline.pillow_decoder)
    assert np.abs(cpu.astype(int) - dev.permute(0, 2, 3, 1).numpy().astype(int)).mean() < 2.0


def test_random_resized_crop_keeps_torchvisions_ranges():
    rng = random.Random(0)
    boxes = [pipeline.random_crop(500, 375, rng) for _ in range(2000)]
    areas = [w * h / (500 * 375) for _, _, w, h in boxes]
    ratios = [w / h for _, _, w, h in boxes]
    assert all(0 <= left and 0 <= top and left + w <= 500 and top + h <= 375 for left, top, w, h in boxes)
    assert 0.075 < min(areas) < 0.1 and 0.95 < max(areas) <= 1.0  # area drawn from 8–100 %, some rejected
    assert min(ratios) > 0.74 and max(ratios) < 1.35
    assert pipeline.centre_crop(500, 375) == (86, 24, 328, 328)  # 224/256 of the short side


def test_the_warm_up_stream_has_the_real_streams_shapes(mini):
    meta = shards.read_meta(mini)
    for name in ("cpu", "gpu"):
        real = next(iter(shards.TrainStream(mini, meta, epoch=0, seed=0, rank=0, world_size=1, batch_size=16, res=32,
                                            pipeline_name=name, device=torch.device("cpu"), workers=0,
                                            decoder=pipeline.pillow_decoder)))
        fake = next(iter(imagenet.synthetic_stream(mini, seed=0, batch_size=16, resolution=32,
                                                   device=torch.device("cpu"), pipeline=name if name == "cpu" else "dali")))
        assert (fake.images.shape, fake.images.dtype, fake.layout) == (real.images.shape, real.images.dtype, real.layout)
        assert int(fake.labels.max()) < CLASSES


def test_the_gpu_paths_need_a_gpu_and_say_what_is_missing(mini, monkeypatch):
    with pytest.raises(DataError, match="pipeline=cpu"):
        imagenet.resolve_pipeline("gpu", torch.device("cpu"))
    monkeypatch.setitem(sys.modules, "torchvision", None)
    monkeypatch.setitem(sys.modules, "torchvision.io", None)
    with pytest.raises(DawnbenchError, match="torchvision.*pipeline=cpu"):
        pipeline.nvjpeg_decoder()
    monkeypatch.setitem(sys.modules, "nvidia.dali", None)
    with pytest.raises(DataError, match=r"pip install -e '\.\[dali\]'"):
        data.train_stream("imagenet@mini", epoch=0, seed=0, rank=0, world_size=1, batch_size=16, resolution=32,
                          device=torch.device("cpu"), pipeline="dali", workers=1)


def test_dali_reads_the_shards_on_the_cpu(mini):
    """DALI's graph (the GPU one differs only in the decoder's device), where DALI is installed."""
    pytest.importorskip("nvidia.dali")
    stream = data.train_stream("imagenet@mini", epoch=0, seed=0, rank=1, world_size=2, batch_size=16, resolution=32,
                               device=torch.device("cpu"), pipeline="dali", workers=1)
    batches = list(stream)
    assert len(batches) == len(stream) == CLASSES * TRAIN // (2 * 16)
    assert {(b.images.shape, b.layout) for b in batches} == {((16, 3, 32, 32), "NCHW")}
    assert all(int(b.labels.max()) < CLASSES for b in batches)


# --- the metric and a whole run -------------------------------------------------------------

def test_top5_counts_a_label_among_the_five_highest_scores():
    scores = torch.tensor([[9, 8, 7, 6, 5, 4.0], [0, 1, 2, 3, 4, 5.0], [5, 0, 0, 0, 0, 0.0]])
    labels = torch.tensor([4, 0, 0])
    assert TOP5.compute(scores, labels) == pytest.approx(200 / 3)
    tally = Tally(TOP5)
    tally.add(scores[:2], labels[:2])
    tally.add(scores[2:], labels[2:])
    assert tally.value == pytest.approx(200 / 3) and tally.extra == {"top1_accuracy": pytest.approx(100 / 3)}
    task = get_task("imagenet", "mini")
    assert (task.metric.name, task.threshold, task.dataset, task.subset) == ("top5_accuracy", 93.0, "imagenet@mini",
                                                                            "mini")


def test_a_run_reaches_93_top5_and_its_record_passes_the_checker(imagenet_run, capsys):
    result = json.loads((imagenet_run / "result.json").read_text())
    assert (result["status"], result["data_pipeline"], result["subset"], result["official"]) == \
        ("success", "cpu", "mini", False)
    last = result["evals"][-1]
    assert last["value"] >= 93 and 0 <= last["extra"]["top1_accuracy"] <= last["value"]
    assert main(["check-log", str(imagenet_run)]) == 0
    header, *rows = (imagenet_run / "epochs.tsv").read_text().splitlines()
    assert {"top5Accuracy", "top1Accuracy"} <= set(header.split("\t")) and len(rows) == len(result["evals"])


def test_a_subset_run_is_measured_but_not_exported(imagenet_run, mini, tmp_path, capsys):
    """A run on a subset is unofficial (SPEC §16): `infer` measures its model, `export` refuses to make a
    submission of it — it would rank beside ImageNet entries — and says why."""
    out = tmp_path / "sub"
    assert main(["infer", str(imagenet_run), "--batch-sizes", "1,8", "--warmup-items", "4"]) == 0
    capsys.readouterr()
    for extra in ([], ["--inference"]):
        assert main(["export", str(imagenet_run), *extra, "--out", str(out), "--author", "a", "--email", "a@b.c"]) == 2
        message = " ".join(capsys.readouterr().err.split())
        assert "unofficial: trained on the subset 'mini'" in message and "Nothing was written" in message
    assert not out.exists()


def test_generalize_scores_an_imagenet_run_on_imagenetv2(imagenet_run, tree, mini, tmp_path, capsys):
    v2 = tmp_path / "imagenetv2-matched-frequency-format-val"
    for path, label in read_tree(tree).val:  # as published: <class index>/<hash>.jpeg
        (v2 / str(label)).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, v2 / str(label) / f"{abs(hash(path.name)):x}.jpeg")
    assert main(["generalize", str(imagenet_run), "--from", str(v2), "--out", str(tmp_path / "g"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    [model] = doc["models"]
    assert model["recheck"] and model["unseen"]["imagenetv2-matched-frequency-format-val"]["value"] >= 0
    assert any("no shifted suite" in note for note in doc["notes"])


def test_profile_takes_a_subset_as_run_does(mini, tmp_path, capsys):
    assert main(["profile", "imagenet", "--subset", "mini", "--steps", "2", *SETS, "--out", str(tmp_path / "p"),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["task"] == "imagenet" and summary["step"]["flops"] > 0
    classes = {c["class"]: c for c in summary["classes"]}
    assert classes["convolution forward"]["suite"] == "conv" and "convolution backward wrt parameters" in classes
    assert main(["classes", str(tmp_path / "p"), str(tmp_path / "p")]) == 0


@pytest.mark.slow
@pytest.mark.distributed
def test_two_gloo_workers_share_each_epoch(mini, tmp_path):
    assert main(["run", "imagenet", "--subset", "mini", "--nproc", "2", "--max-epochs", "4", "--out", str(tmp_path),
                 *SETS]) == 0
    [run] = tmp_path.iterdir()
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "success" and result["distributed"]["world_size"] == 2
    # 520 images dealt to 2 ranks of 16: 16 steps each, 8 images sit out an epoch.
    assert [e["samples"] for e in result["evals"]] == [512 * (k + 1) for k in range(len(result["evals"]))]
    assert [w["steps"] for w in result["distributed"]["workers"]] == [16 * len(result["evals"])] * 2
    assert main(["check-log", str(run)]) == 0
