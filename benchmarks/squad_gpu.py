"""squad-minilm on a GPU (issue "SQuAD v1.1 to F1 75"): training rate, projected epoch, batch-1 latency.

    python benchmarks/squad_gpu.py [--batch 64] [--compile]

In one sitting, on one GPU, with squad-minilm's network (MiniLM-L6 + span head) and
settings (384-token windows, stride 128):

1. **training**: sequences of 384 tokens per second of the full step (forward, span
   loss, backward, AdamW), bf16 autocast, on real windows of a generated set; and the
   **projected** epoch of SQuAD v1.1's 88,524 training features at that rate (a
   projection: the rate times the count, labelled as such).
2. **batch-1 latency per question**: tokenise → forward → best span → string, one dev
   question at a time, as ``dawnbench infer`` times it: p50, p90, p99 over the questions.

Targets (one H100, bf16): ``squad_gpu.rate``, ``squad_gpu.epoch`` and ``squad_gpu.latency`` in ``targets.json``,
each with its moonshot. Without CUDA the script says so and exits 0, storing nothing;
``--device cpu`` runs it at toy sizes to check the script itself.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from dawnbench.data import squad
from dawnbench.data.squad import generate
from dawnbench.entries import spans
from dawnbench.entries.squad_minilm import HPARAMS, SpanModel, load_tokenizer, span_loss

import bench
import targets

TRAIN_FEATURES = 88_524


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=5.0, help="timed training steps: at least this long")
    parser.add_argument("--questions", type=int, default=300, help="dev questions timed at batch 1")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: the GPU rows stay unmeasured; nothing stored.")
        return 0
    device = torch.device(args.device)
    toy = device.type == "cpu"
    batch, seconds, count = (4, 0.5, 5) if toy else (args.batch, args.seconds, args.questions)
    max_length, stride = HPARAMS["max_length"], HPARAMS["stride"]
    with tempfile.TemporaryDirectory() as tmp:
        files = generate.write_set(Path(tmp) / "f", articles=60, dev_articles=30)
        squad.import_files(files, Path(tmp) / "squad@bench", subset="bench")
        train = squad.load_questions(Path(tmp) / "squad@bench", "train")
        dev = squad.open_split(Path(tmp) / "squad@bench", "dev").inputs[:count]
    tokenizer = load_tokenizer()
    features, starts, ends = spans.train_features(tokenizer, train, max_length, stride)
    model = SpanModel().to(device)
    forward = torch.compile(model) if args.compile else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    tensors = [t.to(device) for t in (features.input_ids, features.attention_mask, features.token_type_ids,
                                      starts, ends)]

    def step(i: int) -> None:
        idx = torch.arange(i * batch, (i + 1) * batch, device=device) % len(features)
        ids, mask, types, s, e = (t[idx] for t in tensors)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            a, b = forward(ids, mask, types)
        loss = span_loss(a, b, s, e)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    for i in range(3):                               # autotuning, compilation
        step(i)
    counter = iter(range(10**9))
    measured = bench.rate(lambda: step(next(counter)), items=batch, device=device, min_run_time=seconds)
    rate = measured["per_s"]

    model.eval()
    latencies = []
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16):
        for k, q in enumerate([dev[0]] * 3 + list(dev)):
            t0 = time.perf_counter()
            f = spans.windows(tokenizer, [q], max_length, stride)
            a, b = model(f.input_ids.to(device), f.attention_mask.to(device), f.token_type_ids.to(device))
            spans.best_answers(a, b, f, [q], HPARAMS["n_best"], HPARAMS["max_answer"])   # .cpu(): synchronises
            if k >= 3:
                latencies.append((time.perf_counter() - t0) * 1e3)
    figures = {"batch": batch, "compile": args.compile, "precision": "bf16", "max_length": max_length,
               "sequences_per_s": rate, "sequences_per_s_spread": measured,
               "projected_epoch_s": {"value": TRAIN_FEATURES / rate,
                                     "label": "projection: 88,524 features / the measured rate"},
               "latency_p50_ms": float(np.percentile(latencies, 50)),
               "latency_p90_ms": float(np.percentile(latencies, 90)),
               "latency_p99_ms": float(np.percentile(latencies, 99)), "questions": len(latencies)}
    print(f"training {rate:,.0f} sequences/s (projected epoch {TRAIN_FEATURES / rate:,.1f} s); batch-1 latency "
          f"p50 {figures['latency_p50_ms']:.2f} ms, p99 {figures['latency_p99_ms']:.2f} ms")
    if not toy:
        figures["targets"] = {"sequences_per_s": targets.judged("squad_gpu.rate", rate),
                              "epoch_s": targets.judged("squad_gpu.epoch", TRAIN_FEATURES / rate),
                              "latency_p50_ms": targets.judged("squad_gpu.latency", figures["latency_p50_ms"])}
        bench.store(args, "squad_gpu", figures, device=device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
