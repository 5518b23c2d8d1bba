"""The project stands on its own (nothing read from outside the repository), its layers point
down, and every figure it publishes has its evidence stored beside it (SPEC §18)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
TEXT = {".py", ".md", ".toml", ".j2", ".txt", ".cfg", ".yaml", ".yml", ".sh", ""}


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / f for f in out if (ROOT / f).suffix in TEXT and (ROOT / f).is_file()]


def test_no_file_of_the_project_points_outside_the_repository():
    outside = re.compile(r"\.\./shared|parents\[2\]|/work/shared")
    offenders = [f"{f.relative_to(ROOT)}:{i}" for f in tracked_files() if f.name != "test_project.py"
                 for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1) if outside.search(line)]
    assert offenders == []


def test_every_link_in_the_docs_resolves_inside_the_repository():
    broken = []
    for page in [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("third_party/*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # a web address, not a path
            resolved = (page.parent / target).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_the_layers_contract_holds():
    proc = subprocess.run([str(Path(sys.executable).with_name("lint-imports"))], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "4 kept, 0 broken" in proc.stdout   # the layers, the command line kept off the harness, io and distributed,
    # and what reads documents apart from what makes them (both ways)


def test_every_stored_artefact_parses_and_names_its_commit_command_date_and_machine():
    files = sorted((RESULTS / "data").glob("*.json"))
    assert files, "docs/results/data holds the evidence of every published figure"
    for path in files:
        doc = json.loads(path.read_text())
        assert re.fullmatch(r"[0-9a-f]{40}", doc["commit"] or ""), path.name
        assert isinstance(doc["dirty"], bool) and doc["argv"] and doc["date"], path.name
        assert doc["hardware"]["cpu"] and "cpu_flags" in doc["hardware"] and doc["software"]["torch"], path.name
        assert doc["figures"], path.name


def test_every_results_page_quotes_only_stored_files_and_every_file_is_quoted():
    pages = [*sorted(RESULTS.glob("*.md")), ROOT / "README.md"]   # the README's rendered blocks quote evidence too
    named = set()
    for page in pages:
        for name in re.findall(r"data/([\w.-]+\.json)", page.read_text()):
            assert (RESULTS / "data" / name).is_file(), f"{page.name} names {name}, which is not stored"
            named.add(name)
    assert {p.name for p in (RESULTS / "data").glob("*.json")} <= named  # no orphan evidence


def _clean(doc: dict) -> bool:
    return bool(re.fullmatch(r"[0-9a-f]{40}", doc.get("commit") or "")) and doc.get("dirty") is False and \
        bool((doc.get("software") or {}).get("torch"))


def test_a_page_cites_only_evidence_measured_at_a_clean_commit():
    pages = [*sorted(RESULTS.glob("*.md")), ROOT / "README.md"]
    cited = {name for page in pages for name in re.findall(r"data/([\w.-]+\.json)", page.read_text())}
    unclean = {name for name in cited if not _clean(json.loads((RESULTS / "data" / name).read_text()))}
    assert not unclean, f"cited evidence from a tree with changes or none (commit first, then measure): {sorted(unclean)}"


def test_profiles_and_kernels_kept_as_evidence_name_their_commit_tree_and_software():
    machines = RESULTS / "data" / "machines"
    unclean = {str(path.relative_to(machines)) for path in machines.rglob("*.json")
               if not _clean(json.loads(path.read_text()))}
    assert not unclean, f"measured from a tree with changes or none (commit first, then measure): {sorted(unclean)}"


def test_a_benchmark_stores_its_figures_with_what_made_them(tmp_path):
    """``bench.write``, the one door every benchmark's evidence goes through (no other test runs it)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench

    doc = json.loads(bench.write("example", {"x": 1}, out=tmp_path / "example.json").read_text())
    assert doc["benchmark"] == "example" and doc["figures"] == {"x": 1}
    assert doc["date"] and doc["argv"] and doc["hardware"]["cpu"] and doc["software"]["torch"]
    assert doc["dirty"] in (True, False, None) and (doc["commit"] is None or re.fullmatch(r"[0-9a-f]{40}", doc["commit"]))


def test_one_training_core_one_home_for_documents_and_a_thin_command_line():
    """The house's figures (benchmarks/architecture.py) as rules: no module but harness/core.py calls an entry's
    ``warmup`` or ``train`` (an entry's own default warm-up aside), and the command line imports nothing of the
    harness, io or distributed (the import-linter contract allows indirect imports; this counts direct ones); every
    document is declared in records/."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import architecture

    figures = architecture.figures(ROOT)
    assert figures["modules_running_an_entry_step"] == {"harness/core": 2}
    assert figures["cli_imports_of_lower_layers"] == 0
    assert figures["packages_declaring_documents"] == ["records"]      # one home for every document


@pytest.mark.slow   # the prediction fits the kernel model where the user's cache holds none (a minute on 2 cores)
def test_the_architecture_pages_python_example_runs_without_the_command_line(tmp_path, monkeypatch, capsys):
    """docs/architecture.md's "From Python" block, run as written: compare's verdict and a GPU prediction."""
    from bad_inputs import make_run

    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"## From Python.*?```python\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md has no From Python example"
    make_run(tmp_path / "runs" / "baseline" / "seed0")
    mine = make_run(tmp_path / "runs" / "mine" / "seed1")
    record = json.loads((mine / "result.json").read_text())        # another seed, a little faster
    record.update(seed=1, time_to_accuracy_s=2.5, evals=[{**record["evals"][0], "timed_s": 2.5}])
    (mine / "result.json").write_text(json.dumps(record))
    (mine / "epochs.tsv").write_text(f"epoch\thours\ttop1Accuracy\n0.5\t{2.5 / 3600:.9f}\t97.5\n")   # its log says so
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "docs/architecture.md", "exec"), {})   # noqa: S102 — the docs' own example
    printed = capsys.readouterr().out
    assert "speedup of B over A" in printed                 # the verdict line, as compare prints it
    assert "H100-SXM-80GB" in printed and "L4" in printed
