"""SQuAD v1.1 (SPEC §17) on a generated set in the official format: import, metric, features,
span decoding, the run to the threshold, inference, export and two gloo workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dawnbench import squad_eval
from dawnbench.cli import main
from dawnbench.data import squad
from dawnbench.data.squad import generate
from dawnbench.entries import spans
from dawnbench.entries.squad_minilm import load_tokenizer
from dawnbench.errors import DataError, EntryError
from dawnbench.tasks import Tally, get_task

# A shrunken squad-minilm: 2 of its 6 pre-trained layers, short windows (so contexts need several).
SETS = ["--set", "layers=2", "--set", "max_length=64", "--set", "stride=16", "--set", "batch_size=16",
        "--set", "lr=3e-4", "--set", "epochs=4", "--set", "evals_per_epoch=4"]


@pytest.fixture(scope="module")
def official(tmp_path_factory) -> Path:
    return generate.write_set(tmp_path_factory.mktemp("squad") / "files", articles=14, dev_articles=4, paragraphs=3)


@pytest.fixture(scope="module")
def easy(tmp_path_factory) -> Path:
    """Short contexts (no filler), imported as squad@easy: what the training tests learn quickly."""
    files = generate.write_set(tmp_path_factory.mktemp("squad") / "easy", articles=14, dev_articles=4, filler=0)
    root = tmp_path_factory.mktemp("cache-easy")
    squad.import_files(files, root / "squad@easy", subset="easy")
    return root


@pytest.fixture(scope="module")
def cache(official, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cache")
    squad.import_files(official, root / "squad@gen", subset="gen")
    return root


@pytest.fixture
def gen(cache, monkeypatch) -> Path:
    monkeypatch.setenv("DAWNBENCH_DATA", str(cache))
    return cache / "squad@gen"


@pytest.fixture(scope="module")
def squad_run(easy, tmp_path_factory) -> Path:
    """One run of squad-minilm (shrunk) on the generated set to the real threshold, F1 75."""
    out = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DAWNBENCH_DATA", str(easy))
        assert main(["run", "squad", "--subset", "easy", "--out", str(out), *SETS]) == 0
    [run] = out.iterdir()
    return run


# --- the metric -------------------------------------------------------------------------------

@pytest.mark.parametrize("prediction, golds, f1, em", [
    ("Denver Broncos", ["Denver Broncos"], 1.0, 1.0),
    ("the Denver Broncos!", ["Denver Broncos"], 1.0, 1.0),                 # articles and punctuation dropped
    ("An apple, a pear", ["apple pear"], 1.0, 1.0),
    ("Broncos", ["Denver Broncos"], 2 * 1 * 0.5 / 1.5, 0.0),                # P 1, R 1/2
    ("Denver Broncos won", ["Denver Broncos", "Broncos won", "won"], 0.8, 0.0),  # best of three golds
    ("a a b", ["a b b"], 2 / 3, 0.0),                                       # "a" is an article: "b" vs "b b"
    ("x y y", ["y y z"], 2 / 3, 0.0),                                       # multiset: two y's in common
    ("The", ["the"], 0.0, 1.0),        # both normalise to "": EM 1, F1 0 (v1.1: nothing in common)
    ("", ["Paris"], 0.0, 0.0),
    ("Zürich, 1847.", ["zürich 1847"], 1.0, 1.0),                           # non-ASCII kept, lower-cased
    ("l’été", ["l'été"], 0.0, 0.0),                                         # only ASCII punctuation is dropped
])
def test_the_official_metric_on_hand_worked_cases(prediction, golds, f1, em):
    assert squad_eval.score_question(prediction, golds) == pytest.approx((f1, em), abs=1e-12)


def test_a_missing_prediction_scores_zero_and_still_counts():
    data = [{"paragraphs": [{"qas": [{"id": "a", "answers": [{"text": "x"}]}, {"id": "b", "answers": [{"text": "y"}]}]}]}]
    assert squad_eval.evaluate(data, {"a": "x"}) == {"exact_match": 50.0, "f1": 50.0, "total": 2, "answered": 1}
    tally = Tally(get_task("squad").metric)
    tally.add(["x", None], [["x"], ["y"]])
    assert tally.values() == {"f1": 50.0, "exact_match": 50.0}


def test_the_metric_agrees_with_torchmetrics_where_both_define_it(official):
    """torchmetrics adapts the official script (in float32, with v2.0's rule for empty strings): on
    predictions that normalise to something, the two agree."""
    from torchmetrics.functional.text import squad as reference

    doc = json.loads((official / "dev-v1.1.json").read_text())
    qas = [qa for a in doc["data"] for p in a["paragraphs"] for qa in p["qas"]]
    variants = ["{0}", "the {0} itself", "{0} and more words", "{0}.", "x", "{0} {0}"]
    preds = {qa["id"]: variants[i % len(variants)].format(qa["answers"][-1]["text"]) for i, qa in enumerate(qas)}
    ours = squad_eval.evaluate(doc["data"], preds)
    theirs = reference([{"prediction_text": preds[qa["id"]], "id": qa["id"]} for qa in qas],
                       [{"answers": {"answer_start": [a["answer_start"] for a in qa["answers"]],
                                     "text": [a["text"] for a in qa["answers"]]}, "id": qa["id"]} for qa in qas])
    assert ours["f1"] == pytest.approx(float(theirs["f1"]), abs=1e-4)
    assert ours["exact_match"] == pytest.approx(float(theirs["exact_match"]), abs=1e-4)


def test_score_takes_what_the_official_script_takes(official, tmp_path, capsys):
    doc = json.loads((official / "dev-v1.1.json").read_text())
    qas = [qa for a in doc["data"] for p in a["paragraphs"] for qa in p["qas"]]
    preds = {qa["id"]: qa["answers"][0]["text"] for qa in qas[1:]}
    (tmp_path / "p.json").write_text(json.dumps(preds))
    assert main(["score", "squad", str(official / "dev-v1.1.json"), str(tmp_path / "p.json"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    expected = 100.0 * (len(qas) - 1) / len(qas)
    assert result["f1"] == pytest.approx(expected) and result["exact_match"] == pytest.approx(expected)
    (tmp_path / "bad.json").write_text('{"a": 1}')
    assert main(["score", "squad", str(official / "dev-v1.1.json"), str(tmp_path / "bad.json")]) == 2
    assert "question id" in capsys.readouterr().err


# --- the import ---------------------------------------------------------------------------------

def test_the_generated_set_imports_under_a_subset_only(official, tmp_path):
    with pytest.raises(DataError, match="--subset NAME"):
        squad.import_files(official, tmp_path / "squad", subset=None)
    meta = squad.import_files(official, tmp_path / "squad@gen", subset="gen")
    questions = squad.load_questions(tmp_path / "squad@gen", "train")
    assert meta["splits"]["train"]["count"] == len(questions) > 100
    assert all(q.context[a.start:a.start + len(a.text)] == a.text for q in questions for a in q.answers)
    assert any(len(q.answers) == 3 for q in questions) and any(not q.context.isascii() for q in questions)
    split = squad.open_split(tmp_path / "squad@gen", "dev")
    inputs, golds = next(split.batches(5))
    assert len(inputs) == 5 and not hasattr(inputs[0], "answers") and all(golds)


@pytest.mark.parametrize("damage, message", [
    (lambda d: d["data"][1]["paragraphs"][2]["qas"][0]["answers"][0].__setitem__("answer_start", 3),
     r"article 2 \(.*\), paragraph 3, question 't000102a', answer 1: answer_start 3 does not point"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][1].pop("answers"), r"article 1 .*question 't000000b'"),
    (lambda d: d["data"][0]["paragraphs"][1]["qas"][0].__setitem__("is_impossible", True), "SQuAD 2.0"),
    (lambda d: d["data"][0]["paragraphs"][1]["qas"][0].__setitem__("id", "t000000a"), "used twice"),
])
def test_a_damaged_file_is_reported_with_article_paragraph_and_question(official, tmp_path, damage, message):
    doc = json.loads((official / "train-v1.1.json").read_text())
    damage(doc)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "train-v1.1.json").write_text(json.dumps(doc))
    (tmp_path / "in" / "dev-v1.1.json").write_text((official / "dev-v1.1.json").read_text())
    with pytest.raises(DataError, match=message):
        squad.import_files(tmp_path / "in", tmp_path / "out", subset="x")
    assert not (tmp_path / "out").exists()


def test_malformed_json_names_file_and_line_and_a_link_is_refused(official, tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "train-v1.1.json").write_text('{"version": "1.1",\n "data": [\n  {"title": ]}')
    (tmp_path / "in" / "dev-v1.1.json").symlink_to(official / "dev-v1.1.json")
    assert main(["data", "fetch", "squad", "--from", str(tmp_path / "in"), "--subset", "x"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "train-v1.1.json:3: not valid JSON" in err and "Traceback" not in err
    (tmp_path / "in" / "train-v1.1.json").write_text((official / "train-v1.1.json").read_text())
    assert main(["data", "fetch", "squad", "--from", str(tmp_path / "in"), "--subset", "x"]) == 2
    assert "symbolic link" in " ".join(capsys.readouterr().err.split())


# --- features and decoding -----------------------------------------------------------------------

def test_every_window_that_holds_an_answer_points_at_exactly_its_text(gen):
    questions = squad.load_questions(gen, "train")
    features, starts, ends = spans.train_features(load_tokenizer(), questions, 96, 32)
    assert len(features) > len(questions)                   # contexts need several windows
    held = 0
    for f in range(len(features)):
        q = questions[int(features.question[f])]
        s, e = int(starts[f]), int(ends[f])
        if s == 0:
            continue
        held += 1
        text = q.context[int(features.offsets[f, s, 0]):int(features.offsets[f, e, 1])]
        assert squad_eval.normalize(text) == squad_eval.normalize(q.answers[0].text)
    assert held >= len(questions) - sum(len(q.answers[0].text.split()) > 30 for q in questions)
    # the long mottos never fit a 96-token window: those windows point at [CLS]
    long = [f for f in range(len(features)) if len(questions[int(features.question[f])].answers[0].text.split()) > 60]
    assert long and all(int(starts[f]) == 0 for f in long)


def test_decoding_takes_the_best_valid_span_over_all_windows(gen):
    questions = squad.load_questions(gen, "dev")[:2]
    features = spans.windows(load_tokenizer(), questions, 96, 32)
    start, end = torch.zeros(len(features), 96), torch.zeros(len(features), 96)
    start[:, 0] = end[:, 0] = 100                  # [CLS] is never an answer
    last = max(f for f in range(len(features)) if int(features.question[f]) == 0)
    context = (features.offsets[last, :, 0] >= 0).nonzero().flatten()
    s = int(context[2])
    start[last, s], end[last, s + 1], end[last, s - 1] = 5, 5, 9   # end before start: invalid
    end[last, s + 40] = 8                          # longer than max_answer (30): invalid
    answers = spans.best_answers(start, end, features, questions, n_best=20, max_answer=30)
    o = features.offsets[last]
    assert answers[0] == questions[0].context[int(o[s, 0]):int(o[s + 1, 1])]
    with pytest.raises(EntryError, match="max_length"):
        spans.windows(load_tokenizer(), [squad.Question("q", "why " * 200, "a context")], 64, 16)


# --- the whole path ---------------------------------------------------------------------------------

def test_a_run_reaches_f1_75_and_its_log_passes_the_checker(squad_run):
    result = json.loads((squad_run / "result.json").read_text())
    assert result["status"] == "success" and result["official"] is False
    last = result["evals"][-1]
    assert last["value"] >= 75.0 and "exact_match" in last["extra"]
    header, *rows = (squad_run / "epochs.tsv").read_text().splitlines()
    assert "f1Score" in header.split("\t")
    column = header.split("\t").index("f1Score")
    assert all(0.0 <= float(r.split("\t")[column]) <= 1.0 for r in rows)
    assert main(["check-log", str(squad_run)]) == 0


def test_infer_measures_a_squad_run_and_export_refuses_its_subset(squad_run, easy, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(easy))
    assert main(["infer", str(squad_run), "--batch-sizes", "1,4", "--warmup-items", "2", "--max-items", "24",
                 "--json"]) == 0
    inf = json.loads(capsys.readouterr().out)["inference"]
    assert inf["items"] == 24 and 0 < inf["latency_p50_ms"] <= inf["latency_p99_ms"] and inf["value"] >= 0
    assert set(inf["throughput_by_batch_size"]) == {"1", "4"}
    out = tmp_path / "sub"
    assert main(["export", str(squad_run), "--out", str(out), "--author", "a", "--email", "a@b.c"]) == 2
    assert "unofficial: trained on the subset 'easy'" in " ".join(capsys.readouterr().err.split())
    assert not out.exists()


def test_a_budget_that_ends_the_first_epoch_still_gives_an_evaluation(easy, tmp_path, monkeypatch):
    """On a CPU a SQuAD epoch takes hours: a run stopped by --max-seconds inside it is still scored."""
    monkeypatch.setenv("DAWNBENCH_DATA", str(easy))
    assert main(["run", "squad", "--subset", "easy", "--max-seconds", "1", "--out", str(tmp_path), *SETS]) == 1
    [run] = tmp_path.iterdir()
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "not_reached" and result["time_to_accuracy_s"] is None
    [last] = [e for e in result["evals"] if e["stopped_by"]]
    # Where inside the epoch depends on the machine's speed (on a busy one, before the first step): any point.
    assert last["stopped_by"] == "max_seconds" and 0 <= last["epoch"] < 1 and 0 <= last["value"] <= 100
    assert "exact_match" in last["extra"] and last == result["evals"][-1]
    header, *rows = (run / "epochs.tsv").read_text().splitlines()
    assert header.split("\t") == ["epoch", "hours", "f1Score"] and len(rows) == len(result["evals"])
    assert main(["check-log", str(run)]) == 0


@pytest.mark.slow
@pytest.mark.distributed
def test_two_gloo_workers_train_squad(easy, tmp_path, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(easy))
    assert main(["run", "squad", "--subset", "easy", "--nproc", "2", "--max-epochs", "0.5", "--target", "1",
                 "--out", str(tmp_path), *SETS]) == 0
    [run] = tmp_path.iterdir()
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "success" and result["distributed"]["world_size"] == 2
    steps = [w["steps"] for w in result["distributed"]["workers"]]
    assert steps[0] == steps[1] > 0


@pytest.mark.slow
def test_bidaf_learns_from_scratch_and_its_saved_model_answers(easy, tmp_path, monkeypatch, capsys):
    """The seed model, shrunk (hidden 32), to F1 30 on the easy set (from about 5 after an epoch): it learns; its
    saved model (weights and vocabulary) is rebuilt by infer."""
    monkeypatch.setenv("DAWNBENCH_DATA", str(easy))
    small = ["--set", "hidden=32", "--set", "word_dim=32", "--set", "char_filters=32", "--set", "batch_size=16",
             "--set", "lr=1.0", "--set", "epochs=15"]
    assert main(["run", "squad", "--subset", "easy", "--entry", "squad-bidaf", "--target", "30", "--out",
                 str(tmp_path), *small]) == 0
    [run] = tmp_path.iterdir()
    assert json.loads((run / "result.json").read_text())["evals"][-1]["value"] >= 30
    capsys.readouterr()
    assert main(["infer", str(run), "--batch-sizes", "1", "--warmup-items", "2", "--max-items", "12", "--json"]) == 0
    inference = json.loads(capsys.readouterr().out)["inference"]
    assert inference["items"] == 12 and inference["latency_p50_ms"] > 0 and 0 <= inference["value"] <= 100


@pytest.mark.parametrize("sets, message", [
    ({"encoder": "gpt-2"}, "minilm-l6, bert-base, bert-large"),
    ({"encoder": "bert-base", "layers": 13}, "has 12 layers"),
    ({"layers": 7}, "minilm-l6 encoder has 6 layers"),
    ({"max_length": 64}, "stride=128 with max_length=64"),       # the recipe's stride left as it was
])
def test_an_encoder_or_layer_count_it_does_not_have_is_refused(sets, message):
    from dawnbench.entries.squad_minilm import SquadMinilm

    with pytest.raises(EntryError, match=message):
        SquadMinilm.check_hparams(get_task("squad"), sets)


def test_a_question_that_leaves_a_window_less_room_than_its_stride_is_named_not_a_panic(capfd):
    from types import SimpleNamespace

    question = SimpleNamespace(question="which of the many things named here " * 3, context="word " * 300)
    with pytest.raises(EntryError, match="takes 2[0-9] tokens"):
        spans.windows(load_tokenizer(), [question], 64, 40)
    assert "panicked" not in capfd.readouterr().err          # refused before tokenizers' Rust code could panic


def test_bert_base_shapes_are_bert_bases_on_minilms_vocabulary():
    from dawnbench.entries.squad_minilm import SpanModel

    bert = SpanModel(encoder="bert-base").bert
    config = bert.config
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.intermediate_size) == \
        (768, 12, 12, 3072)
    assert config.vocab_size == load_tokenizer().get_vocab_size() == 30522
    # BERT-base's 110 M (Devlin et al.), less the pooler this span model does not build, plus the span head
    assert 108e6 < sum(p.numel() for p in bert.parameters()) < 110e6


def test_profile_counts_a_span_models_flops(squad_run, easy, tmp_path, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(easy))
    assert main(["profile", str(squad_run), "--steps", "2", "--out", str(tmp_path / "p")]) == 0
    result = json.loads((squad_run / "result.json").read_text())
    assert result["throughput"]["flops_per_sample"] > 0          # counted on the tuple of start and end logits
