"""The SQuAD metric against the official definition (issue "SQuAD v1.1 to F1 75").

    python benchmarks/squad_metric.py [--questions 20000]

``dawnbench.squad_eval`` is checked, on generated questions and predictions chosen to
hit every rule (articles, ASCII and non-ASCII punctuation, case, repeated tokens, one to
three gold answers, empty normalised strings, missing predictions), against:

1. ``official``: a transcription of ``evaluate-v1.1.py``'s own functions, kept in this
   file as the script states them (normalise = white_space_fix(remove_articles(
   remove_punc(lower(s)))); F1 over ``Counter`` intersections, 0 when nothing is
   common; EM on normalised strings; max over the gold answers; missing = 0; ×100).
   Target: identical to 1e-9 per question and on the totals.
2. ``torchmetrics``: an independent adaptation of the same script (float32 tensors,
   and SQuAD 2.0's rule that two empty strings score F1 1): compared on the questions
   whose normalised prediction and gold answers are not empty, where both rules agree.
"""

from __future__ import annotations

import random
import re
import string
import sys
from collections import Counter

from dawnbench import squad_eval

import bench
import targets


# --- 1. the official script's definition, transcribed --------------------------------------
def official_normalize(s: str) -> str:
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def official_f1(prediction: str, ground_truth: str) -> float:
    prediction_tokens = official_normalize(prediction).split()
    ground_truth_tokens = official_normalize(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def official_em(prediction: str, ground_truth: str) -> bool:
    return official_normalize(prediction) == official_normalize(ground_truth)


def official_evaluate(dataset, predictions) -> dict[str, float]:
    f1 = exact_match = total = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    continue
                ground_truths = [x["text"] for x in qa["answers"]]
                prediction = predictions[qa["id"]]
                exact_match += max(official_em(prediction, g) for g in ground_truths)
                f1 += max(official_f1(prediction, g) for g in ground_truths)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


# --- generated cases -------------------------------------------------------------------------
WORDS = ("the", "a", "an", "The", "Zürich", "river", "rivers", "1847", "Denver", "broncos", "l'été", "l’été",
         "co-op", "U.S.", "théâtre", "an", "anthem", "their", "x", "", "...", "—", "(a)", "naïve", "Ōsaka")


def phrase(rng: random.Random) -> str:
    return rng.choice(("", " ", "\t")).join(rng.choice(WORDS) for _ in range(rng.randint(0, 6)))


def cases(n: int, seed: int = 0) -> tuple[list[dict], dict[str, str]]:
    rng = random.Random(seed)
    qas, predictions = [], {}
    for i in range(n):
        golds = [phrase(rng) for _ in range(rng.randint(1, 3))]
        qas.append({"id": f"q{i}", "answers": [{"text": g} for g in golds]})
        roll = rng.random()
        if roll < 0.05:
            continue                                          # missing prediction
        predictions[f"q{i}"] = rng.choice(golds) if roll < 0.3 else \
            rng.choice(golds) + " " + phrase(rng) if roll < 0.6 else phrase(rng)
    return [{"paragraphs": [{"qas": qas}]}], predictions


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--questions", type=int, default=20000)
    args = parser.parse_args()
    dataset, predictions = cases(args.questions)
    qas = dataset[0]["paragraphs"][0]["qas"]
    worst = 0.0
    for qa in qas:
        golds = [a["text"] for a in qa["answers"]]
        p = predictions.get(qa["id"])
        ours = squad_eval.score_question(p, golds)
        ref = (0.0, 0.0) if p is None else (max(official_f1(p, g) for g in golds), max(official_em(p, g) for g in golds))
        worst = max(worst, abs(ours[0] - ref[0]), abs(ours[1] - ref[1]))
    ours_total, ref_total = squad_eval.evaluate(dataset, predictions), official_evaluate(dataset, predictions)
    total_diff = max(abs(ours_total[k] - ref_total[k]) for k in ("f1", "exact_match"))
    figures = {"questions": len(qas), "missing_predictions": len(qas) - len(predictions),
               "official": {"max_abs_diff_per_question": worst, "max_abs_diff_totals": total_diff,
                            "ours": ours_total, "reference": ref_total,
                            **targets.judged("squad_metric.official", [worst, total_diff])}}
    print(f"{len(qas):,} questions: against the official definition, largest difference {worst:.3g} per question, "
          f"{total_diff:.3g} on the totals (F1 {ours_total['f1']:.4f}, EM {ours_total['exact_match']:.4f})")
    try:
        from torchmetrics.functional.text import squad as tm
    except ImportError:
        figures["torchmetrics"] = "not installed"
    else:
        both = [qa for qa in qas if predictions.get(qa["id"]) is not None
                and squad_eval.normalize(predictions[qa["id"]])
                and all(squad_eval.normalize(a["text"]) for a in qa["answers"])]
        theirs = tm([{"prediction_text": predictions[q["id"]], "id": q["id"]} for q in both],
                    [{"answers": {"answer_start": [0] * len(q["answers"]), "text": [a["text"] for a in q["answers"]]},
                      "id": q["id"]} for q in both])
        ours = squad_eval.evaluate([{"paragraphs": [{"qas": both}]}], predictions)
        diff = max(abs(ours["f1"] - float(theirs["f1"])), abs(ours["exact_match"] - float(theirs["exact_match"])))
        figures["torchmetrics"] = {"questions": len(both), "max_abs_diff_totals": diff}
        print(f"torchmetrics on the {len(both):,} questions with non-empty strings: difference {diff:.3g} "
              "(it computes in float32)")
    bench.store(args, "squad_metric", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
