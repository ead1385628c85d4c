"""viz/attribution.py's change curve: Plotly validates it, and it draws what the rows say."""
from __future__ import annotations

from viz.attribution import change_curve
from viz.fast_figure import validated

ROWS = [{"alpha_from": 0.0, "alpha_to": 0.2, "pairs_most": 0, "changed_most": None, "pairs_others": 40,
         "changed_others": 0.05},
        {"alpha_from": 0.2, "alpha_to": 1.0, "pairs_most": 30, "changed_most": 0.6, "pairs_others": 10,
         "changed_others": 0.5}]


def test_the_change_curve_draws_both_kinds_of_piece_per_level():
    fig = validated(change_curve({"attention knock-out": ROWS, "input <b>occlusion</b>": ROWS})).to_dict()
    assert len(fig["data"]) == 4
    most, others = fig["data"][0], fig["data"][1]
    assert list(most["y"]) == [None, 60.0] and list(others["y"]) == [5.0, 50.0]
    assert list(most["x"]) == ["0–0.2", "0.2–1"] and most["line"]["dash"] == "solid" and others["line"]["dash"] == "dot"
    assert "&lt;b&gt;" in fig["data"][2]["name"]  # markup in a label shows as typed
