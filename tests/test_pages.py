"""Every published figure true to its evidence, by construction (SPEC §18): each results page and the
README's headline table is what its template renders from the committed JSON, and no template types a
figure into its text."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import pages  # noqa: E402  (benchmarks/pages.py: the renderer the pages are written with)


@pytest.fixture(scope="module")
def rendered() -> dict[Path, str]:
    return pages.rendered()


def test_every_page_and_the_headline_table_are_their_render(rendered):
    differ = pages.differences(rendered)
    assert not differ, ("pages that are not what their evidence renders (run `python benchmarks/pages.py` and "
                        "commit; never edit a page by hand):\n" + "\n".join(differ.values()))


def test_a_figure_changed_by_hand_is_caught(rendered, monkeypatch):
    """The check itself: the committed MNIST page with one figure changed is reported, with the line."""
    page = pages.RESULTS / "mnist.md"
    text = page.read_text()
    assert "**3.76 s**" in text
    edited = {page: text.replace("**3.76 s**", "**3.75 s**")}
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: edited[self] if self in edited else
                        Path.open(self).read())
    differ = pages.differences({page: rendered[page]})
    assert list(differ) == [page] and "-median TTA **3.75 s**" not in differ[page]
    assert "**3.75 s**" in differ[page] and "**3.76 s**" in differ[page]


def test_every_results_page_has_a_template(rendered):
    made = {p for p in rendered if p.parent == pages.RESULTS}
    assert set(pages.RESULTS.glob("*.md")) == made


@pytest.mark.parametrize("template", sorted(pages.TEMPLATES.glob("*.j2")), ids=lambda p: p.name)
def test_no_template_types_a_figure(template):
    assert pages.typed_figures(template) == []


def test_the_typed_figure_check_sees_figures_and_lets_expressions_and_code_be(tmp_path):
    template = tmp_path / "t.md.j2"
    template.write_text("TTA {{ x|s }} in `--max-seconds 60`, see [a](data/a-1.5.json); issue 40, seed 0, Table 6;\n"
                        "median 3.76 s, 12 %, 1.55×, 2,366 questions, 5/5 reached, ≤ 1.02 target\n"
                        "tried about 130 and found 27, batch 512, 8; a 2-core CPU, exit 2, wave 5\n"
                        "The finding holds in part; it is reversed. (met) {{ 'met' if ok }}\n")
    assert pages.typed_figures(template) == ["2: 3.76", "2: 12 %", "2: 1.55", "2: 2,366", "2: 5/5", "2: 1.02", "3: 130",
                                             "3: 27", "3: 512", "3: 8", "4: finding holds in part", "4: it is reversed",
                                             "4: (met)", "4: 'met'"]


def test_the_check_sees_a_typed_verdict_and_a_figure_inside_an_expression(tmp_path):
    """A verdict typed as text or as a string of an expression, and a threshold written into an expression, are
    reported; formatting digits, indexes, per cent, a unit's scale and the one rule's ``verdict(...)`` are not."""
    template = tmp_path / "t.md.j2"
    template.write_text("Every target was met. All targets met; the pairs: not resolvable here, not resolved\n"
                        "{{ \"met\" if x <= 0.25 else \"missed\" }}{% set need = {\"s\": 3.0} %}"
                        "{{ \"missed: \" ~ n ~ \" steps ran slower\" }}\n"
                        "{{ x|fmt(\".2f\") }} {{ x|s(1) }} {{ x|pct(0) }} {{ x|times(1) }} {{ rows[1].a[:3] }}"
                        " {{ \"%+.1f\"|format(100 * x) }} {{ (b / 2**30)|num(2) }} {{ (f / 1e9)|num }} {{ r - 1 }}"
                        " {{ verdict(\"harness_overhead.pair_ratio\", x, lo, hi) }} {{ target(\"tracker_cost.share\").text }}\n"
                        "the machine met first; a dispatch mode met autocast badly; the missing folder\n")
    assert pages.typed_figures(template) == ["1: Every target was met", "1: All targets met", "1: not resolvable",
                                             "1: not resolved", "2: 'met'", "2: 0.25", "2: 'missed'", "2: 3.0",
                                             "2: 'missed: '"]


def test_every_headline_row_with_a_target_carries_a_verdict(rendered):
    """The README's headline table: a row whose target cell holds a target has the one rule's verdict beside its
    figure (met, missed, not resolved, not measured)."""
    readme = rendered[pages.README]
    table = readme[readme.index(pages.markers("headline")[0]):readme.index(pages.markers("headline")[1])]
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ") and not line.startswith("| figure")]
    assert len(rows) > 10
    for cells in rows:
        figure, value, target = cells[0], cells[1], cells[2]
        if target != "—":
            assert any(f"({word}" in value or f": {word}" in value
                       for word in ("met", "missed", "not resolved", "not measured")), figure


def test_where_the_rule_and_a_stored_met_disagree_the_page_says_so_and_nowhere_else(rendered):
    """Evidence judged when it was measured stores its own ``met``; a page passes it beside the figure the rule
    judges, and says so where the two differ. They differ only where the rule knows more: the spread of pairs,
    and a verdict whose figures the evidence does not keep."""
    said = {(path.name, line.split(" — ")[0][:60]) for path, text in rendered.items() for line in text.splitlines()
            if "its evidence stored `met:" in line}
    assert {page for page, _ in said} <= {"README.md", "overheads.md", "system.md", "scaling.md"}, said
    notes = [line for text in rendered.values() for line in text.splitlines() if "its evidence stored `met:" in line]
    assert all("judged without the spread" in line or "but not the figures it judged" in line for line in notes), notes


def _loaded(template: Path) -> dict[str, str]:
    """A template's evidence documents: the name it binds each to, and the file."""
    return dict(re.findall(r'set (\w+) = evidence\("([^"]+)"\)', template.read_text()))


# The README's headline table and its card excerpt point to a results page; the page names the file and its commit.
POINTERS = ("headline.md.j2", "card.md.j2")


@pytest.mark.parametrize("template", [t for t in sorted(pages.TEMPLATES.glob("*.j2")) if t.name not in POINTERS],
                         ids=lambda p: p.name)
def test_every_section_names_its_evidence_file_and_commit(template):
    text = template.read_text()
    unnamed = [f"{name} ({file})" for name, file in _loaded(template).items()
               if not (re.search(rf"\b{name}\|link\b", text) and re.search(rf"\b{name}\|commit\b", text))]
    assert not unnamed, f"{template.name} uses evidence without linking it and naming its commit: {unnamed}"


def test_the_headline_table_cites_only_evidence_a_page_names():
    named = {file for t in pages.TEMPLATES.glob("*.j2") if t.name not in POINTERS for file in _loaded(t).values()}
    cited = {file for name in POINTERS for file in _loaded(pages.TEMPLATES / name).values()}
    assert not cited - named, f"headline figures whose evidence no results page links: {sorted(cited - named)}"
