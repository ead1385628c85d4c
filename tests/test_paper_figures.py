"""The paper's figures command (python -m viz.paper_figures): every file written, the same
twice, on the app's own sentences."""
from __future__ import annotations

import pytest

from viz.export import CHROMIUM, export_unavailable, SIZES
from helpers.cli import run
from helpers.export import HAS_BROWSER, pdf_page_size, svg_texts


@pytest.mark.slow
def test_figures_command_writes_every_file_the_same_way_twice(tiny_zoo, tmp_path):
    """The paper's figures from checkpoints (the suite's tiny ones: the command is the same)
    and the shipped results: 7 figures × PDF, SVG, PNG and figures.md; every alignment's SVG
    holds its source words as text; a second run writes the same SVGs."""
    from conftest import ROOT
    from viz.paper_figures import FIG3, SENTENCE
    if not HAS_BROWSER:
        pytest.skip(export_unavailable(CHROMIUM))

    def figures(out, *extra):
        run("-m", "viz.paper_figures", "--out", str(out), "--checkpoints", str(tiny_zoo), "--results",
            str(ROOT / "results"), *extra)
        return out

    first = figures(tmp_path / "first")
    names = ["fig2-bleu-by-length", "fig3a-rnnsearch", "fig3b-rnnsearch", "fig3c-rnnsearch", "fig3d-rnnsearch",
             "bahdanau-vs-luong", "luong-to-transformer"]
    assert sorted(p.name for p in first.iterdir()) == sorted(
        [f"{n}.{f}" for n in names for f in ("pdf", "svg", "png")] + ["figures.md"])
    for letter, sentence in FIG3.items():
        texts = svg_texts((first / f"fig3{letter}-rnnsearch.svg").read_bytes())
        assert set(sentence.split()) <= set(texts), letter
    assert set(SENTENCE.split()) <= set(svg_texts((first / "bahdanau-vs-luong.svg").read_bytes()))
    from model.figure_records import records
    (transformer,) = records(tiny_zoo, [("transformer", SENTENCE)])  # what the grid's axes should read
    layers, heads = len(transformer["attention_heads"]), len(transformer["attention_heads"][0])
    grid = svg_texts((first / "luong-to-transformer.svg").read_bytes())
    assert set(transformer["source_tokens"]) <= set(grid) and f"L{layers} · H{heads}" in grid
    assert "RNNenc (no attention)" in svg_texts((first / "fig2-bleu-by-length.svg").read_bytes())
    width, _, pages = pdf_page_size((first / "fig3a-rnnsearch.pdf").read_bytes())
    assert pages == 1 and width == SIZES["page"].width * 0.75
    index = (first / "figures.md").read_text()
    assert "python -m viz.paper_figures --out DIR" in index and all(f"`{n}`" in index for n in names)
    again = figures(tmp_path / "again", "--formats", "svg")
    for name in names:
        assert (again / f"{name}.svg").read_bytes() == (first / f"{name}.svg").read_bytes(), name
    done = run("-m", "viz.paper_figures", "--out", str(first), check=False)
    assert done.returncode == 2 and "not empty" in done.stderr  # never writes over a folder's files


def test_the_figures_sentences_are_the_apps():
    """The paper's Figure 3 sentences and the landing sentence, as the app lists them."""
    from ui.examples import DEFAULT_SENTENCE, EXAMPLES
    from viz.paper_figures import FIG3, SENTENCE
    assert list(FIG3.values()) == [s for s, e in EXAMPLES.items() if e.domain.startswith("Paper, Fig. 3")]
    assert SENTENCE == DEFAULT_SENTENCE
