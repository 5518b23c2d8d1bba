"""A generated SQuAD v1.1 set for tests: the official JSON format, learnable by a small model.

    python -m dawnbench.data.squad.generate OUT [--articles 40] [--dev-articles 10] [--filler 6] [--seed 0]

writes ``OUT/train-v1.1.json`` and ``OUT/dev-v1.1.json``. Each article is about invented
places and people (names with non-ASCII letters: Zürich-like, Ōsaka-like), its paragraphs
state facts in a few sentence templates, and each fact gives a question whose answer is
a span of the paragraph: one to three gold answers per question (the name, and shorter or
longer variants, each with its correct ``answer_start``). Some paragraphs are padded with
filler sentences so they need several windows, and some questions ("What is the motto
of …?") have answers of 40–70 words — longer than a stride, so a window holds the answer
only in part. Train and dev use different names: a model has to learn to read, not to
remember.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

_SYLLABLES = ("ka", "lo", "mi", "ren", "tha", "vo", "zu", "bri", "del", "qua", "sor", "fen", "ü", "ō", "é", "ña")
_THINGS = ("copper bells", "salt bread", "glass bridges", "river festivals", "blue tiles", "night markets",
           "stone lions", "paper boats", "orange groves", "wind towers")
_FILLER = ("Travellers often remark on the weather, which changes quickly in every season.",
           "Many of the older buildings were rebuilt after a long period of neglect.",
           "Local historians disagree about the details of these early events.",
           "The surrounding region is known for its gentle hills and narrow roads.",
           "Several museums keep records of the period in their archives.")
_MOTTO_WORDS = ("always", "forward", "together", "with", "courage", "and", "patience", "under", "open", "skies",
                "we", "build", "remember", "honour", "the", "river", "stone", "light", "of", "every", "morning")


def _name(rng: random.Random, parts: int = 2) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts + rng.randint(0, 1))).capitalize()


class _Paragraph:
    """A context built sentence by sentence, remembering where each answer starts."""

    def __init__(self) -> None:
        self.text = ""
        self.qas: list[dict[str, Any]] = []

    def add(self, sentence: str) -> int:
        """Append ``sentence``; return its offset."""
        if self.text:
            self.text += " "
        offset = len(self.text)
        self.text += sentence
        return offset

    def fact(self, template: str, question: str, answers: list[str], qid: str, **fields: str) -> None:
        """``template`` with its ``{answer}`` field filled by ``answers[0]``; every answer is a span of it."""
        sentence = template.format(answer=answers[0], **fields)
        offset = self.add(sentence)
        golds = []
        for ans in answers:
            start = offset + sentence.index(ans)
            golds.append({"text": ans, "answer_start": start})
        self.qas.append({"id": qid, "question": question.format(**fields), "answers": golds})


def _article(rng: random.Random, prefix: str, number: int, paragraphs: int, filler: int) -> dict[str, Any]:
    place = _name(rng, 2) + rng.choice(("ia", "burg", "ville", "holm"))
    out = []
    for p in range(paragraphs):
        para, qid = _Paragraph(), f"{prefix}{number:04d}{p:02d}"
        founder, city, year = f"{_name(rng)} {_name(rng, 3)}", _name(rng, 2), str(rng.randint(1100, 1990))
        person, thing, river = f"{_name(rng)} {_name(rng, 3)}", rng.choice(_THINGS), _name(rng, 2)
        para.fact("The town of {city} in {place} was founded in {answer} by {founder}.",
                  "When was {city} founded?", [year, f"in {year}"], qid + "a", city=city, place=place, founder=founder)
        para.fact("Its first mayor was {answer}, who had come from the coast.", "Who was the first mayor of {city}?",
                  [person, person.split()[1]], qid + "b", city=city)
        for _ in range(rng.randint(0, filler)):       # filler: some contexts need several windows
            para.add(rng.choice(_FILLER))
        para.fact("{city} is famous for its {answer}.", "What is {city} famous for?", [thing, f"its {thing}"],
                  qid + "c", city=city)
        para.fact("The river that runs through {city} is called the {answer}.", "Which river runs through {city}?",
                  [river, f"the {river}", f"called the {river}"], qid + "d", city=city)
        if rng.random() < 0.15:                       # an answer longer than a stride window
            motto = " ".join(rng.choice(_MOTTO_WORDS) for _ in range(rng.randint(40, 70)))
            para.fact("The motto of {city} is {answer}.", "What is the motto of {city}?", [motto], qid + "e",
                      city=city)
        out.append({"context": para.text, "qas": para.qas})
    return {"title": place, "paragraphs": out}


def write_set(out: Path, articles: int = 40, dev_articles: int = 10, paragraphs: int = 3, filler: int = 6,
              seed: int = 0) -> Path:
    """Write ``train-v1.1.json`` and ``dev-v1.1.json`` into ``out``; returns ``out``. ``filler``: at most
    this many filler sentences per paragraph (0: short contexts, for the quickest tests)."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    for name, prefix, count in (("train-v1.1.json", "t", articles), ("dev-v1.1.json", "d", dev_articles)):
        doc = {"version": "1.1", "data": [_article(rng, prefix, n, paragraphs, filler) for n in range(count)]}
        (out / name).write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--articles", type=int, default=40)
    parser.add_argument("--dev-articles", type=int, default=10)
    parser.add_argument("--paragraphs", type=int, default=3)
    parser.add_argument("--filler", type=int, default=6, help="at most this many filler sentences per paragraph")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    write_set(args.out, args.articles, args.dev_articles, args.paragraphs, args.filler, args.seed)
    print(f"wrote {args.out}/train-v1.1.json and dev-v1.1.json")


if __name__ == "__main__":
    main()
