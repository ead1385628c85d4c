"""AppTest of the Models page (app_pages/models.py): one card per model, its figures measured
for real, a missing one shown as a dash."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from helpers.apptest import array, figures, page


def test_models_cards(product):
    at = page("app_pages/models.py")
    overview = at.dataframe[0].value
    assert len(overview) == 8 and list(overview["status"]).count("unavailable") == 1
    metrics = json.loads((product["zoo"] / "rnnsearch" / "metrics.json").read_text())
    row = overview[overview["model"] == "RNNsearch (Bahdanau, additive)"].iloc[0]
    assert row["enfr test BLEU"] == metrics["test"]["bleu"] and row["stress BLEU"] == metrics["stress"]["bleu"]
    dot = overview[overview["model"] == "Luong global, dot"].iloc[0]  # CPU and GPU minutes apart, every stage
    assert (dot["training, CPU (min)"], dot["training, GPU (min)"]) == (277.0 + 95.04, 7.0)
    assert any("broken" in e and "corrupt" in e for e in at.error.values)
    values = [m.value for m in at.metric]
    assert f"{metrics['test']['bleu']:.2f}" in values
    curves = [f for f in figures(at) if any(t.get("name") == "dev BLEU" for t in f["data"])]
    assert len(curves) == 1
    np.testing.assert_allclose(array([t for t in curves[0]["data"] if t["name"] == "dev BLEU"][0]["y"]),
                               [3.0, 20.0, 41.5])
    alignment = [d.value for d in at.dataframe if "written text" in d.value.columns]
    assert len(alignment) == 1 and list(alignment[0].columns) == ["", "written text", "tokens as given"]
    assert list(alignment[0]["written text"]) == [f"{metrics['alignment'][k]:.3f}" for k in ("aer", "precision", "recall")]
    assert alignment[0]["tokens as given"][0] == f"{metrics['alignment']['as_given']['aer']:.3f}"
    started = [v for d in at.dataframe for k, v in zip(d.value.iloc[:, 0], d.value.iloc[:, -1]) if k == "started from"]
    assert started == ["checkpoints/luong-general (fresh: decoder.attention.W_p.weight, decoder.attention.v_p.weight)"]
    stages = {k: v for d in at.dataframe for k, v in zip(d.value.iloc[:, 0], d.value.iloc[:, -1])
              if str(k).startswith("stage ")}
    assert stages == {"stage 1: from scratch": "9,143 steps, 277.0 min, lr 0.001, dev BLEU 26.90",
                      "stage 2: mixed fine-tuning": "2,400 steps, 95.0 min, lr 0.00025, dev BLEU 28.10; "
                                                    "tatoeba ×3, newstest2012 ×2; the mean of its last 2 evaluations",
                      "stage 3: mixed fine-tuning on a GPU": "3,638 steps, 7.0 min, lr 0.0005, dev BLEU 30.70; tatoeba ×3"}
    tracking = json.loads((product["zoo"] / "luong-local" / "metrics.json").read_text())["position_tracking"]
    shown = [t for t in at.markdown.values if t.startswith("**Predicted position p_i")]
    assert len(shown) == 1 and shown[0].startswith("**Predicted position p_i against the alignment before the Gaussian**")
    for figure in (f"mean Spearman ρ {tracking['spearman_align']:.3f}, against {tracking['chance_align']:.3f} with "
                   "p_i shuffled within each sentence (chance)", f"over {tracking['scored']} greedy translations of "
                   f"{tracking['set']} sources of 3–40 pieces", f"the weights shown, ρ is {tracking['spearman_weights']:.3f}",
                   f"{100 * tracking['window_share']['mean']:.1f}% of align's mass"):
        assert figure in shown[0]
    assert "moves exactly" not in shown[0]  # Spearman's ρ = 1 is the same order, not the same place
    bridges = [t for t in at.markdown.values if t.startswith("**Memory bridge W_m**")]
    assert len(bridges) == 4 and all("32 × 64 matrix (2,048 parameters" in t for t in bridges)  # dot, general, concat, local


def shown_cells(table) -> pd.DataFrame:
    """A st.dataframe's cells as the browser shows them: a Styler's display values where the page
    formats the table, else the values themselves as text."""
    styler = table.proto.arrow_data.styler
    if not styler.display_values:
        return table.value.astype(str)
    from streamlit import dataframe_util
    shown = dataframe_util.convert_arrow_bytes_to_pandas_df(styler.display_values)
    return shown.set_axis(table.value.columns, axis=1)


def test_models_page_shows_a_missing_figure_as_a_dash_and_the_data_set_by_name(product):
    concat = product["zoo"] / "luong-concat" / "config.json"  # trained, as the shipped zoo is, on a shared folder
    saved = concat.read_text()
    config = json.loads(saved)
    config["training"]["data"] = "../shared/data/enfr-broad"
    concat.write_text(json.dumps(config))
    from ui import zoo_cache
    zoo_cache._load_zoo.clear()
    try:
        at = page("app_pages/models.py")
    finally:
        concat.write_text(saved)
        zoo_cache._load_zoo.clear()
    overview, shown = at.dataframe[0].value, shown_cells(at.dataframe[0])
    row = list(overview["model"]).index("Luong global, concat")
    assert overview["training data"][row] == "enfr-broad" and overview["training data"][0] == "toy:reverse"
    assert shown["newstest2014 BLEU"].tolist() == ["—"] * len(overview)  # evaluated on no model here
    evaluated = json.loads((product["zoo"] / "rnnsearch" / "metrics.json").read_text())["test"]["bleu"]
    bleu = dict(zip(overview["model"], shown["enfr test BLEU"]))
    assert bleu["RNNsearch (Bahdanau, additive)"] == f"{evaluated:.2f}" and bleu["Luong global, concat"] == "—"
    every_cell = [str(v) for d in at.dataframe for v in shown_cells(d).to_numpy().ravel()]
    assert "None" not in every_cell and "nan" not in every_cell and "—" in every_cell
    facts = {k: v for d in at.dataframe for k, v in zip(d.value.iloc[:, 0], d.value.iloc[:, -1])}
    assert facts["data"] in ("toy:reverse", "enfr-broad") and not any("../shared" in str(v) for v in every_cell)
    assert "—" in [m.value for m in at.metric]  # a model not evaluated: its BLEU card says so, not "None"
