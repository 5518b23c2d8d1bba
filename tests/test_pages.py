"""Every published figure true to its evidence, by construction (SPEC §18): each results page and the
README's headline table is what its template renders from the committed JSON, and no template types a
figure into its text."""

from __future__ import annotations

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
    assert pages.typed_figures(template) == ["2: 3.76", "2: 12 %", "2: 1.55", "2: 2,366", "2: 5/5", "3: 130", "3: 27",
                                             "3: 512", "3: 8", "4: finding holds in part", "4: it is reversed",
                                             "4: (met)"]
