"""Every bad or damaged command line of ``tests/bad_inputs.py``: refused with exit 2 and one paragraph, or
handled (reported, skipped) — never a traceback. ``benchmarks/bad_input.py`` runs the same table as a user
would, one process per case, and counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from dawnbench.cli import main

from bad_inputs import CASES, FRESH_40, ISSUE_40, make_run


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("bad") / "run")


@pytest.mark.parametrize("kind, args_of", [(kind, args_of) for _, kind, args_of in CASES],
                         ids=[case_id for case_id, _, _ in CASES])
def test_a_bad_command_line_gets_a_clear_answer(capsys, tmp_path, monkeypatch, run, kind, args_of):
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))  # nothing may be fetched on the way
    args = [str(a) for a in args_of(tmp_path, run)]
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse
        code = exit_.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if kind == "refused":
        assert code == 2 and err.strip(), args
        assert not (tmp_path / "cache").exists()                    # refused before any data was fetched
    else:
        assert code in (0, 1, 2), args


def test_the_wave_4_lists_name_cases_of_the_table():
    ids = [case_id for case_id, _, _ in CASES]
    assert len(set(ids)) == len(ids)
    assert set(ISSUE_40) <= set(ids) and set(FRESH_40) <= set(ids) and not set(ISSUE_40) & set(FRESH_40)
    assert len(FRESH_40) >= 40
