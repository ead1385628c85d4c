"""AppTest of Step through (app_pages/step_through.py): the slider and buttons move the framed row,
the equations follow each mechanism's order, only the chosen sections are drawn."""
from __future__ import annotations

import numpy as np
import pytest

from model.internals import local_p_steps
from model.search import greedy, prepare_source
from helpers.apptest import array, chart, DIGITS, EVERY_SECTION, open_page, section_picker, shapes


def test_step_through_slider_and_buttons_move_the_highlighted_row(tiny):
    at = open_page("step_through", ("score", "weights"), text=DIGITS, model="rnnsearch")
    model, vocab = tiny["rnnsearch"]
    rec = greedy(model, vocab, prepare_source(vocab, DIGITS))
    heatmap = chart(at, "step_heatmap")
    assert [s["y0"] for s in shapes(heatmap, "highlighted row")] == [-0.5]
    assert np.allclose(array(heatmap["data"][0]["z"]), rec.weights, atol=1e-6)

    at.slider(key="step_i").set_value(3).run()
    assert [s["y0"] for s in shapes(chart(at, "step_heatmap"), "highlighted row")] == [1.5]
    weights_bar = chart(at, "step_weights")["data"][0]
    assert np.allclose(array(weights_bar["y"]), rec.weights[2], atol=1e-6)  # the real α of step 3
    energies_bar = chart(at, "step_energies")["data"][0]
    assert np.allclose(array(energies_bar["y"]), rec.energies[2], atol=1e-5)

    at.button(key="step_next").click().run()
    assert at.slider(key="step_i").value == 4
    assert [s["y0"] for s in shapes(chart(at, "step_heatmap"), "highlighted row")] == [2.5]
    at.button(key="step_prev").click().run()
    at.button(key="step_prev").click().run()
    assert [s["y0"] for s in shapes(chart(at, "step_heatmap"), "highlighted row")] == [0.5]
    assert at.query_params["step"] == "2"


ORDERS = {  # the order each decoder computes in (model/decoders.py)
    "rnnsearch": ["Score", "Weights", "Context vector", "RNN step", "Output"],
    "luong-general": ["RNN step", "Score", "Weights", "Context vector", "Attentional state", "Output"],
}


@pytest.mark.parametrize("name", list(ORDERS))
def test_step_through_equations_follow_the_mechanisms_order(name):
    at = open_page("step_through", EVERY_SECTION, text=DIGITS, model=name)
    # the picker offers the sections in the mechanism's order, and the page draws them in it
    assert [next(t for t in ORDERS[name] if t.split()[0] in label) for label in section_picker(at).options
            if label[:1] in "①②③④⑤⑥"] == ORDERS[name]
    sections = [m.value for m in at.markdown if m.value.startswith("**") and m.value[2] in "①②③④⑤⑥"]
    titles = [section.split("\n", 1)[0] for section in sections]
    assert [next(t for t in ORDERS[name] if t in title) for title in titles] == ORDERS[name]
    # each section is one text: its title, its equations as display math ($$ … $$), its note
    assert all("\n$$\n" in section for section in sections)
    latex = " ".join(sections)
    if name == "rnnsearch":  # the score reads s_{i-1}, before the RNN step
        assert latex.index(r"W_a s_{i-1} + U_a h_j") < latex.index(r"\mathrm{GRU}") < latex.index("maxout")
    else:  # the RNN step first, then the score reads s_i
        assert latex.index(r"\mathrm{GRU}") < latex.index(r"s_i^\top W_a \bar h_j") < latex.index(r"\tilde h_i = ")


def test_step_through_draws_only_the_chosen_sections():
    """A section not chosen builds nothing: no equation, no chart. A chosen one stays as the
    slider moves, and unchoosing it removes it."""
    at = open_page("step_through", text=DIGITS, model="rnnsearch")
    assert not [m for m in at.markdown if "$$" in m.value]
    assert {c.key for c in at.get("plotly_chart")} == {"step_heatmap"}
    at = section_picker(at).set_value(["output"]).run()
    at.slider(key="step_i").set_value(2).run()
    assert {c.key for c in at.get("plotly_chart")} == {"step_heatmap", "step_topk"}
    assert [m.value for m in at.markdown if "$$" in m.value][0].startswith("**⑤ Output (eq. 4")
    at.button(key="step_next").click().run()
    assert at.slider(key="step_i").value == 3 and "step_topk" in {c.key for c in at.get("plotly_chart")}
    assert at.query_params["sections"] == "output"  # the link keeps the choice
    at = section_picker(at).set_value([]).run()
    assert {c.key for c in at.get("plotly_chart")} == {"step_heatmap"} and "sections" not in at.query_params
    # a link (a teacher's, or a page sent to the class) opens with its sections shown
    at = open_page("step_through", text=DIGITS, model="rnnsearch", sections="output,score,nonsense")
    assert section_picker(at).value == ["score", "output"]
    assert {c.key for c in at.get("plotly_chart")} == {"step_heatmap", "step_energies", "step_topk"}


def test_step_through_local_and_rnnenc(tiny):
    at = open_page("step_through", EVERY_SECTION, text=DIGITS, model="luong-local")
    assert any("p_i = (S-1)" in m.value for m in at.markdown)
    # a sentence wider than the window: the step's two forms of local-p, side by side, are the model's
    text = "1 2 3 4 5 6 7 8 9"
    at = open_page("step_through", EVERY_SECTION, text=text, model="luong-local")
    model, vocab = tiny["luong-local"]
    src = prepare_source(vocab, text)
    steps = local_p_steps(model, src.ids, greedy(model, vocab, src).query_states)
    bars = [t for t in chart(at, "step_local_forms")["data"] if t["type"] == "bar"]
    assert [t["name"].split(" (")[0] for t in bars] == ["shipped", "Luong eq. 10"]
    assert np.allclose(array(bars[0]["y"]), steps.shipped_weights[0], atol=1e-6)
    assert np.allclose(array(bars[1]["y"]), steps.luong_weights[0], atol=1e-6)
    caption = next(m.value for m in at.markdown if ":small[The same energies" in m.value)
    assert f"Window masses: {steps.shipped_mass[0]:.4f} shipped, {steps.luong_mass[0]:.4f} Luong's" in caption
    at = open_page("step_through", text=DIGITS, model="rnnenc")
    assert any("no attention" in i.value for i in at.info)


def test_step_through_transformer():
    at = open_page("step_through", EVERY_SECTION, text=DIGITS, model="transformer")
    latex = " ".join(m.value for m in at.markdown)
    assert r"\sqrt{d_k}" in latex and r"\frac{1}{h} \sum_k" in latex
    assert array(chart(at, "step_heads")["data"][0]["z"]).shape[0] == 4
