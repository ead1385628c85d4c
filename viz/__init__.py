"""Plotly figures from plain data: numpy arrays, token lists and pandas DataFrames.

``viz/`` knows nothing of torch or Streamlit, so every figure here can be rebuilt in a
notebook from a decoding record's arrays or a results CSV.

- :mod:`viz.heatmap`: alignment heatmaps (α_ij on one fixed 0–1 scale), their differences,
  per-token probabilities and per-step attention entropy.
- :mod:`viz.bleu`: BLEU by source length with bootstrap bands (Bahdanau et al. 2014, Fig. 2).
- :mod:`viz.curves`: training curves (loss and dev BLEU per epoch) from ``train_log.csv``.
- :mod:`viz.teaching_figures`: the teaching pages' figures: one decoder step taken apart, the
  beam-search tree, forced alignment against gold links, attention emerging in training, and
  a class's answers (right and wrong apart, the numbers given, the class's alignment).
- :mod:`viz.transformer`: every layer × head at once, one head's rows, self-attention.
- :mod:`viz.attribution`: attention beside attribution on one scale, and what an edit changes.
- :mod:`viz.classroom`: the classroom load curve (latency against concurrent students).
- :mod:`viz.check`: the spread of a class's check before and after the lesson, one dot per student.
- :mod:`viz.fast_figure`: building a figure from a plain spec without Plotly's per-property
  validation (what every module above returns).
- :mod:`viz.narrow`: how wide a figure must be drawn for its labels not to run into each other,
  on any screen (a phone's 390 px included): a phone scrolls a wider figure sideways instead.
- :mod:`viz.describe`: a figure in words, read from its own data: the summary and accessible
  tables (which source word each target word reads most, with α; every cell on request) that
  are every chart's text alternative.
- :mod:`viz.export`: any figure as SVG, PDF or PNG (Kaleido in Debian's Chromium), the
  attention matrix as CSV, a figure as standalone HTML.
- :mod:`viz.latex`: an alignment matrix as a TikZ file ``pdflatex`` compiles on its own.
- :mod:`viz.paper_figures`: the paper's figures for our models, ``python -m viz.paper_figures``.
"""
