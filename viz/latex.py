"""An alignment matrix as a LaTeX file: a TikZ grid that ``pdflatex`` compiles on its own.

Row i is α_i, the weights of target token y_i over the source tokens (Bahdanau et al. 2014,
eq. 6); each cell is filled with α_ij's colour on the app's one scale (0–1, Cividis, as
``viz.heatmap`` draws it), the source tokens label the columns on top (turned upright, as in
the paper's Figure 3), the target tokens the rows, and a colour bar gives the scale.

The file is plain ASCII, so it compiles under any input and font encoding: LaTeX's special
characters are escaped, an accented letter is written as its accent command (``é`` → ``\\'{e}``),
the word-start mark ``▁`` of SentencePiece as a small raised bar (``\\wordstart``), and a
character with no LaTeX spelling here as its code point (``[U+4E2D]``). It needs TikZ only
(``texlive-pictures``), and crops its page to the picture itself with pdfTeX's page size, so
it needs no ``standalone`` class either.
"""
from __future__ import annotations

import functools
import unicodedata

import numpy as np
from plotly.colors import sample_colorscale

from .heatmap import ALPHA_SCALE

# LaTeX's specials, and the ASCII a text font of the default (OT1) encoding has no glyph for
SPECIAL = {"\\": r"\ensuremath{\backslash}", "{": r"\ensuremath{\{}", "}": r"\ensuremath{\}}", "#": r"\#", "$": r"\$", "%": r"\%",
           "&": r"\&", "_": r"\_", "^": r"\^{}", "~": r"\~{}", "<": r"\ensuremath{<}", ">": r"\ensuremath{>}",
           "|": r"\ensuremath{|}", '"': r"{\ttfamily\char34}"}
ACCENTS = {"\u0301": "'", "\u0300": "`", "\u0302": "^", "\u0308": '"', "\u0303": "~", "\u0327": "c", "\u0304": "=",
           "\u0306": "u", "\u030c": "v", "\u030a": "r", "\u0328": "k", "\u0307": "."}
LETTERS = {"▁": r"\wordstart{}", "œ": r"\oe{}", "Œ": r"\OE{}", "æ": r"\ae{}", "Æ": r"\AE{}", "ß": r"\ss{}",
           "ø": r"\o{}", "Ø": r"\O{}", "ł": r"\l{}", "Ł": r"\L{}", "ı": r"\i{}",
           "«": r"\ensuremath{\ll}", "»": r"\ensuremath{\gg}",
           "‘": "`", "’": "'", "“": "``", "”": "''", "–": "--", "—": "---", "…": r"\ldots{}", "€": "EUR",
           "°": r"\ensuremath{^\circ}", "\u00a0": "~", "\u202f": r"\,"}
CELL_MM = 5  # one α cell, in millimetres


def latex_escape(text: str) -> str:
    """``text`` as pure-ASCII LaTeX that prints it (see the module's docstring)."""
    out = []
    for ch in str(text):
        if ch in SPECIAL:
            out.append(SPECIAL[ch])
        elif ch in LETTERS:
            out.append(LETTERS[ch])
        elif " " <= ch <= "~":
            out.append(ch)
        elif ch.isspace():
            out.append(" ")
        else:
            out.append(_accented(ch))
    return "".join(out)


def _accented(ch: str) -> str:
    """A letter with accents as LaTeX's accent commands; anything else as its code point."""
    base, *marks = unicodedata.normalize("NFD", ch)
    if " " <= base <= "~" and base.isalpha() and marks and all(m in ACCENTS for m in marks):
        letter = r"\i" if base == "i" else base  # the dotless i under an accent, as LaTeX prints it
        for mark in marks:
            letter = f"\\{ACCENTS[mark]}{{{letter}}}"
        return letter
    name = unicodedata.name(ch, "")
    if name.startswith("GREEK SMALL LETTER ") and name.split()[-1].isalpha() and len(name.split()) == 4:
        return rf"\ensuremath{{\{name.split()[-1].lower()}}}"  # α -> $\alpha$
    if unicodedata.category(ch).startswith("C"):
        return ""  # control and format characters print nothing
    return rf"\texttt{{[U+{ord(ch):04X}]}}"


def _rgb(values: np.ndarray) -> list[str]:
    """xcolor's ``{rgb,255:red,R;green,G;blue,B}`` of each α on the app's colour scale (α to
    three decimals, as the heatmap's hover shows it)."""
    palette = _palette()
    return [palette[k] for k in np.rint(np.clip(np.asarray(values, dtype=float), 0.0, 1.0) * 1000).astype(int)]


@functools.lru_cache(maxsize=1)
def _palette() -> tuple[str, ...]:
    """The colour scale at α = 0.000, 0.001, …, 1.000, computed once."""
    out = []
    for c in sample_colorscale(ALPHA_SCALE, np.linspace(0.0, 1.0, 1001).tolist()):
        r, g, b = (round(float(x)) for x in c[c.index("(") + 1:-1].split(","))
        out.append(f"{{rgb,255:red,{r};green,{g};blue,{b}}}")
    return tuple(out)


def alignment_tex(weights: np.ndarray, source_tokens: list[str], target_tokens: list[str],
                  title: str | None = None, target_language: str = "French") -> str:
    """The alignment matrix (T x S) as a complete LaTeX document (see the module's docstring)."""
    weights = np.asarray(weights, dtype=float)
    T, S = weights.shape
    if (T, S) != (len(target_tokens), len(source_tokens)):
        raise ValueError(f"weights are {weights.shape}, tokens {len(target_tokens)} x {len(source_tokens)}")
    fills = _rgb(weights.ravel())
    cells = [rf"\fill[fill={fills[i * S + j]}] ({j},{-i}) rectangle +(0.95,-0.95);" for i in range(T) for j in range(S)]
    columns = [rf"\node[rotate=90, anchor=west] at ({j + 0.475},0.1) {{{latex_escape(t)}}};"
               for j, t in enumerate(source_tokens)]
    rows = [rf"\node[anchor=east] at (-0.15,{-i - 0.475}) {{{latex_escape(t)}}};" for i, t in enumerate(target_tokens)]
    steps = np.linspace(0, 1, 11)
    bar = [rf"\fill[fill={c}] ({S + 0.6},{-T + T * k / 11:.4f}) rectangle +(0.6,{T / 11:.4f});"
           for k, c in enumerate(_rgb(steps))]
    bar += [rf"\node[anchor=west, font=\scriptsize] at ({S + 1.25},{-T + T * (k + 0.5) / 11:.4f}) {{{v:g}}};"
            for k, v in enumerate(steps) if k in (0, 5, 10)]
    bar.append(rf"\node[anchor=south] at ({S + 0.9},0.1) {{$\alpha$}};")
    head = [rf"\node[anchor=south west, font=\sffamily\bfseries] at (-0.15,{_top(source_tokens) + 1.2:.2f}) "
            rf"{{{latex_escape(title)}}};"] if title else []
    axes = [rf"\node[anchor=south] at ({S / 2:.2f},{_top(source_tokens) + 0.2:.2f}) {{source (English)}};",
            rf"\node[rotate=90, anchor=south] at ({-0.45 - 0.36 * _longest(target_tokens):.2f},{-T / 2:.2f}) "
            rf"{{target ({latex_escape(target_language)})}};"]
    body = "\n    ".join(head + cells + columns + rows + bar + axes)
    return TEMPLATE.replace("%BODY%", body).replace("%CELL%", str(CELL_MM)).replace(
        "%WHAT%", latex_escape(title or "alignment matrix"))


def _longest(tokens: list[str]) -> int:
    return max((len(t) for t in tokens), default=1)


def _top(source_tokens: list[str]) -> float:
    """Where the upright source labels end, in cells (a rough 0.36 cell per character)."""
    return 0.3 + 0.36 * _longest(source_tokens)


TEMPLATE = r"""% %WHAT%: alignment weights alpha_ij (row i: target token, column j: source token),
% written by Attention Explorer (viz/latex.py). Compile with: pdflatex FILE.tex
\documentclass{article}
\usepackage{tikz}
\newcommand{\wordstart}{\rule[-0.1ex]{0.45em}{0.35ex}\kern0.05em}  % SentencePiece's word-start mark
\pagestyle{empty}
\setlength{\parindent}{0pt}
\newsavebox{\alignmentbox}
\begin{document}
\begin{lrbox}{\alignmentbox}
\begin{tikzpicture}[x=%CELL%mm, y=%CELL%mm, font=\sffamily\small, inner sep=1pt]
    %BODY%
    \path (current bounding box.south west) ++(-2mm,-2mm) (current bounding box.north east) ++(2mm,2mm);
\end{tikzpicture}
\end{lrbox}
% the page is the picture: no margins, no standalone class needed (pdfTeX)
\pdfpagewidth=\wd\alignmentbox \pdfpageheight=\ht\alignmentbox
\hoffset=-1in \voffset=-1in
\shipout\copy\alignmentbox
\end{document}
"""
