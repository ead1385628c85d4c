"""The paper's figures for our models, in one command, as PDF, SVG and PNG:

    python -m viz.paper_figures --out DIR [--checkpoints checkpoints] [--results results] [--size page] [--screen]

writes into DIR (a new folder, or an empty one):

- ``fig2-bleu-by-length``: BLEU by source length on newstest2014 for RNNenc and every attention
  model (Bahdanau et al. 2014, Figure 2), from ``results/bleu_by_length.csv``;
- ``fig3a`` … ``fig3d``: RNNsearch's alignments for the paper's four Figure 3 sentences (the first
  is the "European Economic Area" one), in whole words as the paper draws them;
- ``bahdanau-vs-luong``: RNNsearch and Luong general on one sentence, side by side;
- ``luong-to-transformer``: every layer × head of the Transformer's cross-attention on it;
- ``figures.md``: what each shows (with the models' translations) and the command.

The decoding records come from the shipped checkpoints through ``python -m
model.figure_records``, run as a child process: ``viz/`` imports neither torch nor ``model/``,
even here (``tests/test_code_shape.py`` checks it); the child's output is plain JSON (tokens and α).
All figures are drawn in one headless Chromium (``viz.export.render``); decoding is greedy and
deterministic and the SVGs carry no random ids, so the same command writes the same SVGs.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .bleu import bleu_by_length_figure, describe_finding
from .export import CHROMIUM, ExportError, print_ready, render, Size, SIZES
from .fast_figure import figure
from .heatmap import ALPHA_SCALE, alignment_heatmap, escape, FONT_SIZE
from .transformer import head_grid

ROOT = Path(__file__).resolve().parent.parent
# Bahdanau et al. (2014), Figure 3 (a)–(d); the app lists them among its examples too
FIG3 = {"a": "The agreement on the European Economic Area was signed in August 1992.",
        "b": "It should be noted that the marine environment is the least known of environments.",
        "c": "Destruction of the equipment means that Syria can no longer produce new chemical weapons.",
        "d": "This will change my future with my family, the man said."}
SENTENCE = "The European Parliament adopted the new economic policy."  # the app's landing sentence
BAHDANAU, LUONG, TRANSFORMER = "rnnsearch", "luong-general", "transformer"
FORMATS = ("pdf", "svg", "png")
BLEU_SET = "newstest2014"  # the paper's own test set


@dataclass
class Plot:
    """One figure to write: its file name (no extension), the figure, and what it shows."""
    name: str
    figure: go.Figure
    what: str


def decode(checkpoints: Path, jobs: list[tuple[str, str]]) -> tuple[list[dict], dict[str, str]]:
    """Greedy records of (model, sentence) pairs from ``python -m model.figure_records`` in a
    child process, and the models' display names."""
    done = subprocess.run([sys.executable, "-m", "model.figure_records", "--checkpoints", str(checkpoints),
                           *[f"{m}={t}" for m, t in jobs]], cwd=ROOT, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"error: decoding failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}")
    out = json.loads(done.stdout)
    return out["records"], out["display_names"]


def alignment_pair(left: dict, right: dict, left_title: str, right_title: str) -> go.Figure:
    """Two models' word alignments for one sentence side by side, on the one α scale."""
    data, layout = [], dict(font=dict(size=FONT_SIZE), plot_bgcolor="white", height=600,
                            margin=dict(l=10, r=10, t=190, b=10))
    for k, (words, title) in enumerate(((left, left_title), (right, right_title))):
        axis = "" if k == 0 else "2"
        weights = np.asarray(words["weights"], dtype=float)
        data.append(dict(type="heatmap", z=weights, xaxis=f"x{axis}", yaxis=f"y{axis}", zmin=0.0, zmax=1.0,
                         colorscale=ALPHA_SCALE, showscale=k == 1, xgap=1, ygap=1,
                         colorbar=dict(title=dict(text="α"), thickness=14)))
        domain = [0.0, 0.4] if k == 0 else [0.58, 0.94]  # room for the right panel's own target words
        layout[f"xaxis{axis}"] = dict(domain=domain, anchor=f"y{axis}", side="top", tickangle=-60, showgrid=False,
                                      title=dict(text=escape(title), font=dict(size=FONT_SIZE + 2)),
                                      tickmode="array", tickvals=list(range(weights.shape[1])),
                                      ticktext=[escape(t) for t in words["source"]])
        layout[f"yaxis{axis}"] = dict(anchor=f"x{axis}", autorange="reversed", showgrid=False, tickmode="array",
                                      tickvals=list(range(weights.shape[0])),
                                      ticktext=[escape(t) for t in words["target"]])
    return figure(data, layout)


def labelled_grid(record: dict) -> go.Figure:
    """The Transformer's heads (``viz.transformer.head_grid``) with the tokens written on the
    bottom row's and the first column's axes, so a printed grid can be read on its own."""
    heads = np.asarray(record["attention_heads"], dtype=float)  # layers x heads x T x S
    L, H, T, S = heads.shape
    spec = head_grid(heads, record["source_tokens"], record["target_tokens"], cell=260).to_dict()
    layout = spec["layout"]
    for layer in range(L):
        for head in range(H):
            n = layer * H + head + 1
            axis = "" if n == 1 else str(n)
            if layer == L - 1:
                layout[f"xaxis{axis}"].update(showticklabels=True, tickmode="array", tickvals=list(range(S)),
                                              ticktext=[escape(t) for t in record["source_tokens"]], tickangle=-90)
            if head == 0:
                layout[f"yaxis{axis}"].update(showticklabels=True, tickmode="array", tickvals=list(range(T)),
                                              ticktext=[escape(t) for t in record["target_tokens"]])
    layout["margin"].update(b=150, l=20)
    layout["height"] += 150
    return go.Figure(spec)


def plots(records: list[dict], names: dict[str, str], results: Path) -> list[Plot]:
    """Every figure of the command, in order, each with its description."""
    def quoted(rec: dict) -> str:
        return f"*{rec['text']}* → *{rec['translation']}*"

    table = pd.read_csv(results / "bleu_by_length.csv")
    table = table[table["set"] == BLEU_SET]
    order = {n: k for k, n in enumerate(names)}  # the zoo's order: RNNsearch first, RNNenc last
    table = table.sort_values("model", key=lambda c: c.map(order).fillna(99), kind="stable")
    out = [Plot("fig2-bleu-by-length", bleu_by_length_figure(table, names),
                f"BLEU by source length on {BLEU_SET} (the paper's test set; Figure 2), greedy, with 95% bootstrap "
                f"bands, for {'; '.join(names.get(m, m) for m in dict.fromkeys(table['model']))}. The bars count the "
                f"segments per bucket. {describe_finding(table, names)}")]
    by_key = {(r["model"], r["text"]): r for r in records}
    for letter, text in FIG3.items():
        rec = by_key[(BAHDANAU, text)]
        words = rec["words"]
        out.append(Plot(f"fig3{letter}-{BAHDANAU}", alignment_heatmap(
            words["weights"], words["source"], words["target"], title=f"({letter}) {names[BAHDANAU]}"),
            f"{names[BAHDANAU]}'s alignment in whole words (Figure 3{letter}): {quoted(rec)}"))
    left, right = by_key[(BAHDANAU, SENTENCE)], by_key[(LUONG, SENTENCE)]
    out.append(Plot("bahdanau-vs-luong", alignment_pair(left["words"], right["words"], names[BAHDANAU], names[LUONG]),
                    f"{names[BAHDANAU]} and {names[LUONG]} on one sentence, whole words: {quoted(left)} and "
                    f"*{right['translation']}*"))
    grid = by_key[(TRANSFORMER, SENTENCE)]
    out.append(Plot("luong-to-transformer", labelled_grid(grid),
                    f"{names[TRANSFORMER]}: cross-attention of every layer (rows) × head (columns) in subword pieces, "
                    f"as *From Luong to the Transformer* shows it: {quoted(grid)}"))
    return out


def sized(fig: go.Figure, size: Size, fixed: bool) -> Size:
    """``size`` as is (``fixed``: a slide's 16:9), or with the figure's own height scaled to its type."""
    if fixed:
        return size
    own = fig.to_dict()["layout"].get("height") or 500
    return dataclasses.replace(size, height=int(min(1400, max(240, own * size.font / FONT_SIZE))))


def write(out: Path, items: list[Plot], size: str, light: bool, browser: str,
          formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Every figure in every format, drawn in one browser; returns the files written."""
    jobs, paths = [], []
    for item in items:
        spec = print_ready(item.figure, sized(item.figure, SIZES[size], fixed=size == "slide"), light)
        for fmt in formats:
            jobs.append({"figure": spec, "format": fmt, "scale": 2 if fmt == "png" else 1})
            paths.append(out / f"{item.name}.{fmt}")
    for path, image in zip(paths, render(jobs, browser, timeout=120)):
        path.write_bytes(image)
    return paths


def figures_md(items: list[Plot], command: str, size: str, light: bool, formats: tuple[str, ...] = FORMATS) -> str:
    """The folder's index: the command, then what each figure shows."""
    rows = "\n".join(f"| `{p.name}` | {p.what} |" for p in items)
    return (f"# Figures\n\nMade by `{command}` from the shipped checkpoints (greedy decoding) and "
            f"`results/bleu_by_length.csv`; {SIZES[size].label} size, "
            f"{'light print theme' if light else 'screen theme'}; each as {', '.join(f.upper() for f in formats)}"
            f"{' (PNG at twice the size)' if 'png' in formats else ''}.\n\n"
            f"| file | what it shows |\n| --- | --- |\n{rows}\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Write the paper's figures for our models as PDF, SVG and PNG.")
    p.add_argument("--out", required=True, help="a new (or empty) folder")
    p.add_argument("--checkpoints", default=str(ROOT / "checkpoints"))
    p.add_argument("--results", default=str(ROOT / "results"), help="the folder holding bleu_by_length.csv")
    p.add_argument("--size", choices=list(SIZES), default="page", help="width and type size (default: paper page)")
    p.add_argument("--screen", action="store_true", help="the app's screen theme instead of the light print theme")
    p.add_argument("--browser", default=CHROMIUM, help="the headless Chromium that draws the files")
    p.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, of pdf,svg,png (default: all)")
    args = p.parse_args(argv)
    out, formats = Path(args.out), tuple(f for f in args.formats.split(",") if f)
    if out.exists() and any(out.iterdir()):
        p.error(f"{out} is not empty")
    if not formats or set(formats) - set(FORMATS):
        p.error(f"--formats: some of {','.join(FORMATS)}")
    jobs = [(BAHDANAU, t) for t in FIG3.values()] + [(BAHDANAU, SENTENCE), (LUONG, SENTENCE), (TRANSFORMER, SENTENCE)]
    records, names = decode(Path(args.checkpoints), jobs)
    items = plots(records, names, Path(args.results))
    out.mkdir(parents=True, exist_ok=True)
    try:
        paths = write(out, items, args.size, not args.screen, args.browser, formats)
    except ExportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    command = "python -m viz.paper_figures --out DIR" + ("" if args.size == "page" else f" --size {args.size}") + (
        " --screen" if args.screen else "") + ("" if formats == FORMATS else f" --formats {','.join(formats)}")
    (out / "figures.md").write_text(figures_md(items, command, args.size, not args.screen, formats), encoding="utf-8")
    for path in paths + [out / "figures.md"]:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
