"""The SQuAD v1.1 metric, exactly as the official ``evaluate-v1.1.py`` defines it.

* **normalise** an answer: lower-case; drop ASCII punctuation (``string.punctuation``);
  replace the words a, an, the (``\\b(a|an|the)\\b``) by a space; collapse whitespace.
* **F1** of a prediction against one gold answer: over the *multiset* of normalised
  tokens, 2·P·R / (P + R) with P = common / predicted tokens, R = common / gold tokens;
  0 when nothing is in common — so an empty normalised prediction scores 0 even against
  an empty gold answer (v1.1's rule; v2.0 scores that pair 1).
* **EM**: 1 where the normalised strings are equal (two empty strings are equal).
* Per question the maximum over its gold answers; a question with no prediction scores
  0 on both and still counts; the set's figure is 100 × the mean over every question.

``benchmarks/squad_metric.py`` checks this module against an independent transcription
and against torchmetrics' SQuAD on generated predictions.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize(text: str) -> str:
    """Lower-case, no ASCII punctuation, no articles, single spaces (the official order of steps)."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def f1(prediction: str, gold: str) -> float:
    predicted, golden = normalize(prediction).split(), normalize(gold).split()
    common = sum((Counter(predicted) & Counter(golden)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(golden)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize(prediction) == normalize(gold))


def score_question(prediction: str | None, golds: Sequence[str]) -> tuple[float, float]:
    """(F1, EM) of one question in 0–1: the best over its gold answers; (0, 0) without a prediction."""
    if prediction is None:
        return 0.0, 0.0
    return max(f1(prediction, g) for g in golds), max(exact_match(prediction, g) for g in golds)


def evaluate(dataset: Sequence[Mapping], predictions: Mapping[str, str]) -> dict[str, float]:
    """``{"exact_match", "f1"}`` (0–100) of ``predictions`` (question id → answer) on the official
    file's ``data`` list, every question counted; plus ``total`` and ``answered``."""
    f1_sum = em_sum = 0.0
    total = answered = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                prediction = predictions.get(qa["id"])
                answered += prediction is not None
                f, e = score_question(prediction, [a["text"] for a in qa["answers"]])
                f1_sum, em_sum = f1_sum + f, em_sum + e
    return {"exact_match": 100.0 * em_sum / total if total else 0.0,
            "f1": 100.0 * f1_sum / total if total else 0.0, "total": total, "answered": answered}
