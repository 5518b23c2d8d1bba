"""The characterisation's DAWNBench workloads (issue: ResNet-18 and DrQA as entries): bkj's
ResNet-18 network and schedule, DrQA's features, its GloVe reader's errors, both training on
generated data, DrQA's answers scored by the official F1, and both read by ``similarity``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from dawnbench import squad_eval
from dawnbench.analysis.similarity import similarity
from dawnbench.cli import main
from dawnbench.data import squad
from dawnbench.data.cache import write_dataset
from dawnbench.data.squad import generate
from dawnbench.entries import TrainContext, load_entry_class
from dawnbench.entries.cifar10_resnet18 import ResNet18, learning_rate
from dawnbench.entries.squad_drqa import Text, features
from dawnbench.harness.core import evaluate
from dawnbench.profiling.flops import training_flops_per_sample
from dawnbench.tasks import get_task

# A shrunken DrQA: its shape, small.
SMALL = {"hidden": 16, "vector_dim": 8, "doc_layers": 2, "question_layers": 2, "batch_size": 16, "tokenizer": "basic"}
DRQA_SMALL = [arg for key, value in SMALL.items() for arg in ("--set", f"{key}={value}")]


@pytest.fixture(scope="module")
def squad_files(tmp_path_factory) -> Path:
    """A generated set in the official format: short contexts (no filler)."""
    return generate.write_set(tmp_path_factory.mktemp("squad") / "easy", articles=6, dev_articles=2, filler=0)


@pytest.fixture(scope="module")
def squad_easy(squad_files, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cache")
    squad.import_files(squad_files, root / "squad@easy", subset="easy")
    return root


@pytest.fixture(scope="module")
def glove(squad_easy, tmp_path_factory) -> Path:
    """A GloVe-format file of 8-d vectors for the generated set's words (and words it lacks)."""
    words = {w for q in squad.load_questions(squad_easy / "squad@easy", "train")
             for doc in Text("basic").docs([q.context, q.question]) for w in doc.words}
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("vectors") / "glove.8d.txt"
    lines = [" ".join([w, *(f"{v:.4f}" for v in rng.normal(size=8))]) for w in sorted(words) + ["absent", ". . ."]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- cifar10-resnet18 ------------------------------------------------------------------------

def test_resnet18_is_bkjs_network_and_schedule():
    net = ResNet18()
    assert [b.conv2.out_channels for b in net.layers] == [64, 64, 128, 128, 256, 256, 256, 256]
    assert net.classifier.in_features == 512                      # average and max pooling, concatenated
    # By hand: 5,195,456 conv weights + BatchNorm + the 512×10 classifier; 460 M multiply-adds
    # forward (1.77 M stem, 151 M, 134 M, 134 M, 38.8 M per stage), ×3 for a training step.
    assert sum(p.numel() for p in net.parameters()) == 5_205_962
    assert training_flops_per_sample(net, torch.randn(2, 3, 32, 32)) / 1e9 == pytest.approx(2.76, rel=0.01)
    hp = load_entry_class("cifar10-resnet18").hparams
    lr = [learning_rate(p, hp) for p in (0, 7.5, 14.999, 15, 22.5, 30, 32.5, 35, 38)]
    assert lr == pytest.approx([0, 0.05, 0.1, 0.105, 0.055, 0.005, 0.0025, 0.0, 0.0005], abs=1e-4)
    assert hp["epochs"] == 40 and hp["batch_size"] == 128 and hp["weight_decay"] == 5e-4


def test_resnet18_trains_a_few_steps_on_generated_images():
    task = get_task("cifar10")
    entry = load_entry_class("cifar10-resnet18")(task, torch.device("cpu"), {"batch_size": 8})
    rng = np.random.default_rng(0)
    images, labels = rng.integers(0, 256, (16, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, 16)
    ctx = TrainContext(task, 0, torch.device("cpu"), entry.hp, lambda: (images, labels))
    progress = next(entry.train(ctx))                       # one epoch of 16 images: two steps
    assert progress.epoch == 1.0 and progress.samples == 16 and torch.isfinite(progress.loss)
    with torch.inference_mode():
        assert entry.predict(torch.from_numpy(images[:5])).shape == (5, 10)


# --- squad-drqa ------------------------------------------------------------------------------

def test_drqa_features_on_a_known_pair():
    text = Text("basic")
    context, question = text.docs(["The Rhine flows through Basel. Basel lies on the Rhine.", "Where is basel?"])
    assert context.words[:5] == ["The", "Rhine", "flows", "through", "Basel"]
    f = features(context, question)
    basel = context.words.index("Basel")
    assert f.shape == (len(context.words), 4)
    assert f[basel].tolist() == [0.0, 1.0, 1.0, pytest.approx(2 / 12)]   # "basel" in the question, not "Basel"
    assert f[context.words.index("Rhine")].tolist()[:3] == [0.0, 0.0, 0.0]
    assert f[context.words.index("lies")][3] == pytest.approx(1 / 12)
    assert text.facts["tokenizer"].startswith("basic") and not text.facts["pos"]


def test_drqa_features_with_spacy_match_lemmas():
    pytest.importorskip("spacy")
    pytest.importorskip("spacy_lookups_data")
    text = Text("spacy")
    context, question = text.docs(["The mice were running home.", "Which mouse runs?"])
    f = features(context, question)
    assert f[context.words.index("mice")].tolist()[:3] == [0.0, 0.0, 1.0]       # mice ~ mouse by lemma
    assert f[context.words.index("running")].tolist()[:3] == [0.0, 0.0, 1.0]
    assert text.facts["tokenizer"].startswith("spaCy") and text.facts["lemma"].startswith("spaCy")


def test_a_recurrent_layers_flops_are_counted():
    """oneDNN's fused LSTM layer (what nn.LSTM runs on a CPU) has no formula in torch's counter."""
    lstm = torch.nn.LSTM(300, 128, batch_first=True, bidirectional=True)
    x = torch.randn(4, 50, 300, requires_grad=True)
    forward = 2 * (2 * 4 * 50 * 512 * (300 + 128))        # 2 directions × 2·T·B·4H·(I + H)
    with FlopCounterMode(display=False) as counter:
        lstm(x)[0].sum().backward()
    assert counter.get_total_flops() == 3 * forward          # the backward: twice the forward


def _glove(words: list[str], dim: int = 8, value: str = "0.5") -> str:
    return "".join(f"{w} " + " ".join([value] * dim) + "\n" for w in words)


@pytest.mark.parametrize("content, message, code", [
    (None, "no such file", 2),                     # the file's shape: refused before the run
    ("folder", "that is a folder", 2),
    ("river 0.1 0.2\n", "line 1: 2 numbers after the word where 8 were expected", 2),
    (_glove(["river", "north"], dim=4), "a file of 4-dimensional vectors", 2),       # fewer dimensions
    (_glove(["river", "north", "the"], dim=9), "a file of 9-dimensional vectors. Use a 8-dimensional file, or "
                                               "tell the entry the file's dimension (--set vector_dim=9)", 2),
    ("400000 8\n", "word2vec header", 2),
    ("river " + " ".join(["0.5"] * 7) + " x\n", "not a number", 2),
    (_glove(["river"], value="nan"), "holds nan, which is not a finite float32", 2),
    (_glove(["river"], value="1e39"), "holds 1e39, which is not a finite float32", 2),
    ("river " + " ".join(["0.5"] * 8) + "\nnorth 0.1\n", "line 2: 1 numbers", 2),
    ("zzz " + " ".join(["0.5"] * 8) + "\n", "none of the", 1),     # found by the run's (timed) read
    (_glove([f"w{i}" for i in range(1000)]) + "river 0.5\n", "line 1001: 1 value(s)", 1),   # past the head
])
def test_the_glove_reader_names_file_and_line(squad_easy, tmp_path, monkeypatch, capsys, content, message, code):
    monkeypatch.setenv("DAWNBENCH_DATA", str(squad_easy))
    vectors = tmp_path / "v.txt"
    if content == "folder":
        vectors.mkdir()
    elif content is not None:
        vectors.write_text(content)
    got = main(["run", "squad", "--subset", "easy", "--entry", "squad-drqa", *DRQA_SMALL,
                "--set", f"vectors={vectors}", "--max-epochs", "1", "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    if code == 2:
        assert got == 2 and "Traceback" not in err, err
    else:                                          # the run's record says why it ended
        [record] = (tmp_path / "runs").iterdir()
        result = json.loads((record / "result.json").read_text())
        assert got == 1 and result["status"] == "aborted", result["status"]
        err = result["error"]
    assert message in " ".join(err.split()) and str(vectors) in " ".join(err.split()), err


@pytest.fixture(scope="module")
def drqa_run(squad_easy, glove, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("drqa")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DAWNBENCH_DATA", str(squad_easy))
        assert main(["run", "squad", "--subset", "easy", "--entry", "squad-drqa", *DRQA_SMALL,
                     "--set", f"vectors={glove}", "--set", "tune_partial=20", "--max-epochs", "2",
                     "--out", str(out)]) == 1                           # 2 epochs: not F1 75
    [run] = out.iterdir()
    return run


def test_drqa_trains_with_vectors_and_records_its_host_work(drqa_run):
    result = json.loads((drqa_run / "result.json").read_text())
    assert result["status"] == "not_reached" and len(result["evals"]) == 2
    facts = result["entry_facts"]
    assert facts["tokenizer"].startswith("basic") and facts["lemma"].startswith("lower case")
    assert facts["words_found"] == facts["words_wanted"] and facts["vectors"].endswith("glove.8d.txt")
    assert 0 < facts["preprocess_s"] < result["timed_s"] and facts["batching_s"] > 0
    assert facts["trained_on"] == facts["questions"] > 0


def test_drqa_preprocessing_time_leaves_out_reading_the_dataset(squad_easy, glove):
    """`preprocess_s` is DrQA's host-side preprocessing; reading the questions is the harness's loading."""
    task, folder = get_task("squad", subset="easy"), squad_easy / "squad@easy"
    entry = load_entry_class("squad-drqa")(task, torch.device("cpu"), {**SMALL, "vectors": str(glove)})
    questions = squad.load_questions(folder, "train")

    def slow_load():
        time.sleep(1.0)
        return questions

    next(entry.train(TrainContext(task, 0, torch.device("cpu"), entry.hp, slow_load)))
    assert 0 < entry.host["preprocess_s"] < 1.0


def test_drqa_answers_are_scored_by_the_official_f1(squad_files, squad_easy, glove):
    """The entry's answer strings, scored by the official script's rules, are what the harness records."""
    task, folder = get_task("squad", subset="easy"), squad_easy / "squad@easy"
    entry = load_entry_class("squad-drqa")(task, torch.device("cpu"), {**SMALL, "vectors": str(glove)})
    questions = squad.load_questions(folder, "train")
    next(entry.train(TrainContext(task, 0, torch.device("cpu"), entry.hp, lambda: questions)))   # an epoch
    split = squad.open_split(folder, "dev")
    value, extra = evaluate(entry, task, split)
    with torch.inference_mode():
        answers = entry.predict(split.inputs)
    articles = json.loads((squad_files / "dev-v1.1.json").read_text())["data"]
    official = squad_eval.evaluate(articles, {q.id: a for q, a in zip(split.inputs, answers)})
    assert official["answered"] == official["total"] == len(answers) > 0
    assert value == pytest.approx(official["f1"]) and extra["exact_match"] == pytest.approx(official["exact_match"])
    assert all(a in q.context for q, a in zip(split.inputs, answers))


def test_similarity_takes_both_workloads(drqa_run, tmp_path, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    split = lambda n: (rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, n))
    write_dataset("cifar10", {"train": split(64), "test": split(32)}, {"source": "generated"})
    for batch in (16, 32):                     # two configurations of it: similarity needs three
        assert main(["run", "cifar10", "--entry", "cifar10-resnet18", "--set", f"batch_size={batch}",
                     "--max-epochs", "1", "--out", str(tmp_path / "runs" / "resnet18")]) == 1
    doc = similarity([tmp_path / "runs" / "resnet18", drqa_run.parent])
    names = " ".join(doc["configurations"])
    assert "cifar10-resnet18" in names and "squad-drqa" in names
