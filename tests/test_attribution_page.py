"""AppTest of "Attention or attribution?" (app_pages/attribution.py) on the tiny zoo."""
from __future__ import annotations

import json

import numpy as np
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from app_pages.common import DEFAULT_SENTENCE

APP = str(ROOT / "explorer.py")


def run(at) -> AppTest:
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def page(**params) -> AppTest:
    at = run(AppTest.from_file(APP, default_timeout=120))
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page("app_pages/attribution.py")
    return run(at)


def texts(at) -> str:
    return "\n".join(e.value for kind in ("markdown", "caption", "info", "success", "warning", "error")
                     for e in getattr(at, kind))


def test_attention_beside_attribution_and_knocking_out_the_most_attended_word(tiny_zoo):
    from app_pages.common import cached_translate
    at = page(model="rnnsearch", text=DEFAULT_SENTENCE)
    record = cached_translate("rnnsearch", DEFAULT_SENTENCE, 1)
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    side = charts[0]
    assert [t["type"] for t in side["data"]] == ["heatmap"] * 3  # attention, occlusion, gradient × input
    attention = side["data"][0]["z"]
    z = np.asarray(attention) if not isinstance(attention, dict) else None
    if z is not None:
        np.testing.assert_allclose(z, record.weights, atol=1e-6)
    assert "Per-row rank correlation" in texts(at) and "disagree most" in texts(at)
    # the edit's defaults: step 1, its most-attended source piece, knocked out
    assert at.selectbox(key="attribution_edit_step").value == 0
    assert at.selectbox(key="attribution_edit_word_0").value == int(record.weights[0].argmax())
    said = texts(at)
    assert "knocked out from step 1" in said
    assert "The output changes from step" in said or "with other log-probabilities" in said
    # an edit to the weight it already has reproduces the record
    at.radio(key="attribution_edit_action").set_value("set its weight")
    at = run(at)
    assert "Nothing changed" in texts(at)


def test_integrated_gradients_are_offered_within_the_budget(tiny_zoo):
    at = page(model="luong-dot", text="3 1 4")
    at.pills(key="attribution_methods").set_value(["ig"])
    at = run(at)
    assert "Integrated gradients' completeness gap" in texts(at)
    from model.attribution import BUDGET
    from app_pages.common import cached_translate
    long = " ".join(["7 3 9 1"] * 30)
    record = cached_translate("rnnsearch", long, 1)
    T, S = len(record.target_tokens), len(record.source_tokens)
    assert T * (T + S) > BUDGET["ig"]
    at = page(model="rnnsearch", text=long)
    at.pills(key="attribution_methods").set_value(["ig"])
    at = run(at)
    assert "offered for shorter sentences" in texts(at)


def test_the_page_lists_only_models_with_attention(tiny_zoo):
    at = page(model="rnnenc", text=DEFAULT_SENTENCE)
    assert at.selectbox(key="attribution_model").value != "rnnenc"
    assert "rnnenc" not in at.selectbox(key="attribution_model").options
