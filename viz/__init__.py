"""Plotly figures from plain data: numpy arrays, token lists and pandas DataFrames.

``viz/`` knows nothing of torch or Streamlit, so every figure here can be rebuilt in a
notebook from a decoding record's arrays or a results CSV.

- :mod:`viz.heatmap`: alignment heatmaps (α_ij on one fixed 0–1 scale), their differences,
  per-token probabilities and per-step attention entropy.
- :mod:`viz.bleu`: BLEU by source length with bootstrap bands (Bahdanau et al. 2014, Fig. 2).
- :mod:`viz.curves`: training curves (loss and dev BLEU per epoch) from ``train_log.csv``.
- :mod:`viz.export`: the attention matrix as CSV and any figure as standalone HTML.
"""
