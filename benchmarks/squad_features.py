"""SQuAD feature preparation per core (issue "SQuAD v1.1 to F1 75"): tokenise + windows + answer positions.

    python benchmarks/squad_features.py [--articles 300] [--repeats 3]

On a generated set in the official format (``dawnbench.data.squad.generate``), with the
packaged MiniLM tokenizer at squad-minilm's settings (384-token windows, 128-token
stride, offsets on), on one core (``RAYON_NUM_THREADS=1``, one torch thread):

* ``tokenizers`` alone: ``encode_batch`` of the (question, context) pairs — the scale
  the issue quotes;
* the whole preparation, ``entries.spans.train_features``: the same encoding, every
  window's ids, masks and offsets as tensors, and each window's answer token positions.

Judged against ``squad_features.rate`` in ``targets.json`` (its target and moonshot). Best of ``--repeats``.
"""

# ruff: noqa: E402 - the two settings below must be made before tokenizers is imported
from __future__ import annotations

import os

os.environ["RAYON_NUM_THREADS"] = "1"          # before tokenizers starts its thread pool
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import sys
import tempfile
import time
from pathlib import Path

import torch

from dawnbench.data import squad
from dawnbench.data.squad import generate
from dawnbench.entries import spans
from dawnbench.entries.squad_minilm import HPARAMS, load_tokenizer

import bench
import targets


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--articles", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        files = generate.write_set(Path(tmp) / "files", articles=args.articles, dev_articles=1)
        squad.import_files(files, Path(tmp) / "squad@bench", subset="bench")
        questions = squad.load_questions(Path(tmp) / "squad@bench", "train")
    max_length, stride = HPARAMS["max_length"], HPARAMS["stride"]
    tokenizer = spans.configure(load_tokenizer(), max_length, stride)
    pairs = [(q.question, q.context) for q in questions]
    alone = best(lambda: tokenizer.encode_batch(pairs), args.repeats)
    whole = best(lambda: spans.train_features(tokenizer, questions, max_length, stride), args.repeats)
    features, _, _ = spans.train_features(tokenizer, questions, max_length, stride)
    figures = {
        "questions": len(questions), "features": len(features), "max_length": max_length, "stride": stride,
        "mean_context_words": sum(len(q.context.split()) for q in questions) / len(questions),
        "tokenizers_alone_questions_per_s": len(questions) / alone,
        "train_features_questions_per_s": len(questions) / whole,
        **targets.judged("squad_features.rate", len(questions) / whole),
    }
    print(f"{len(questions):,} questions ({figures['mean_context_words']:.0f} context words on average), "
          f"{len(features):,} windows, one core: tokenizers alone {figures['tokenizers_alone_questions_per_s']:,.0f} "
          f"q/s; whole preparation {figures['train_features_questions_per_s']:,.0f} q/s (target {figures['bound']}: "
          f"{figures['verdict']}; moonshot: {figures['moonshot']})")
    bench.store(args, "squad_features", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
