"""Teaching mode: the worked example's arithmetic, the inspection helpers, and AppTest
(streamlit.testing.v1) of the six teaching pages on the suite's tiny checkpoints.

Tiny models are trained to reverse digit strings, so the tests type digits ("1 2 3 4 5")
and compare what a page shows with the same call made directly on the same checkpoint:
the numbers on the page are the model's.
"""
from __future__ import annotations

import base64
import html
import json

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from model.attention import AdditiveAttention, DotAttention
from model.checkpoint import load_checkpoint
from model.align import forced_alignment
from model.internals import annotation_values, beam_hypotheses, local_p_steps
from model.search import beam_search, forced, greedy, prepare_source
from teaching.worked_example import additive_attention, cost, dot_attention, random_inputs, WorkedInputs

APP = str(ROOT / "navigation.py")
DIGITS = "1 2 3 4 5"


# -- helpers ---------------------------------------------------------------------------------------
def array(value) -> np.ndarray:
    """A Plotly JSON array: a plain list, or Plotly's typed array {dtype, bdata, shape}."""
    if isinstance(value, dict) and "bdata" in value:
        a = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return a.reshape([int(n) for n in str(value["shape"]).split(",")]) if "shape" in value else a
    return np.asarray(value)


def chart(at: AppTest, key: str) -> dict:
    """The figure JSON of the Plotly chart with this key."""
    return json.loads(at.get_by_key(key).proto.spec)


def shapes(fig: dict, name: str) -> list[dict]:
    return [s for s in fig["layout"].get("shapes", []) if s.get("name") == name]


def open_page(page: str, show: tuple[str, ...] = (), **query) -> AppTest:
    """The page after its first run; ``show`` names Step through's sections to show, as a
    student's choice in its picker would (those the model has: a key the picker does not offer
    is left out)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    at.run()  # the default page first: AppTest can only switch pages after a run
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if show:
        at = section_picker(at).set_value([key for key in show if section_picker(at).format_func(key)]).run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def section_picker(at: AppTest):
    """Step through's picker of the sections shown beside the step."""
    return next(p for p in at.button_group if (p.key or "").startswith("step_show_"))


EVERY_SECTION = ("query", "score", "weights", "context", "state", "local_forms", "attentional", "heads", "output")


@pytest.fixture(scope="module")
def tiny(tiny_zoo):
    """name -> (model, vocab) for the tiny checkpoints the app reads."""
    return {name: load_checkpoint(tiny_zoo / name)[:2] for name in ("rnnsearch", "luong-general", "luong-local")}


# -- the worked example's arithmetic ----------------------------------------------------------------
def test_worked_example_shapes_and_sums():
    steps = additive_attention(random_inputs(0))
    assert steps.concat.shape == (4, 8) and steps.pre_activation.shape == (4, 3)
    assert steps.energies.shape == (4, 1) and steps.context.shape == (1, 4)
    assert steps.weights.sum() == pytest.approx(1.0)
    assert np.allclose(steps.context, steps.weights.T @ random_inputs(0).annotations)
    assert not np.allclose(additive_attention(random_inputs(1)).weights, steps.weights)
    assert [c["parameters"] for c in cost()] == [27, 0]


def test_worked_example_is_the_models_additive_and_dot_score():
    """The hand-sized numpy computation equals model/attention.py's layers with the same weights."""
    inputs = random_inputs(7)
    layer = AdditiveAttention(query_size=4, key_size=4, attention_size=3)
    with torch.no_grad():
        layer.W_a.weight.copy_(torch.tensor(inputs.W[:4].T))
        layer.U_a.weight.copy_(torch.tensor(inputs.W[4:].T))
        layer.U_a.bias.zero_()
        layer.v_a.weight.copy_(torch.tensor(inputs.v.T))
    query = torch.tensor(inputs.decoder_state, dtype=torch.float32).unsqueeze(0)
    keys = torch.tensor(inputs.annotations, dtype=torch.float32).unsqueeze(0)
    mask = torch.ones(1, 4, dtype=torch.bool)
    energies = layer.score(query, layer.compute_proj_keys(keys), mask)[0].detach().numpy()
    assert np.allclose(energies, additive_attention(inputs).energies[:, 0], atol=1e-5)
    dot = DotAttention().score(query, keys, mask)[0].numpy()
    assert np.allclose(dot, dot_attention(inputs).energies[:, 0], atol=1e-5)


def test_worked_inputs_reject_bad_numbers():
    good = random_inputs(0)
    with pytest.raises(ValueError):
        WorkedInputs(good.decoder_state, good.annotations, good.W[:7], good.v)
    with pytest.raises(ValueError):
        WorkedInputs(np.array([np.nan, 0, 0, 0]), good.annotations, good.W, good.v)


# -- the inspection helpers --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rnnsearch", "luong-general", "luong-local"])
def test_context_is_the_weighted_sum_of_the_values(tiny, name):
    model, vocab = tiny[name]
    src = prepare_source(vocab, DIGITS)
    rec = greedy(model, vocab, src)
    values = annotation_values(model, src.ids)
    assert values.shape == (len(rec.source_tokens), rec.contexts.shape[1])
    # local-p (eq. 10): the weights the context sums are α_ij times the window mass m_i
    mass = rec.window_masses[:, None] if rec.window_masses is not None else 1.0
    assert (name == "luong-local") == (rec.window_masses is not None)
    assert np.allclose(mass * rec.weights @ values, rec.contexts, atol=1e-5)
    if model.cfg.decoder == "luong":
        assert rec.attentional.shape == rec.states.shape
    else:
        assert rec.attentional is None


def test_forced_alignment_word_probabilities(tiny):
    model, vocab = tiny["rnnsearch"]
    result = forced_alignment(model, vocab, DIGITS.split(), "5 4 3 2 1".split())
    rec = forced(model, vocab, prepare_source(vocab, DIGITS), vocab.encode("5 4 3 2 1"))
    assert result.word_logprobs.shape == (5,)
    assert result.logprob == pytest.approx(rec.score, abs=1e-5)
    assert result.word_weights.shape == (5, 5)  # the </s> row and column are left out, as in model.align
    assert (result.word_weights.sum(1) <= 1 + 1e-6).all()
    assert {k for _, k in result.links} == set(range(5))


def test_beam_hypotheses_rank_the_returned_one_first(tiny):
    model, vocab = tiny["rnnsearch"]
    rec = beam_search(model, vocab, prepare_source(vocab, "1 2 3 4 5 6 7"), beam=4)
    hyps = beam_hypotheses(rec.beam_tree)
    assert hyps[0].chosen and hyps[0].tokens == rec.target_tokens
    assert sum(h.chosen for h in hyps) == 1 and len(hyps) >= 2


# -- the pages ---------------------------------------------------------------------------------------
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


def test_worked_example_seed_and_edits_change_every_value():
    at = open_page("worked_example")
    latex = [x.value for x in at.latex]
    body = " ".join(latex)
    for shape in (r"4 \times 8", r"8 \times 3", r"3 \times 1", r"4 \times 3", r"4 \times 1", r"1 \times 4"):
        assert shape in body
    at.number_input(key="we_seed").set_value(5).run()
    changed = [x.value for x in at.latex]
    assert not at.exception
    # every equation with numbers changes; the two symbolic headers stay
    assert sum(a != b for a, b in zip(latex, changed)) == len(latex) - 2
    at.session_state["we_s_5"] = {"edited_rows": {0: {"d1": 0.9}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert r"\left[\begin{array}{rrrr}0.90" in at.latex[0].value
    assert at.latex[2].value != changed[2]  # the concatenated matrix follows the edit


def test_beam_tree_chosen_path_is_the_beam_search_output(tiny):
    text = "1 2 3 4 5 6 7"
    at = open_page("beam_tree", text=text, model="rnnsearch", beam="4")
    model, vocab = tiny["rnnsearch"]
    rec = beam_search(model, vocab, prepare_source(vocab, text), beam=4)
    tree = chart(at, "beam_tree")
    path = next(t for t in tree["data"] if t["name"] == "chosen path" and "markers" in t["mode"])
    assert [html.unescape(t) for t in path["text"]] == rec.target_tokens
    assert len([t for t in tree["data"] if t["name"] == "pruned hypotheses"][0]["x"]) > 0  # greyed branches
    shown = chart(at, "beam_heatmap")
    assert [html.unescape(t) for t in shown["layout"]["yaxis"]["ticktext"]] == rec.target_tokens

    # choosing another hypothesis shows its own path and attention
    options = at.selectbox(key="beam_hypothesis").options
    assert options[0].startswith("★ chosen") and len(options) > 1
    at.selectbox(key="beam_hypothesis").set_value(1).run()
    other = beam_hypotheses(rec.beam_tree)[1]
    shown = chart(at, "beam_heatmap")
    assert [html.unescape(t) for t in shown["layout"]["yaxis"]["ticktext"]] == other.tokens
    assert array(shown["data"][0]["z"]).shape == (len(other.tokens), len(rec.source_tokens))

    at.slider(key="beam_k").set_value(1).run()  # k = 1 is greedy
    path = next(t for t in chart(at, "beam_tree")["data"] if t["name"] == "chosen path" and "markers" in t["mode"])
    assert [html.unescape(t) for t in path["text"]] == greedy(model, vocab, prepare_source(vocab, text)).target_tokens


def test_what_if_prefix_changes_the_continuation(tiny):
    at = open_page("what_if", text=DIGITS, model="rnnsearch")
    model, vocab = tiny["rnnsearch"]
    src = prepare_source(vocab, DIGITS)
    original = greedy(model, vocab, src)
    at.selectbox(key="whatif_position").set_value(1).run()
    alternative = at.selectbox(key="whatif_alternative_1").value
    assert alternative != original.target_ids[1]
    after = chart(at, "whatif_after")
    tokens = [html.unescape(t) for t in after["layout"]["yaxis"]["ticktext"]]
    expected = greedy(model, vocab, src, prefix=original.target_ids[:1] + [alternative])
    assert tokens == expected.target_tokens
    assert tokens[:2] == [original.target_tokens[0], vocab.id_to_piece(alternative)]  # the forced prefix
    assert tokens != original.target_tokens
    assert [s["y0"] for s in shapes(after, "forced prefix")] == [0.5]
    before = chart(at, "whatif_before")
    assert [html.unescape(t) for t in before["layout"]["yaxis"]["ticktext"]] == original.target_tokens

    # a typed word is forced piece by piece
    at.selectbox(key="whatif_alternative_1").set_value(-1).run()
    at.text_input(key="whatif_typed").set_value("9 9").run()
    tokens = [html.unescape(t) for t in chart(at, "whatif_after")["layout"]["yaxis"]["ticktext"]]
    assert tokens[:3] == [original.target_tokens[0], "▁9", "▁9"]
    assert tokens == greedy(model, vocab, src, prefix=original.target_ids[:1] + vocab.encode("9 9")).target_tokens


def test_forced_alignment_shows_per_word_probabilities(tiny, tmp_path, monkeypatch):
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 4 5 ||| 5 4 3 2 1\n", encoding="utf-8")
    (gold / "enfr.gold").write_text("1-5 2-4 3-3 4-2 5p1\n", encoding="utf-8")
    monkeypatch.setenv("ATTN_EXPLORER_GOLD", str(gold))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("app_pages/forced_alignment.py")
    at.run()
    at.number_input(key="fa_number").set_value(1).run()
    assert not at.exception
    model, vocab = tiny["rnnsearch"]
    table = at.dataframe[0].value
    assert list(table["French word"]) == "5 4 3 2 1".split()
    rec = forced(model, vocab, prepare_source(vocab, DIGITS), vocab.encode("5 4 3 2 1"))
    assert np.allclose(table["p(word)"], np.exp(rec.token_logprobs[:5]), atol=1e-6)
    metrics = {m.label: m.value for m in at.metric}
    assert "AER (this sentence)" in metrics
    result = forced_alignment(model, vocab, DIGITS.split(), "5 4 3 2 1".split())
    a_s = len(result.links & {(0, 4), (1, 3), (2, 2), (3, 1)})
    a_p = len(result.links & {(0, 4), (1, 3), (2, 2), (3, 1), (4, 0)})
    assert float(metrics["AER (this sentence)"]) == pytest.approx(1 - (a_s + a_p) / (5 + 4), abs=1e-3)
    names = {t.get("name") for t in chart(at, "fa_alignment")["data"]}
    assert {"sure", "possible", "missed", "wrong"} <= names
    assert any("reads them**: 1 2 3 4 5  \n**→** 5 4 3 2 1" in m for m in at.markdown.values)  # what the model reads

    # a sentence pair of one's own, and no gold set at all
    monkeypatch.setenv("ATTN_EXPLORER_GOLD", str(tmp_path / "nowhere"))
    at = open_page("forced_alignment")
    assert any("missing" in i.value for i in at.info)
    at.text_input(key="fa_english").set_value("1 2 3").run()
    at.text_input(key="fa_french").set_value("3 2 1 1").run()
    assert list(at.dataframe[0].value["French word"]) == ["3", "2", "1", "1"]
    assert ((at.dataframe[0].value["p(word)"] > 0) & (at.dataframe[0].value["p(word)"] <= 1)).all()


def test_emerge_trains_live_and_keeps_its_frames():
    at = open_page("emerge")
    assert at.info  # nothing trained yet
    at.select_slider(key="emerge_steps").set_value(20)
    at.button(key="emerge_train").click().run()
    assert not at.exception
    result = at.session_state["emerge_result"]
    for frames in result["runs"].values():
        assert [f[0] for f in frames][:2] == [1, 2] and frames[-1][0] == 20
        assert frames[0][2].shape == (len(result["target"]), len(result["source"]))
        assert np.allclose(frames[-1][2].sum(1), 1, atol=1e-5)
    animation = chart(at, "emerge_animation")
    assert len(animation["frames"]) == 20 and len(animation["data"]) == 2  # Bahdanau | Luong
    at.run()  # a rerun keeps the frames
    assert len(chart(at, "emerge_animation")["frames"]) == 20


def test_training_queue_is_first_come_first_served():
    from server.limits import TrainingQueue
    queue = TrainingQueue()
    a, b, c = queue.join(), queue.join(), queue.join()
    assert [queue.place(t, 1) for t in (a, b, c)] == [0, 1, 2]
    assert [queue.place(t, 2) for t in (a, b, c)] == [0, 0, 1]
    queue.leave(b)  # a visitor cancels: the one behind moves up
    assert queue.place(c, 1) == 1 and len(queue) == 2
    queue.leave(a)
    assert queue.wait(c, 1, timeout=0.01) == 0
    queue.leave(c)
    queue.leave(c)  # leaving twice (finished, then the page stopped) is harmless
    assert len(queue) == 0


def test_emerge_waits_its_turn_in_the_servers_queue():
    """One live training at a time, server-wide: a second visitor waits with its place shown,
    starts once the first finishes, and gives its place back when done."""
    import threading
    from server.limits import training_queue
    at = open_page("emerge")
    at.select_slider(key="emerge_steps").set_value(20)
    other = training_queue().join()  # another visitor's training is running
    threading.Timer(3.0, training_queue().leave, args=(other,)).start()
    at.button(key="emerge_train").click().run()
    assert not at.exception
    assert at.button(key="emerge_cancel")  # the waiting visitor could cancel
    assert len(at.session_state["emerge_result"]["runs"]) == 2  # and trained once its turn came
    assert len(training_queue()) == 0


def test_classroom_page_reads_the_measured_limits(tiny_zoo, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_RESULTS", str(tmp_path))
    at = open_page("classroom")
    assert any("No load test recorded yet" in t for t in at.info.values)
    assert any("read-only for visitors" in t for t in at.markdown.values)
    rows = [{"bench": "classroom", "sessions": n, "think_s": 2.5, "interactions": 10 * n, "p50_ms": p50, "p95_ms": p95,
             "max_ms": mx, "errors": err, "mismatches": 0, "rss_mb": 700.0, "commit": "abc", "host": "test host"}
            for n, p50, p95, mx, err in [(1, 40, 60, 90, 0), (30, 300, 900, 1500, 0), (60, 900, 2500, 4000, 0)]]
    (tmp_path / "benchmarks.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n"
                                                + json.dumps({"bench": "translate_speed"}) + "\n")
    at.run()
    assert not at.exception
    assert any("Measured: 30 students at once** on one process, 2.5 s of thinking" in t and "0.90 s" in t
               for t in at.markdown.values)
    assert any("read-only, as a visitor" in t for t in at.markdown.values)  # no switch makes a visitor the owner
    curve = chart(at, "classroom_curve")
    assert [t["y"] for t in curve["data"] if t["name"] == "95th percentile"][0] == [60, 900, 2500]
    assert any("/compare?text=" in c.value for c in at.code)
    assert any("scripts/serve.py --replicas 2" in c.value for c in at.code)  # the lecture command

    # a lecture's runs: one p95 line per setup; a fault test (a replica killed on purpose) is no class size
    lecture = [dict(rows[0], replicas=2, sessions=n, p95_ms=p95) for n, p95 in [(60, 800), (120, 1400)]]
    fault = dict(rows[0], replicas=2, sessions=30, errors=15, killed_replica={"name": "r1", "at_s": 10})
    with open(tmp_path / "benchmarks.jsonl", "a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in lecture + [fault]))
    at.run()
    assert not at.exception
    assert any("Measured: 60 students at once** on 2 processes behind HAProxy" in t for t in at.markdown.values)
    lines = {t["name"]: list(t["y"]) for t in chart(at, "classroom_curve")["data"]}
    assert lines["95th percentile, 1 process"] == [60, 900, 2500]
    assert lines["95th percentile, 2 replicas behind HAProxy"] == [800, 1400]
    assert len(at.dataframe[0].value) == 5  # three one-process sizes, two lecture sizes; not the fault test


# -- the real browser ------------------------------------------------------------------------------
NO_ERROR = "document.querySelectorAll('[data-testid=\"stException\"]').length === 0"
PLOTS = "[...document.querySelectorAll('.js-plotly-plot')].filter(p => p.data && p.querySelector('.main-svg'))"
FRAMED_ROW = f"""(() => {{ const p = {PLOTS}.find(p => (p.layout.shapes || []).some(s => s.name === 'highlighted row'));
  return p ? p.layout.shapes.find(s => s.name === 'highlighted row').y0 : null; }})()"""
TRACE = PLOTS + ".some(p => p.data.some(t => t.name === '{}'))"


def click(page, label: str) -> None:
    """Click the visible button whose text ends with ``label`` (an icon's name may come first;
    Streamlit keeps a hidden copy of a button that has a tooltip). Playwright waits (up to 30 s)
    until it is drawn, enabled and not covered: a page is drawn progressively, so a figure can be
    on screen before the buttons above it have their labels."""
    import re
    button = page.locator("button").filter(has_text=re.compile(re.escape(label) + r"\s*$"), visible=True)
    button.click(timeout=30_000)


def test_browser_visits_every_teaching_page(tiny_zoo):
    """Headless Chromium (Playwright) opens each teaching page on the tiny zoo and sees it drawn;
    on Step through, ▶ moves the framed row of the drawn heatmap; on Watch attention emerge,
    training runs and the animation appears. Screenshots go to test-output/browser/."""
    from playwright.sync_api import expect
    from test_browser import OUTPUT, find_chromium, headless_chromium, streamlit_app, wait_for
    chromium = find_chromium(install=False)
    if not chromium:
        pytest.skip("Chromium not found (bash scripts/setup_browser.sh installs it)")
    digits = "text=1+2+3+4+5+6&model=rnnsearch"
    pages = {  # path -> what shows the page is drawn
        f"step-through?{digits}": f"{FRAMED_ROW} === -0.5",
        "worked-example": "document.querySelectorAll('.katex').length > 10",
        f"beam-tree?{digits}&beam=3": TRACE.format("chosen path"),
        f"what-if?{digits}": PLOTS + ".some(p => (p.layout.shapes || []).some(s => s.name === 'forced prefix'))",
        "forced-alignment?text=1+2+3&fr=3+2+1&model=rnnsearch": TRACE.format("link"),
        "emerge?steps=20": "[...document.querySelectorAll('button')].some(b => b.innerText.includes('Train both'))",
        "exercises?ex=step&seed=2": "document.querySelectorAll('.katex').length >= 2",
        "luong-to-transformer?text=1+2+3+4+5+6": PLOTS + ".some(p => (p.layout.shapes || []).some(s => s.name === "
                                                 "'marked head'))",
    }
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with streamlit_app(tiny_zoo, OUTPUT / "streamlit-teaching.log") as url, headless_chromium(chromium) as page:
        for path, drawn in pages.items():
            page.goto(f"{url}/{path}", wait_until="domcontentloaded", timeout=90_000)
            wait_for(page, f"({drawn}) && {NO_ERROR}", f"the page {path}", 90)
            if path.startswith("step-through"):
                click(page, "▶")
                wait_for(page, f"{FRAMED_ROW} === 0.5", "the framed row to move down", 30)
            if path.startswith("emerge"):
                click(page, "Train both models")
                wait_for(page, PLOTS + ".some(p => (p.layout.updatemenus || []).length)", "the training animation", 90)
            expect(page.locator('[data-testid="stException"]'), f"an exception on {path}").to_have_count(0)
            page.screenshot(path=OUTPUT / f"teaching-{path.split('?')[0]}.png")


# -- From Luong to the Transformer ------------------------------------------------------------------
def test_multihead_rewrite_is_luongs_step():
    """Identity projections without the scale give Luong's dot step exactly; the heads' energies
    (times sqrt(d_k)) add up to Luong's; every head's weights are a distribution."""
    from teaching.multihead import as_query_keys_values, head_agreement
    rng = np.random.default_rng(0)
    s, H = rng.normal(size=8), rng.normal(size=(5, 8))
    step = as_query_keys_values(s, H, heads=4)
    assert np.allclose(step.qkv_energies, H @ s) and np.allclose(step.qkv_context, step.context)
    assert np.allclose(step.head_energies.sum(0) * np.sqrt(2), H @ s)
    assert step.head_weights.shape == (4, 5) and np.allclose(step.head_weights.sum(1), 1)
    assert np.allclose(step.scaled_weights, np.exp(H @ s / np.sqrt(8)) / np.exp(H @ s / np.sqrt(8)).sum())
    with pytest.raises(ValueError):
        as_query_keys_values(s, H, heads=3)
    words = np.zeros((2, 2, 3, 4))
    words[1, 0, np.arange(3), [3, 1, 0]] = 1  # layer 2 head 1 agrees with the reference on every word
    words[0, 1, np.arange(3), [3, 2, 2]] = 1  # layer 1 head 2 on the first word only
    reference = np.eye(4)[[3, 1, 0]]
    assert head_agreement(words, reference)[1, 0] == 1.0 and np.isclose(head_agreement(words, reference)[0, 1], 1 / 3)


def test_luong_to_transformer_page(tiny_zoo):
    """The formula beside the Luong step's numbers, heatmaps whose rows sum to 1 and are the
    Transformer's own heads, the marked head, a head picker that changes the figure, and the
    encoder's self-attention."""
    at = open_page("luong_to_transformer", text=DIGITS)
    latex = " ".join(x.value for x in at.latex)
    assert r"s_i^\top \bar h_j" in latex and r"\frac{Q K^\top}{\sqrt{d_k}}" in latex and "W^O" in latex
    model, vocab = load_checkpoint(tiny_zoo / "transformer")[:2]
    record = greedy(model, vocab, prepare_source(vocab, DIGITS))
    grid = chart(at, "tf_grid")
    L, H = model.cfg.layers, model.cfg.heads
    assert len(grid["data"]) == L * H
    for n, trace in enumerate(grid["data"]):
        z = array(trace["z"])
        assert np.allclose(z.sum(1), 1.0, atol=1e-4)
        assert np.allclose(z, record.head_weights[:, n // H, n % H], atol=1e-5)
    assert len(shapes(grid, "marked head")) == 1  # the head closest to RNNsearch is framed
    luong = chart(at, "tf_heads")  # the Luong step's heads: rows sum to 1
    assert np.allclose(array(luong["data"][0]["z"]).sum(1), 1.0, atol=1e-6)
    before = array(chart(at, "tf_head_map")["data"][0]["z"])
    picker = at.selectbox(key="tf_head")
    other = next(o for o in picker.options if o != picker.value)
    at = picker.select(other).run()
    assert not at.exception
    after = array(chart(at, "tf_head_map")["data"][0]["z"])
    assert after.shape == before.shape and not np.allclose(after, before)
    assert np.allclose(after.sum(1), 1.0, atol=1e-4)
    encoder = array(chart(at, "tf_encoder")["data"][0]["z"])
    S = len(record.source_tokens)
    assert encoder.shape == (S, S) and np.allclose(encoder, record.encoder_attention[0, 0], atol=1e-5)
    at.slider(key="tf_step").set_value(2).run()
    assert not at.exception


def test_step_through_transformer():
    at = open_page("step_through", EVERY_SECTION, text=DIGITS, model="transformer")
    latex = " ".join(m.value for m in at.markdown)
    assert r"\sqrt{d_k}" in latex and r"\frac{1}{h} \sum_k" in latex
    assert array(chart(at, "step_heads")["data"][0]["z"]).shape[0] == 4


def test_luong_to_transformer_bad_input_and_missing_models(tiny_zoo, tmp_path, monkeypatch):
    """Empty and markup input get the usual messages; without a Transformer or a Luong dot model
    the page says which section needs what, and shows the rest."""
    at = open_page("luong_to_transformer", text=DIGITS)
    at = at.text_area(key="transformer_text").input("   ").run()
    assert not at.exception and any("empty" in i.value for i in at.info)
    at = at.text_area(key="transformer_text").input("<b>1 2</b> 3").run()
    assert not at.exception and not any("empty" in i.value for i in at.info)
    partial = tmp_path / "checkpoints"
    partial.mkdir()
    for name in ("rnnsearch", "luong-dot"):
        (partial / name).symlink_to(tiny_zoo / name)
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(partial))
    at = open_page("luong_to_transformer", text=DIGITS)
    assert any("Transformer is not loaded" in i.value for i in at.info)
    assert chart(at, "tf_heads")  # the Luong sections are still drawn
