"""Step through: the decoder one target word at a time, equations beside their numbers.

For the chosen step i every number comes from the decoding record (``model/search.py``)
or from replaying the same steps (``model/inspect.py``): the query state, the energies
e_ij, the weights α_ij, the context vector c_i as the sum of its terms α_ij h_j, the new
state and the k most probable next tokens. The sections follow the order in which the
decoder computes them, which is exactly where the mechanisms differ:

    RNNsearch (Bahdanau et al. 2014, §3.1):  score → weights → context → RNN step → output
    Luong (Luong et al. 2015, §3):           RNN step → score → weights → context → h̃_i → output

Equation numbers are the ones the docstrings of ``model/decoders.py`` and
``model/attention.py`` cite, so a student can go from this page to the line that made it.
"""
import numpy as np
import streamlit as st

from app_pages.common import plain, query_param
from app_pages.teaching_common import cached_greedy, cached_internals, keep_in_url, pick_model, sentence_input, source_or_stop
from viz.teaching import context_sum, highlighted_heatmap, source_bars, topk_bars, vector_strip

STEP = "step_i"  # session key of the slider: target step i, 1-based as in the papers

LUONG_SCORES = {  # Luong et al. 2015, eq. 8, as in model/attention.py and model/decoders.py
    "dot": r"e_{ij} = s_i^\top \bar h_j",
    "general": r"e_{ij} = s_i^\top W_a \bar h_j",
    "concat": r"e_{ij} = v_a^\top \tanh\left(W_a [s_i ; \bar h_j]\right)",
}

st.title("Step through")
st.caption("Walk the decoder one French token at a time. For the current step every number below is the real "
           "one the model computed, and each equation sits beside the numbers it produces, in the order the "
           "decoder computes them.")

text = sentence_input("step")
c_model, _ = st.columns([2, 3])
with c_model:
    name, entry = pick_model("step_model")
src = source_or_stop(entry, text)
record = cached_greedy(name, text)
internals = cached_internals(name, text, tuple(record.target_ids))
cfg = entry.model.cfg
T = len(record.target_tokens)

# -- which step ------------------------------------------------------------------------------
if STEP not in st.session_state:
    try:
        st.session_state[STEP] = int(query_param("step", "1"))
    except ValueError:
        st.session_state[STEP] = 1
st.session_state[STEP] = min(max(1, st.session_state[STEP]), T)


def move(delta: int) -> None:
    st.session_state[STEP] = min(T, max(1, st.session_state[STEP] + delta))


c_prev, c_slider, c_next = st.columns([1, 12, 1], vertical_alignment="bottom")
c_prev.button("◀", key="step_prev", on_click=move, args=(-1,), help="previous target step",
              disabled=st.session_state[STEP] <= 1)
c_next.button("▶", key="step_next", on_click=move, args=(1,), help="next target step",
              disabled=st.session_state[STEP] >= T)
with c_slider:
    if T > 1:
        i = st.slider("Target step i", 1, T, key=STEP)
    else:
        i = 1
        st.caption("The output has a single token, so there is only step 1.")
keep_in_url(name, text, step=i if i > 1 else None)
k = i - 1  # 0-based row of the record

words = [plain(t) for t in record.target_tokens]
words[k] = f":orange-background[**{words[k]}**]"
previous = "&lt;s&gt;" if k == 0 else plain(record.target_tokens[k - 1])
st.markdown(f"**Step {i} of {T}** · output so far: " + " ".join(words))
st.caption(f"The decoder has written y_<{i} and now emits y_{i} = `{record.target_tokens[k]}`; "
           f"the previous token y_{i - 1} = {previous} is fed back in (⟨s⟩ at step 1).")


def equation(title: str, latex: str | list[str], note: str | None = None):
    """A section: its title and equations on the left; returns the right column for the numbers."""
    left, right = st.columns([1, 1.5], vertical_alignment="top")
    with left:
        st.markdown(f"**{title}**")
        for line in [latex] if isinstance(latex, str) else latex:
            st.latex(line)
        if note:
            st.caption(note)
    return right


def norm(v) -> str:
    return f"{float(np.linalg.norm(v)):.3f}"


def score_and_weights(query_name: str, score_latex: list[str], score_title: str, weights_title: str,
                      softmax_latex: str, values_name: str, context_title: str, context_latex: list[str]):
    """The three sections every attention model shares, with this model's names."""
    energies, weights = record.energies[k], record.weights[k]
    top = int(np.argmax(weights))
    finite = energies[np.isfinite(energies)]
    with equation(score_title, score_latex,
                  f"One energy per source token, from {query_name} and that token's annotation. "
                  f"Here e_{i}j runs from {finite.min():.3f} to {finite.max():.3f}."):
        label = "e′_ij (score + Gaussian)" if record.positions is not None else "e_ij"
        st.plotly_chart(source_bars(energies, record.source_tokens, label, highlight=top), key="step_energies")
    with equation(weights_title, softmax_latex,
                  f"Σ_j α_{i}j = {weights.sum():.4f}. Most weight, {weights[top]:.3f}, on "
                  f"`{record.source_tokens[top]}`."):
        st.plotly_chart(source_bars(weights, record.source_tokens, "α_ij", colour="#009E73", highlight=top,
                                    fmt=".3f"), key="step_weights")
    if internals.values is not None:
        terms = (weights[:, None] * internals.values).sum(0)
        gap = float(np.abs(terms - record.contexts[k]).max())
        with equation(context_title, context_latex,
                      f"Each row is one term α_{i}j·{values_name}; the last row is their sum c_{i} "
                      f"(‖c_{i}‖ = {norm(record.contexts[k])}). The record's c_{i} and this sum differ by at "
                      f"most {gap:.1e}: the same numbers."):
            st.plotly_chart(context_sum(weights, internals.values, record.source_tokens, record.contexts[k]),
                            key="step_context")


def output_section(title: str, latex: list[str]):
    with equation(title, latex, f"The {len(record.topk_tokens[k])} most probable next tokens; the greedy decoder "
                                f"emits the top one, `{record.target_tokens[k]}` "
                                f"(p = {np.exp(record.token_logprobs[k]):.3f})."):
        st.plotly_chart(topk_bars(record.topk_tokens[k], record.topk_probs[k], chosen=record.target_tokens[k]),
                        key="step_topk")


left, right = st.columns([2, 3], gap="large")
with left:
    if record.has_attention:
        st.plotly_chart(highlighted_heatmap(record.weights, record.source_tokens, record.target_tokens, rows=[k],
                                            title=f"α_ij: row {i} is the step explained"), key="step_heatmap")
        st.caption("The framed row is step i: the same α_ij as the bars on the right.")
    else:
        st.info("RNNenc has no attention, so there is no α to draw: every step reads the same fixed vector c "
                "(Cho et al. 2014).", icon=":material/block:")

with right:
    if cfg.decoder == "rnnsearch":
        st.markdown("**RNNsearch** (Bahdanau et al. 2014, §3.1): attention reads the *previous* state "
                    "s_{i−1}, *before* the RNN step. Order: score → weights → context → RNN step → output.")
        with equation("Query: the previous decoder state", r"s_{i-1}",
                      f"{len(record.query_states[k])} numbers, ‖s_{i - 1}‖ = {norm(record.query_states[k])}."):
            st.plotly_chart(vector_strip(record.query_states[k], f"s_{i - 1}"), key="step_query")
        score_and_weights(
            f"s_{i - 1}", [r"e_{ij} = v_a^\top \tanh\left(W_a s_{i-1} + U_a h_j\right)"], "① Score (eq. 6, A.1.2)",
            "② Weights (eq. 6)", r"\alpha_{ij} = \frac{\exp(e_{ij})}{\sum_{k} \exp(e_{ik})}", "h_j",
            "③ Context vector (eq. 5)", [r"c_i = \sum_j \alpha_{ij} h_j"])
        with equation("④ RNN step (eq. 4, A.2.2)", r"s_i = \mathrm{GRU}\left(s_{i-1}, [E y_{i-1} ; c_i]\right)",
                      f"The new state, ‖s_{i}‖ = {norm(record.states[k])}; it becomes the query of step {i + 1}."):
            st.plotly_chart(vector_strip(record.states[k], f"s_{i}"), key="step_state")
        output_section("⑤ Output (A.2.2, deep output)",
                       [r"t_i = \mathrm{maxout}\left(U_o s_i + V_o E y_{i-1} + C_o c_i\right)",
                        r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_o t_i + b_o)"])
    elif cfg.decoder == "luong":
        local = cfg.attention.startswith("local-")
        inner = cfg.attention[len("local-"):] if local else cfg.attention
        st.markdown("**Luong** (Luong et al. 2015, §3): the RNN step comes *first*; attention then reads the "
                    "*current* state s_i. Order: RNN step → score → weights → context → attentional state → output.")
        with equation("① RNN step (input feeding, §3.3)", r"s_i = \mathrm{GRU}\left(s_{i-1}, [E y_{i-1} ; \tilde h_{i-1}]\right)",
                      f"The query is this new state: {len(record.query_states[k])} numbers, "
                      f"‖s_{i}‖ = {norm(record.query_states[k])}."):
            st.plotly_chart(vector_strip(record.query_states[k], f"s_{i}"), key="step_query")
        score_latex = [LUONG_SCORES[inner]]
        note_title = f"② Score, {inner} (eq. 8)"
        if local:
            S = len(record.source_tokens)
            p = float(record.positions[k])
            score_latex = [r"p_i = (S-1)\,\sigma\left(v_p^\top \tanh(W_p s_i)\right)",
                           LUONG_SCORES[inner],
                           r"e'_{ij} = e_{ij} - \frac{(j - p_i)^2}{2\sigma^2}, \quad |j - p_i| \le D,\ \sigma = D/2"]
            note_title = f"② Score, local-p around p_i (eq. 9, 8, 10)"
            st.caption(f"Local-p: the decoder predicts p_{i} = {p:.2f} (of 0…{S - 1}) and only tokens within "
                       f"D = {cfg.local_window} of it get weight; the Gaussian is added to the energies in log "
                       "space (model/attention.py, LocalPAttention).")
        score_and_weights(
            f"s_{i}", score_latex, note_title, "③ Weights (eq. 7)",
            r"\alpha_{ij} = \frac{\exp(e_{ij})}{\sum_{k} \exp(e_{ik})}", "h̄_j",
            "④ Context vector (eq. 7, §3.1)", [r"c_i = \sum_j \alpha_{ij} \bar h_j", r"\bar h_j = W_m h_j"])
        if internals.attentional is not None:
            with equation("⑤ Attentional state (eq. 5)", r"\tilde h_i = \tanh\left(W_c [c_i ; s_i]\right)",
                          f"‖h̃_{i}‖ = {norm(internals.attentional[k])}; it goes to the output and is fed into the "
                          f"next RNN step (input feeding)."):
                st.plotly_chart(vector_strip(internals.attentional[k], f"h̃_{i}"), key="step_attentional")
        output_section("⑥ Output (eq. 6)", [r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_s \tilde h_i)"])
    else:
        st.markdown("**RNNenc** (Cho et al. 2014): no attention. The encoder's final states form one fixed "
                    "vector c, the same at every step.")
        with equation("① RNN step", [r"c = [\overrightarrow{h}_{T_x} ; \overleftarrow{h}_1]",
                                     r"s_i = \mathrm{GRU}\left(s_{i-1}, [E y_{i-1} ; c]\right)"],
                      f"c is the same at every step (‖c‖ = {norm(record.contexts[k])}); ‖s_{i}‖ = {norm(record.states[k])}."):
            st.plotly_chart(vector_strip(record.contexts[k], "c"), key="step_context")
            st.plotly_chart(vector_strip(record.states[k], f"s_{i}"), key="step_state")
        output_section("② Output", [r"t_i = \mathrm{maxout}\left(U_o s_i + V_o E y_{i-1} + C_o c\right)",
                                    r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_o t_i + b_o)"])
