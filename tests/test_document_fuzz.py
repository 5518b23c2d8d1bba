"""Every document dawnbench reads, mutated field by field and cell by cell, through every command that reads it
(tests/document_fuzz.py): an answer the rule allows or a one-paragraph refusal naming the file — never a
traceback, never a hang. A fixed sample here (every kind and command among it); more in the slow tier
(``DAWNBENCH_DOCUMENT_FUZZ`` cases); all of them with their counts: benchmarks/document_fuzz.py."""

from __future__ import annotations

import os

import pytest

import document_fuzz as fuzz

FAST, SLOW = 40, int(os.environ.get("DAWNBENCH_DOCUMENT_FUZZ", "400"))


def _check(tmp_path, budget: int, seed: int) -> None:
    cases = fuzz.sample(fuzz.cases(tmp_path / "bases"), budget, seed)
    wrong = []
    for i, (case, build) in enumerate(cases):
        why = fuzz.run_case(case, build, tmp_path / f"case{i}")
        if why:
            wrong.append(f"{case.id}: {why}")
    assert not wrong, f"{len(wrong)} of {len(cases)} cases answered outside the rule:\n" + "\n".join(wrong[:20])


def test_a_sample_of_hostile_documents_gets_an_answer_the_rule_allows(tmp_path):
    _check(tmp_path, FAST, seed=0)


@pytest.mark.slow
def test_many_hostile_documents_get_an_answer_the_rule_allows(tmp_path):
    _check(tmp_path, SLOW, seed=1)
