"""The LaTeX (TikZ) export of an alignment matrix (viz/latex.py): every token spelled in ASCII,
compiled by pdflatex, a matrix that does not fit its tokens refused. ``scripts/setup_latex.sh``
installs pdflatex; ``scripts/test.sh`` sets ATTN_EXPLORER_REQUIRE_LATEX=1, which makes a missing
pdflatex a failure rather than a skip."""
from __future__ import annotations

import io
import os
import shutil
import subprocess

import pytest

from viz.latex import alignment_tex, latex_escape
from helpers.export import pdf_page_size, SOURCE, TARGET, WEIGHTS


def test_latex_escape_spells_every_token_in_ascii():
    assert latex_escape("▁économique") == r"\wordstart{}\'{e}conomique"
    assert latex_escape("50% & $x_1^2 #{}") == r"50\% \& \$x\_1\^{}2 \#\ensuremath{\{}\ensuremath{\}}"
    assert latex_escape("</s> «ça» œuvre") == (r"\ensuremath{<}/s\ensuremath{>} \ensuremath{\ll}\c{c}a\ensuremath{\gg} "
                                              r"\oe{}uvre")
    assert latex_escape("naïve α 中") == r'na\"{\i}ve \ensuremath{\alpha} \texttt{[U+4E2D]}'
    assert all(latex_escape(t).isascii() for t in SOURCE + TARGET + ["ßøł…€", "\x00\u200b"])


@pytest.mark.latex
def test_latex_export_compiles_with_pdflatex(tmp_path):
    """The .tex is a whole document: pdflatex makes one page, cropped to the picture, holding
    every token."""
    pdflatex = shutil.which("pdflatex")
    if not pdflatex:
        if os.environ.get("ATTN_EXPLORER_REQUIRE_LATEX") == "1":
            pytest.fail("pdflatex is not installed: run bash scripts/setup_latex.sh")
        pytest.skip("pdflatex is not installed (bash scripts/setup_latex.sh)")
    tex = alignment_tex(WEIGHTS, SOURCE, TARGET, title="RNNsearch: α_ij")
    assert tex.isascii() and tex.count(r"\fill[fill={rgb,255:") == WEIGHTS.size + 11  # the cells and the colour bar
    (tmp_path / "alignment.tex").write_text(tex, encoding="ascii")
    done = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "alignment.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Warning" not in (tmp_path / "alignment.log").read_text(errors="replace")
    pdf = (tmp_path / "alignment.pdf").read_bytes()
    width, height, pages = pdf_page_size(pdf)
    assert pages == 1 and 100 < width < 400 and 100 < height < 400
    from pypdf import PdfReader
    text = PdfReader(io.BytesIO(pdf)).pages[0].extract_text()
    for word in ("agreement", "europ", "source (English)", "target (French)"):
        assert word in text


def test_latex_export_refuses_a_matrix_that_does_not_fit_its_tokens():
    with pytest.raises(ValueError):
        alignment_tex(WEIGHTS[:, :2], SOURCE, TARGET)
