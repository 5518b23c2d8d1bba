"""SQuAD v1.1: the official JSON files imported, checked, and held as questions.

**Import** (``dawnbench data fetch squad --from DIR``): ``DIR/train-v1.1.json`` and
``DIR/dev-v1.1.json`` as published (``{"version": "1.1", "data": [{"title", "paragraphs":
[{"context", "qas": [{"id", "question", "answers": [{"text", "answer_start"}]}]}]}]}``).
Every answer's ``answer_start`` must point at its text in the context; a malformed file
or answer is reported with the file, the article (number and title), the paragraph and
the question id. The counts must be 87,599 and 10,570 questions, or the files import
under ``--subset NAME`` (runs on them are unofficial). The prepared form is the two files
re-written compactly (``train.json``, ``dev.json``: contexts once, questions pointing at
them) with ``meta.json``.

**What entries and the harness get**: :func:`load_questions` (an entry's
``ctx.load_train()``: :class:`TrainQuestion` with their answers) and :func:`open_split`
(what the harness scores: ``predict`` receives :class:`Question` — never the answers —
and returns one answer string per question; the gold answer texts stay with the harness).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dawnbench.data.splits import ListSplit
from dawnbench.errors import DataError, DawnbenchError
from dawnbench.io import atomic_write_json, fsync_dir, parse_json, read_foreign

FILES = {"train": "train-v1.1.json", "dev": "dev-v1.1.json"}
COUNTS = {"train": 87_599, "dev": 10_570}
FORMAT = 1


@dataclass(frozen=True, slots=True)
class Question:
    """What ``predict`` receives: a question about a context (no answers)."""

    id: str
    question: str
    context: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    start: int          # character offset of ``text`` in the context


@dataclass(frozen=True, slots=True)
class TrainQuestion(Question):
    """A training question with its gold answers (SQuAD v1.1 train has one per question)."""

    answers: tuple[Answer, ...] = ()


# --- reading the official files -------------------------------------------------------------

def _where(file: Path, a: int, title: Any, p: int | None = None, qid: Any = None) -> str:
    place = f"{file.name}: article {a + 1} ({str(title)[:60]!r})"
    if p is not None:
        place += f", paragraph {p + 1}"
    if qid is not None:
        place += f", question {str(qid)[:80]!r}"
    return place


def parse_official(raw: bytes, file: Path) -> list[dict[str, Any]]:
    """The file's questions as flat records (id, title, context, question, answers), checked."""
    doc = parse_json(raw, file)
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise DataError(f"{file}: not a SQuAD file: expected {{\"version\": \"1.1\", \"data\": [articles]}}. "
                        f"Pass the official {FILES['train']} and {FILES['dev']}.")
    if str(doc.get("version", "1.1")).lstrip("v").startswith("2"):
        raise DataError(f"{file}: a SQuAD {doc['version']} file; this task is SQuAD v1.1 (every question "
                        "answerable). Pass train-v1.1.json and dev-v1.1.json.")
    records, seen = [], set()
    for a, article in enumerate(doc["data"]):
        title = article.get("title", "") if isinstance(article, dict) else ""
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            raise DataError(f"{_where(file, a, title)}: needs a list \"paragraphs\". The file is not SQuAD v1.1.")
        for p, paragraph in enumerate(article["paragraphs"]):
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str) \
                    or not isinstance(paragraph.get("qas"), list):
                raise DataError(f"{_where(file, a, title, p)}: needs a string \"context\" and a list \"qas\".")
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                qid = qa.get("id") if isinstance(qa, dict) else None
                where = _where(file, a, title, p, qid)
                if not isinstance(qid, str) or not isinstance(qa.get("question"), str) \
                        or not isinstance(qa.get("answers"), list):
                    raise DataError(f"{where}: a question needs a string \"id\", a string \"question\" and a "
                                    "list \"answers\".")
                if qa.get("is_impossible"):
                    raise DataError(f"{where}: an unanswerable question (SQuAD 2.0); this task is SQuAD v1.1.")
                if qid in seen:
                    raise DataError(f"{where}: this id is used twice in the file; ids must be unique.")
                seen.add(qid)
                if not qa["answers"]:
                    raise DataError(f"{where}: no answers; every SQuAD v1.1 question has at least one.")
                answers = []
                for n, ans in enumerate(qa["answers"]):
                    text, start = (ans.get("text"), ans.get("answer_start")) if isinstance(ans, dict) else (None, None)
                    if not isinstance(text, str) or not isinstance(start, int) or isinstance(start, bool):
                        raise DataError(f"{where}, answer {n + 1}: needs a string \"text\" and an integer "
                                        "\"answer_start\".")
                    if context[start:start + len(text)] != text:
                        found = context[max(start, 0):max(start, 0) + len(text)]
                        raise DataError(f"{where}, answer {n + 1}: answer_start {start} does not point at its text "
                                        f"{text[:60]!r} (the context there reads {found[:60]!r}). Fix the "
                                        "answer_start (a character offset into the context) or the text.")
                    answers.append((text, start))
                records.append({"id": qid, "title": str(title), "context": context, "question": qa["question"],
                                "answers": answers})
    return records


def _compact(records: list[dict[str, Any]]) -> dict[str, Any]:
    contexts: dict[str, int] = {}
    questions = []
    for r in records:
        index = contexts.setdefault(r["context"], len(contexts))
        questions.append([r["id"], r["title"], index, r["question"], r["answers"]])
    return {"format": FORMAT, "contexts": list(contexts), "questions": questions}


def import_files(source: Path, dest: Path, *, subset: str | None) -> dict[str, Any]:
    """Check and prepare ``source``'s two official files into ``dest`` (all or nothing)."""
    source = Path(source)
    if source.is_file():
        raise DataError(f"{source}: pass the folder that holds {FILES['train']} and {FILES['dev']}, not one file.")
    counts, digests, prepared = {}, {}, {}
    for split, name in FILES.items():
        path = source / name
        if not path.exists():
            raise DataError(f"{source}: no {name}. SQuAD v1.1 is published as {FILES['train']} and "
                            f"{FILES['dev']} (https://rajpurkar.github.io/SQuAD-explorer/); put both in this folder.")
        try:
            raw = read_foreign(path, "data")
        except DawnbenchError as err:
            raise DataError(str(err)) from None
        records = parse_official(raw, path)
        counts[split], digests[split] = len(records), hashlib.sha256(raw).hexdigest()
        prepared[split] = _compact(records)
    if subset is None and counts != COUNTS:
        raise DataError(f"{source}: {counts['train']:,} training and {counts['dev']:,} dev questions; the official "
                        f"files have {COUNTS['train']:,} and {COUNTS['dev']:,}. To use these files anyway, import "
                        "them under a name with --subset NAME (runs on them are unofficial).")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.parent))
    try:
        for split, doc in prepared.items():
            (staging / f"{split}.json").write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")),
                                                   encoding="utf-8")
        meta = {"format": FORMAT, "name": dest.name, "kind": "questions", "num_classes": 0, "subset": subset,
                "source": str(source), "sha256": digests,
                "splits": {s: {"count": c} for s, c in counts.items()}}
        atomic_write_json(staging / "meta.json", meta)
        if dest.exists():
            shutil.rmtree(dest)   # our own earlier import of this name (dest is in the data cache)
        os.replace(staging, dest)
        fsync_dir(dest.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return meta


def score_files(data: Path, predictions: Path) -> dict[str, Any]:
    """What the official ``evaluate-v1.1.py DATA PREDICTIONS`` prints — ``{"exact_match", "f1"}`` —
    plus the questions counted and answered; the dataset is checked as the import checks it."""
    from dawnbench import squad_eval

    try:
        records = parse_official(read_foreign(data, "data"), Path(data))
        answers = parse_json(read_foreign(predictions, "data"), predictions)
    except DawnbenchError as err:
        raise DataError(str(err)) from None
    if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
        raise DataError(f"{predictions}: expected one JSON object {{\"question id\": \"answer text\", ...}}, as the "
                        "official evaluate-v1.1.py reads it.")
    dataset = [{"paragraphs": [{"qas": [{"id": r["id"], "answers": [{"text": t} for t, _ in r["answers"]]}]}]}
               for r in records]
    result = squad_eval.evaluate(dataset, answers)
    unknown = len(set(answers) - {r["id"] for r in records})
    return {**result, "unknown_ids": unknown, "data": str(data), "predictions": str(predictions)}


# --- what runs read -------------------------------------------------------------------------

def load_questions(folder: Path, split: str) -> list[TrainQuestion]:
    """The split's questions with their answers, in file order (contexts shared, not copied)."""
    path = folder / f"{split}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: the prepared SQuAD file cannot be read ({err}); import again with "
                        "`dawnbench data fetch squad --from DIR --force`.") from None
    contexts = doc["contexts"]
    return [TrainQuestion(qid, question, contexts[c], title, tuple(Answer(t, s) for t, s in answers))
            for qid, title, c, question, answers in doc["questions"]]


def open_split(folder: Path, split: str) -> ListSplit:
    """A scored split: ``predict`` gets :class:`Question` (never the answers); the targets are the gold texts."""
    questions = load_questions(folder, split)
    return ListSplit([Question(q.id, q.question, q.context, q.title) for q in questions],
                     [[a.text for a in q.answers] for q in questions], synthetic_inputs)


def synthetic_inputs(n: int, seed: int) -> list[Question]:
    """``n`` random questions without answers (the warm-up's stand-in for a scored split)."""
    return [Question(q.id, q.question, q.context) for q in synthetic_questions(n, seed)]


# --- the warm-up's stand-in -----------------------------------------------------------------

_WORDS = ("river", "north", "stone", "garden", "market", "winter", "silver", "harbour", "valley", "tower",
          "bridge", "forest", "castle", "island", "meadow", "temple", "lantern", "orchard", "canal", "summit")


def synthetic_questions(count: int, seed: int) -> list[TrainQuestion]:
    """``count`` random questions with answers that point at their context, never the data.
    Contexts come from a pool of 64 (a warm-up needs the shapes, not variety)."""
    rng = random.Random(seed)
    pool = []
    for _ in range(min(64, max(count, 1))):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(80, 200))]
        context = " ".join(words)
        first = rng.randrange(len(words) - 3)
        text = " ".join(words[first:first + rng.randint(1, 3)])
        start = len(" ".join(words[:first])) + (1 if first else 0)
        question = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 12))) + "?"
        pool.append((context, question, Answer(text, start)))
    return [TrainQuestion(f"synthetic-{i}", q, c, "", (a,)) for i, (c, q, a) in
            ((i, pool[i % len(pool)]) for i in range(count))]
