"""squad-drqa: DrQA's Document Reader (Chen et al., "Reading Wikipedia to Answer Open-Domain
Questions", ACL 2017) as DAWNBench's SQuAD entries ran it — the MLPerf characterisation's
host-bound workload.

Evidence and choices:
  * The entries (third_party/dawnbench-entries.tar.xz, SQuAD/train/dawn_drqa_*): hitvoice/DrQA
    at d9081fe, ``python train.py -e 40 -bs 128``; F1 0.757 after 10 epochs (1.01 h) on one
    V100, 0.758 after 10 (1.37 h) on a K80. The characterisation measured it at 49 % CPU and
    20 % GPU on a V100 — the most host-bound workload it ran — because tokenising, tagging and
    building each batch's features happen on the host.
  * The network (hitvoice's defaults): GloVe 840B 300-d word vectors, fixed except the 1000
    most frequent question words (``tune_partial``); for each paragraph word its embedding, an
    attention-weighted question embedding (``SeqAttnMatch``: ReLU(Wx)·ReLU(Wy)), four features
    — exact match of the word, its lower case and its lemma with the question's, and its term
    frequency in the paragraph — and, where a tagger is installed, one-hot POS and NER tags; a
    3-layer bidirectional LSTM (hidden 128, layers concatenated: 768) over the paragraph and
    another over the question, the question merged by self-attention; bilinear start and end
    scores; the span of at most 15 words maximising p_start·p_end. Dropout 0.4 on embeddings
    and on every LSTM layer's input and the output; gradients clipped at norm 10; batch 128.
  * The learning rate: the entries' JSON lists 0.001, but in hitvoice's ``train.py`` that flag
    is "only applied to SGD"; its Adamax is built without one, so it ran at PyTorch's default,
    0.002. That is what is used here.
  * Preprocessing is DrQA's ``prepro.py`` folded into the run, on the host and timed:
    tokenising paragraphs and questions, lemmas, tags, the features, the vocabulary and the
    vectors file read. Tokens come from spaCy when it is installed (``pip install -e '.[drqa]'``:
    its English tokenizer, with lemmas from ``spacy-lookups-data``, and POS/NER from
    ``en_core_web_sm`` only if that pipeline is installed), otherwise from the ``tokenizers``
    BERT pre-tokenizer (whitespace and punctuation) with lower case standing in for lemmas and no
    tags. ``result.json``'s ``entry_facts`` records which, and the seconds spent preprocessing
    and building batches on the host.
  * Departures, each forced or documented: DrQA's vocabulary took words from train and dev; the
    harness never shows an entry the scored split, so here it is the training words the vectors
    file holds (a dev-only word is unknown). Without ``--set vectors=PATH`` (none is reachable
    here) every word vector is learned from scratch — not DrQA's recipe; the entry says so in
    ``entry_facts``. Answers are located by the tokens overlapping the answer's characters (DrQA
    dropped the few whose boundaries split a token).
  * The real run: ``dawnbench run squad --entry squad-drqa --set vectors=glove.840B.300d.txt``
    (docs/squad.md). Measured here on the generated set only (docs/results/characterisation.md).

Sections, in the order things happen: hyperparameters, text, features and vocabulary, model,
batches, the entry (training loop, prediction).
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

from dawnbench.bounds import Bound
from dawnbench.entries.base import Entry, Progress, TrainContext
from dawnbench.entries.vectors import check_vectors_option, normalize, read_vectors
from dawnbench.errors import EntryError
from dawnbench.tasks import Task

# --- hyperparameters (all of them) -----------------------------------------------------
HPARAMS = {
    "epochs": 40,
    "batch_size": 128,
    "lr": 0.002,                 # Adamax at PyTorch's default (see the module docstring)
    "grad_clip": 10.0,
    "hidden": 128,
    "doc_layers": 3,
    "question_layers": 3,
    "dropout_emb": 0.4,
    "dropout_rnn": 0.4,
    "tune_partial": 1000,        # the most frequent question words whose vectors are trained
    "max_len": 15,               # words in an answer
    "vectors": "",               # a GloVe-format file (glove.840B.300d.txt); empty: learn the vectors
    "vector_dim": 300,
    "tokenizer": "prefer-spacy",  # prefer-spacy, spacy or basic
    "evals_per_epoch": 1,
}
PAD, UNK = 0, 1
TOKENIZERS = ("prefer-spacy", "spacy", "basic")


# --- text ------------------------------------------------------------------------------------
@dataclass
class Doc:
    words: list[str]
    spans: list[tuple[int, int]]     # character offsets in the text
    lemmas: list[str]
    tags: list[str]                  # POS; empty without a tagger
    ents: list[str]                  # entity types; empty without a recogniser


class Text:
    """Tokens, lemmas and tags: spaCy as DrQA used it when installed, else a documented stand-in."""

    def __init__(self, choice: str) -> None:
        if choice not in TOKENIZERS:
            raise EntryError(f"--set tokenizer={choice}: expected one of {', '.join(TOKENIZERS)}.")
        have_spacy = importlib.util.find_spec("spacy") is not None
        if choice == "spacy" and not have_spacy:
            raise EntryError("--set tokenizer=spacy: spaCy is not installed. pip install -e '.[drqa]' "
                             "(or --set tokenizer=basic).")
        self.nlp = self._spacy() if have_spacy and choice != "basic" else None
        if self.nlp is None:
            self.facts = {"tokenizer": "basic (tokenizers' BERT pre-tokenizer)", "lemma": "lower case (no lemmatizer)",
                          "pos": False, "ner": False}

    def _spacy(self) -> Any:
        import spacy

        try:   # a trained English pipeline gives POS and NER, as DrQA's `en` model did
            nlp = spacy.load("en_core_web_sm", exclude=["parser"])
            model = f"en_core_web_sm {nlp.meta.get('version', '')}".strip()
        except OSError:
            nlp, model = spacy.blank("en"), None
        lemma = "spaCy rules and tables" if "lemmatizer" in nlp.pipe_names else None
        if lemma is None and importlib.util.find_spec("spacy_lookups_data") is not None:
            nlp.add_pipe("lemmatizer", config={"mode": "lookup"}).initialize()
            lemma = "spaCy lookup tables"
        self.facts = {"tokenizer": f"spaCy {spacy.__version__} English", "model": model,
                      "lemma": lemma or "lower case (spacy-lookups-data not installed)",
                      "pos": "tagger" in nlp.pipe_names, "ner": "ner" in nlp.pipe_names}
        return nlp

    def docs(self, texts: Sequence[str]) -> list[Doc]:
        if self.nlp is None:
            from tokenizers.pre_tokenizers import BertPreTokenizer

            split = BertPreTokenizer()
            out = []
            for text in texts:
                pieces = split.pre_tokenize_str(text)
                out.append(Doc([w for w, _ in pieces], [s for _, s in pieces], [w.lower() for w, _ in pieces], [], []))
            return out
        out = []
        for doc in self.nlp.pipe(texts, batch_size=64):
            tokens = [t for t in doc if not t.is_space]
            out.append(Doc([t.text for t in tokens], [(t.idx, t.idx + len(t.text)) for t in tokens],
                           [(t.lemma_ or t.text).lower() for t in tokens],
                           [t.tag_ for t in tokens] if self.facts["pos"] else [],
                           [t.ent_type_ for t in tokens] if self.facts["ner"] else []))
        return out


# --- features and vocabulary -------------------------------------------------------------------
def features(context: Doc, question: Doc) -> np.ndarray:
    """Per context word: exact match (as written, lower case, lemma) with a question word, and the
    word's term frequency in the context (DrQA's four). len × 4 float32."""
    words, lower, lemmas = set(question.words), {w.lower() for w in question.words}, set(question.lemmas)
    counts = Counter(w.lower() for w in context.words)
    total = max(len(context.words), 1)
    return np.array([[w in words, w.lower() in lower, m in lemmas, counts[w.lower()] / total]
                     for w, m in zip(context.words, context.lemmas)], dtype=np.float32).reshape(-1, 4)


class Vocab:
    """Word indices (0 padding, 1 unknown) in DrQA's order — question words by their frequency in
    questions, then the other words by overall frequency — and tag indices (0 none)."""

    def __init__(self, words: Sequence[str], tags: Sequence[str] = (), ents: Sequence[str] = ()) -> None:
        self.words = {w: i + 2 for i, w in enumerate(words)}
        self.tags = {t: i + 1 for i, t in enumerate(tags)}
        self.ents = {e: i + 1 for i, e in enumerate(ents)}

    @classmethod
    def build(cls, questions: Sequence[Doc], contexts: Sequence[Doc], keep: Any = None) -> Vocab:
        in_questions = Counter(normalize(w) for d in questions for w in d.words)
        overall = Counter(normalize(w) for d in contexts for w in d.words) + in_questions
        order = (sorted(in_questions, key=lambda w: (-in_questions[w], w))
                 + sorted(overall.keys() - in_questions.keys(), key=lambda w: (-overall[w], w)))
        return cls([w for w in order if keep is None or w in keep], sorted({t for d in contexts for t in d.tags}),
                   sorted({e for d in contexts for e in d.ents if e}))

    def ids(self, doc: Doc) -> torch.Tensor:
        return torch.tensor([self.words.get(normalize(w), UNK) for w in doc.words] or [PAD])

    def state(self) -> dict[str, list[str]]:
        return {"words": list(self.words), "tags": list(self.tags), "ents": list(self.ents)}


@dataclass
class Item:
    """One question, ready for batching: everything DrQA's prepro.py stored."""

    context: torch.Tensor            # word ids
    feats: torch.Tensor              # len × 4
    tags: torch.Tensor               # tag ids (empty without a tagger)
    ents: torch.Tensor
    question: torch.Tensor
    start: int = 0                   # answer span in context words (training)
    end: int = 0


# --- model ---------------------------------------------------------------------------------
class StackedBRNN(nn.Module):
    """Bidirectional LSTMs stacked, dropout on each layer's input, every layer's output concatenated.
    Training runs over the padding (DrQA's fast path); evaluation packs the sequences."""

    def __init__(self, size_in: int, hidden: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.dropout = dropout
        self.rnns = nn.ModuleList(nn.LSTM(size_in if i == 0 else 2 * hidden, hidden, batch_first=True,
                                          bidirectional=True) for i in range(layers))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(1).cpu()
        outputs = []
        for rnn in self.rnns:
            x = F.dropout(x, self.dropout, self.training)
            if self.training:
                x = rnn(x)[0]
            else:
                packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
                x = pad_packed_sequence(rnn(packed)[0], batch_first=True, total_length=mask.shape[1])[0]
            outputs.append(x)
        return F.dropout(torch.cat(outputs, -1), self.dropout, self.training)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, log: bool = False) -> torch.Tensor:
    scores = scores.float().masked_fill(~mask, float("-inf"))
    return scores.log_softmax(-1) if log else scores.softmax(-1)


class DocReader(nn.Module):
    def __init__(self, words: int, tuned: int, tags: int, ents: int, hp: dict) -> None:
        super().__init__()
        dim, h, self.drop = hp["vector_dim"], hp["hidden"], hp["dropout_emb"]
        self.tuned = nn.Embedding(tuned, dim, padding_idx=PAD)           # trained: PAD, UNK, frequent words
        self.register_buffer("fixed", torch.zeros(max(words - tuned, 0), dim))  # the rest, as read
        self.tags, self.ents = tags, ents
        self.qemb = nn.Linear(dim, dim)
        self.doc_rnn = StackedBRNN(2 * dim + 4 + tags + ents, h, hp["doc_layers"], hp["dropout_rnn"])
        self.question_rnn = StackedBRNN(dim, h, hp["question_layers"], hp["dropout_rnn"])
        doc_size, q_size = 2 * h * hp["doc_layers"], 2 * h * hp["question_layers"]
        self.self_attn = nn.Linear(q_size, 1)
        self.start, self.end = nn.Linear(q_size, doc_size), nn.Linear(q_size, doc_size)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        n = self.tuned.num_embeddings
        tuned = self.tuned(ids.clamp(max=n - 1))
        if not len(self.fixed):
            return tuned
        fixed = self.fixed[(ids - n).clamp(min=0, max=len(self.fixed) - 1)]
        return torch.where((ids < n)[..., None], tuned, fixed)

    def forward(self, c, c_feats, c_tags, c_ents, c_mask, q, q_mask) -> tuple[torch.Tensor, torch.Tensor]:
        x1 = F.dropout(self.embed(c), self.drop, self.training)
        x2 = F.dropout(self.embed(q), self.drop, self.training)
        p1, p2 = F.relu(self.qemb(x1)), F.relu(self.qemb(x2))             # attention-weighted question
        alpha = masked_softmax(p1 @ p2.transpose(1, 2), q_mask[:, None, :]).to(x2.dtype)
        inputs = [x1, alpha @ x2, c_feats.to(x1.dtype)]
        if self.tags:
            inputs.append(F.one_hot(c_tags, self.tags + 1)[..., 1:].to(x1.dtype))
        if self.ents:
            inputs.append(F.one_hot(c_ents, self.ents + 1)[..., 1:].to(x1.dtype))
        doc = self.doc_rnn(torch.cat(inputs, -1), c_mask)                   # B×T×768
        question = self.question_rnn(x2, q_mask)                            # B×J×768
        weights = masked_softmax(self.self_attn(question).squeeze(-1), q_mask).to(question.dtype)
        merged = (weights[:, None, :] @ question).squeeze(1)                # B×768
        start = (doc @ self.start(merged)[..., None]).squeeze(-1)
        end = (doc @ self.end(merged)[..., None]).squeeze(-1)
        return start, end


def best_spans(start: torch.Tensor, end: torch.Tensor, mask: torch.Tensor, max_len: int) -> tuple[list, list]:
    """Per row the (i, j), i ≤ j < i + max_len, maximising p_start(i) · p_end(j) (DrQA's decoding)."""
    p1, p2 = masked_softmax(start, mask), masked_softmax(end, mask)
    t = p1.shape[1]
    scores = (p1[:, :, None] * p2[:, None, :]).triu().tril(max_len - 1).flatten(1)
    at = scores.argmax(1)
    return (at // t).tolist(), (at % t).tolist()


# --- batches ---------------------------------------------------------------------------------
def collate(items: Sequence[Item], device: torch.device) -> tuple[torch.Tensor, ...]:
    """Pad a batch's items into the model's inputs on the host, then move them (DrQA's BatchGen)."""
    c = pad_sequence([i.context for i in items], batch_first=True)
    q = pad_sequence([i.question for i in items], batch_first=True)
    feats = pad_sequence([i.feats for i in items], batch_first=True)
    tags = pad_sequence([i.tags if len(i.tags) else torch.zeros(len(i.context), dtype=torch.long) for i in items],
                        batch_first=True)
    ents = pad_sequence([i.ents if len(i.ents) else torch.zeros(len(i.context), dtype=torch.long) for i in items],
                        batch_first=True)
    return tuple(t.to(device, non_blocking=True) for t in (c, feats, tags, ents, c != PAD, q, q != PAD))


# --- the entry -------------------------------------------------------------------------------
class SquadDrqa(Entry):
    name = "squad-drqa"
    tasks = ("squad",)
    hparams = HPARAMS
    hparam_bounds = {**Entry.hparam_bounds, "max_len": Bound(1, 1000, integer=True),
                     "vector_dim": Bound(1, 4096, integer=True), "tune_partial": Bound(0, 10_000_000, integer=True),
                     "hidden": Bound(1, 4096, integer=True), "doc_layers": Bound(1, 16, integer=True),
                     "question_layers": Bound(1, 16, integer=True)}
    eval_batch_size = 64
    warmup_steps = 2
    precisions = ("fp32", "tf32", "bf16")

    @classmethod
    def check_hparams(cls, task: Task, overrides: dict[str, Any]) -> None:
        """Also a wrong vectors file, by its first line, before the run starts."""
        super().check_hparams(task, overrides)
        check_vectors_option(overrides, cls.hparams, "vectors", "vector_dim")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.host = {"preprocess_s": 0.0, "batching_s": 0.0}
        self.text_facts: dict[str, Any] = {}
        self.vector_facts: dict[str, Any] = {}

    def make_model(self) -> nn.Module:
        tuned = len(self.vocab.words) + 2 if not self.hp["vectors"] else min(self.hp["tune_partial"] + 2,
                                                                              len(self.vocab.words) + 2)
        return DocReader(len(self.vocab.words) + 2, tuned, len(self.vocab.tags), len(self.vocab.ents), self.hp)

    def item(self, context: Doc, question: Doc) -> Item:
        return Item(self.vocab.ids(context), torch.from_numpy(features(context, question)),
                    torch.tensor([self.vocab.tags.get(t, 0) for t in context.tags], dtype=torch.long),
                    torch.tensor([self.vocab.ents.get(e, 0) for e in context.ents], dtype=torch.long),
                    self.vocab.ids(question))

    def preprocess(self, questions: Sequence, synthetic: bool) -> tuple[list[Item], torch.Tensor | None]:
        """DrQA's prepro.py: tokens, vocabulary, vectors, features and answer spans (on the host)."""
        hp = self.hp
        self.text = Text(hp["tokenizer"])
        unique = list(dict.fromkeys(q.context for q in questions))
        context_docs = dict(zip(unique, self.text.docs(unique)))
        question_docs = self.text.docs([q.question for q in questions])
        contexts = [context_docs[q.context] for q in questions]
        table, keep = None, None
        if hp["vectors"] and not synthetic:   # the warm-up never reads the file: shapes only
            wanted = {normalize(w) for d in (*question_docs, *context_docs.values()) for w in d.words}
            found = read_vectors(hp["vectors"], wanted, hp["vector_dim"], "--set vectors=")
            keep = found.keys()
            self.vector_facts = {"vectors": hp["vectors"], "words_found": len(found), "words_wanted": len(wanted)}
        elif not hp["vectors"]:
            self.vector_facts = {"vectors": None, "note": "no --set vectors=PATH: every word vector learned from "
                                                          "scratch (not DrQA's recipe)"}
        self.vocab = Vocab.build(question_docs, list(context_docs.values()), keep)
        if keep is not None:
            table = torch.zeros(len(self.vocab.words) + 2, hp["vector_dim"])
            for word, i in self.vocab.words.items():
                table[i] = torch.from_numpy(found[word])
        items = []
        for q, context, question in zip(questions, contexts, question_docs):
            a = q.answers[0]
            first, last = a.start, a.start + len(a.text)
            inside = [i for i, (s, e) in enumerate(context.spans) if e > first and s < last]
            if inside:
                item = self.item(context, question)
                item.start, item.end = inside[0], inside[-1]
                items.append(item)
        self.text_facts = {**self.text.facts, "questions": len(questions), "trained_on": len(items)}
        return items, table

    def facts(self) -> dict[str, Any]:
        return {**self.text_facts, **self.vector_facts, **{k: round(v, 3) for k, v in self.host.items()}}

    def train(self, ctx: TrainContext) -> Iterator[Progress]:
        hp, device = self.hp, ctx.device
        questions = ctx.load_train()
        if ctx.synthetic:
            questions = questions[:hp["batch_size"] * (self.warmup_steps + 1)]
        started = time.perf_counter()        # DrQA's preprocessing only: reading the dataset is not part of it
        items, table = self.preprocess(questions, ctx.synthetic)
        self.host["preprocess_s"] = time.perf_counter() - started
        self.model = self.make_model().to(device)
        if table is not None:
            n = self.model.tuned.num_embeddings
            self.model.tuned.weight.data.copy_(table[:n])
            self.model.fixed.copy_(table[n:])
        forward = ctx.compile(ctx.distribute(self.model))
        optimizer = torch.optim.Adamax(self.model.parameters(), lr=hp["lr"])
        n, bs = len(items), hp["batch_size"]
        if n == 0:
            raise EntryError("squad-drqa: no training question has its answer inside its tokenised context.")
        steps_per_epoch = max(1, math.ceil(n / (bs * ctx.world_size)))
        every = max(1, steps_per_epoch // hp["evals_per_epoch"])
        step = samples = 0
        for epoch in range(math.ceil(hp["epochs"])):
            order = ctx.epoch_order(n, epoch).tolist()
            self.model.train()
            for i in range(0, len(order), bs):
                chosen = [items[k] for k in order[i:i + bs]]
                tick = time.perf_counter()
                inputs = collate(chosen, device)
                target_s = torch.tensor([it.start for it in chosen], device=device)
                target_e = torch.tensor([it.end for it in chosen], device=device)
                if device.type == "cuda":    # the copies are asynchronous: the host's share ends when they land
                    torch.cuda.synchronize(device)
                self.host["batching_s"] += time.perf_counter() - tick
                start, end = forward(*inputs)
                mask = inputs[4]
                loss = (F.nll_loss(masked_softmax(start, mask, log=True), target_s)
                        + F.nll_loss(masked_softmax(end, mask, log=True), target_e))
                optimizer.zero_grad(set_to_none=True)
                ctx.scaler.scale(loss).backward()
                ctx.scaler.unscale_(optimizer)
                nn.utils.clip_grad_norm_(self.model.parameters(), hp["grad_clip"])
                ctx.scaler.step(optimizer)
                ctx.scaler.update()
                step, samples = step + 1, samples + len(chosen) * ctx.world_size
                if step % every == 0 or step >= hp["epochs"] * steps_per_epoch:
                    yield Progress(epoch=step / steps_per_epoch, samples=samples, loss=loss.detach())
                if step >= hp["epochs"] * steps_per_epoch:
                    return

    def inference_state(self) -> dict:
        return {"model": self.model.state_dict(), "vocab": self.vocab.state()}

    def load_inference_state(self, state: dict) -> None:
        self.vocab = Vocab(state["vocab"]["words"], state["vocab"]["tags"], state["vocab"]["ents"])
        self.model = self.make_model().to(self.device)
        self.model.load_state_dict(state["model"])
        self.model.eval()

    def predict(self, inputs: Sequence) -> list[str]:
        """The answer string of each question: DrQA's best span of at most ``max_len`` words."""
        if not hasattr(self, "text"):
            self.text = Text(self.hp["tokenizer"])
        self.model.eval()
        unique = list(dict.fromkeys(q.context for q in inputs))
        context_docs = dict(zip(unique, self.text.docs(unique)))
        docs = [context_docs[q.context] for q in inputs]
        items = [self.item(d, qd) for d, qd in zip(docs, self.text.docs([q.question for q in inputs]))]
        batch = collate(items, self.device)
        start, end = self.model(*batch)
        first, last = best_spans(start, end, batch[4], self.hp["max_len"])
        return [q.context[d.spans[s][0]:d.spans[e][1]] if d.spans else "" for q, d, s, e in zip(inputs, docs, first, last)]
