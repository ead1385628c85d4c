"""Step through: the decoder one target word at a time, equations beside their numbers.

For the chosen step i every number comes from the decoding record (``model/search.py``)
or from the encoder (``model/internals.py``): the query state, the energies
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

from app_pages.common import plain
from model.analysis import entropy
from app_pages.teaching_common import (cached_greedy, cached_values, keep_in_url, pick_model, sentence_input,
                                       source_or_stop, step_in_range)
from viz.teaching import context_sum, highlighted_heatmap, source_bars, topk_bars, vector_strip
from viz.transformer import head_rows

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
    name, entry = pick_model("step_model", ours_only=True)
source_or_stop(entry, text)  # stops the page, with a message, on unusable input
record = cached_greedy(name, text)
values = cached_values(name, text)
cfg = entry.model.cfg
T = len(record.target_tokens)

# -- which step ------------------------------------------------------------------------------
step_in_range(STEP, T)


def move(delta: int) -> None:
    st.session_state[STEP] = min(T, max(1, st.session_state[STEP] + delta))


def equation(title: str, latex: str | list[str], note: str | None = None):
    """A section: its title and equations on the left; returns the right column, for the numbers."""
    left, right = st.columns([2, 3], vertical_alignment="top", gap="medium")
    with left:
        st.markdown(f"**{title}**")
        for line in [latex] if isinstance(latex, str) else latex:
            st.latex(line)
        if note:
            st.caption(note)
    return right


def norm(v) -> str:
    return f"{float(np.linalg.norm(v)):.3f}"


def score_weights_context(query: str, score_title: str, score_latex: list[str], weights_title: str,
                          context_title: str, context_latex: list[str], value: str):
    """The three sections every attention model shares (score, weights, context), in its own words."""
    energies, weights = record.energies[k], record.weights[k]
    top = int(np.argmax(weights))
    finite = energies[np.isfinite(energies)]
    with equation(score_title, score_latex,
                  f"One energy per source token, from ${query}$ and that token's ${value}$: here "
                  f"$e_{{{i}j}}$ runs from {finite.min():.3f} to {finite.max():.3f}."
                  + (" Bars missing: outside the window." if not np.isfinite(energies).all() else "")):
        label = "e′_ij (score + Gaussian)" if record.positions is not None else "e_ij"
        st.plotly_chart(source_bars(energies, record.source_tokens, label, highlight=top), key="step_energies")
    with equation(weights_title, r"\alpha_{ij} = \frac{\exp(e_{ij})}{\sum_{k} \exp(e_{ik})}",
                  f"$\\sum_j \\alpha_{{{i}j}}$ = {weights.sum():.4f}. The largest weight, {weights[top]:.3f}, goes "
                  f"to `{record.source_tokens[top]}`: the framed row of the heatmap."):
        st.plotly_chart(source_bars(weights, record.source_tokens, "α_ij", colour="#009E73", highlight=top,
                                    fmt=".3f"), key="step_weights")
    if values is not None:
        # local-p (eq. 10): the weights the context sums are m_i α_ij, whose total is the window mass m_i
        mass = 1.0 if record.window_masses is None else float(record.window_masses[k])
        gap = float(np.abs(mass * weights @ values - record.contexts[k]).max())
        with equation(context_title, context_latex,
                      f"Each row is one term $\\alpha_{{{i}j}} {value}$; the last row is their sum $c_{{{i}}}$ "
                      + (f"times the window mass $m_{{{i}}}$ = {mass:.3f} " if record.window_masses is not None else "")
                      + f"(‖c‖ = {norm(record.contexts[k])}). The decoder's own $c_{{{i}}}$ and this sum differ by "
                      f"at most {gap:.1e}: the same numbers."):
            st.plotly_chart(context_sum(mass * weights, values, record.source_tokens, record.contexts[k]),
                            key="step_context")


def vector_section(title: str, latex: str | list[str], vector, label: str, note: str, key: str):
    with equation(title, latex, f"{note} {len(vector)} numbers, ‖·‖ = {norm(vector)}."):
        st.plotly_chart(vector_strip(vector, label), key=key)


def output_section(title: str, latex: list[str]):
    with equation(title, latex, f"The {len(record.topk_tokens[k])} most probable next tokens; greedy decoding "
                                f"emits the first, `{record.target_tokens[k]}` "
                                f"($p$ = {np.exp(record.token_logprobs[k]):.3f})."):
        st.plotly_chart(topk_bars(record.topk_tokens[k], record.topk_probs[k], chosen=record.target_tokens[k]),
                        key="step_topk")


def step_header() -> None:
    """Which token this step emits, in the output so far."""
    words = [plain(t) for t in record.target_tokens]
    words[k] = f":orange-background[**{words[k]}**]"
    st.markdown(f"**Step {i} of {T}** · output so far: " + " ".join(words))
    st.caption(f"The decoder has written $y_{{<{i}}}$ and now emits $y_{{{i}}}$; the token before it, "
               f"$y_{{{i - 1}}}$ = {'⟨s⟩' if k == 0 else plain(record.target_tokens[k - 1])}, is fed back in.")


def glance() -> None:
    """The heatmap with the step's row framed, and the step at a glance."""
    c_map, c_glance = st.columns([3, 2], gap="large")
    with c_map:
        if record.has_attention:
            st.plotly_chart(highlighted_heatmap(record.weights, record.source_tokens, record.target_tokens, rows=[k],
                                                title=f"α_ij: row {i} is the step explained"), key="step_heatmap")
        else:
            st.info("RNNenc has no attention, so there is no α to draw: every step reads the same fixed vector c "
                    "(Cho et al. 2014).", icon=":material/block:")
    with c_glance:
        st.markdown(f"#### Step {i} at a glance")
        lines = [f"- emits $y_{{{i}}}$ = `{record.target_tokens[k]}`, $p$ = {np.exp(record.token_logprobs[k]):.3f}"]
        if record.has_attention:
            top = int(np.argmax(record.weights[k]))
            lines += [f"- looks most at `{record.source_tokens[top]}`, $\\alpha$ = {record.weights[k, top]:.3f}",
                      f"- entropy of $\\alpha_{{{i}}}$: {float(entropy(record.weights[k])):.2f} nats "
                      f"(uniform: {np.log(len(record.source_tokens)):.2f}, one token: 0)"]
        if record.positions is not None:
            lines.append(f"- local-p centre $p_{{{i}}}$ = {float(record.positions[k]):.2f}")
        st.markdown("\n".join(lines))
        st.markdown("**Order of computation** " + {
            "rnnsearch": "(Bahdanau et al. 2014, §3.1): attention reads the *previous* state, *before* the RNN step.  \n"
                         "score($s_{i-1}$, $h_j$) → weights → context $c_i$ → RNN step $s_i$ → output",
            "luong": "(Luong et al. 2015, §3): the RNN step comes *first*; attention reads the *current* state.  \n"
                     "RNN step $s_i$ → score($s_i$, $\\bar h_j$) → weights → context $c_i$ → attentional state "
                     "$\\tilde h_i$ → output",
            "rnnenc": "(Cho et al. 2014): no attention.  \nRNN step $s_i$ with the fixed $c$ → output",
            "transformer": "(Vaswani et al. 2017): no recurrence; every layer attends to the target so far, then "
                           "to the source.  \nself-attention → query → scaled dot-product scores, per head → "
                           "weights → heads joined → next layer → output",
        }[cfg.decoder])


def sections() -> None:
    """The mechanism, section by section, in the order it computes."""
    st.divider()
    if cfg.decoder == "rnnsearch":
        vector_section("Query: the previous decoder state", r"s_{i-1}", record.query_states[k], f"s_{i - 1}",
                       f"The state after step {i - 1} ($s_0$ comes from the encoder).", "step_query")
        score_weights_context("s_{i-1}", "① Score (eq. 6, A.1.2)",
                              [r"e_{ij} = v_a^\top \tanh\left(W_a s_{i-1} + U_a h_j\right)"],
                              "② Weights (eq. 6)", "③ Context vector (eq. 5)", [r"c_i = \sum_j \alpha_{ij} h_j"], "h_j")
        vector_section("④ RNN step (eq. 4, A.2.2)", r"s_i = \mathrm{GRU}\left(s_{i-1}, [E y_{i-1} ; c_i]\right)",
                       record.states[k], f"s_{i}", f"The new state; it is the query of step {i + 1}.", "step_state")
        output_section("⑤ Output (A.2.2, deep output)",
                       [r"t_i = \mathrm{maxout}\left(U_o s_i + V_o E y_{i-1} + C_o c_i\right)",
                        r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_o t_i + b_o)"])
    elif cfg.decoder == "luong":
        local = cfg.attention.startswith("local-")
        inner = cfg.attention[len("local-"):] if local else cfg.attention
        vector_section("① RNN step (input feeding, §3.3)",
                       r"s_i = \mathrm{GRU}\left(s_{i-1}, [E y_{i-1} ; \tilde h_{i-1}]\right)", record.query_states[k],
                       f"s_{i}", "The new state is the query: attention comes after the RNN step.", "step_query")
        if local:
            score_title, score_latex = "② Score, local-p around $p_i$ (eq. 9, 8, 10)", [
                r"p_i = (S-1)\,\sigma\left(v_p^\top \tanh(W_p s_i)\right)", LUONG_SCORES[inner],
                r"e'_{ij} = e_{ij} - \frac{(j - p_i)^2}{2\sigma^2}, \quad |j - p_i| \le D,\ \sigma = D/2"]
            st.caption(f"Local-p: the decoder predicts a centre $p_{{{i}}}$ = {float(record.positions[k]):.2f} "
                       f"(positions 0…{len(record.source_tokens) - 1}) and only tokens within D = {cfg.local_window} "
                       "of it get weight. The weights shown are eq. 10's, renormalised to sum to 1 (the Gaussian added "
                       "to the energies in log space); "
                       + ("the context is their sum times the window mass $m_i$, the share of the inner score's "
                          "attention that the Gaussian window keeps (model/attention.py, LocalPAttention)."
                          if cfg.local_p == "eq10" else
                          "this checkpoint was trained with that renormalised form, so its context is their plain sum."))
        else:
            score_title, score_latex = f"② Score, {inner} (eq. 8)", [LUONG_SCORES[inner]]
        score_weights_context("s_i", score_title, score_latex, "③ Weights (eq. 7)", "④ Context vector (eq. 7, §3.1)",
                              [r"c_i = m_i \sum_j \alpha_{ij} \bar h_j" if local and cfg.local_p == "eq10"
                               else r"c_i = \sum_j \alpha_{ij} \bar h_j", r"\bar h_j = W_m h_j"], r"\bar h_j")
        if record.attentional is not None:
            vector_section("⑤ Attentional state (eq. 5)", r"\tilde h_i = \tanh\left(W_c [c_i ; s_i]\right)",
                           record.attentional[k], f"h̃_{i}",
                           "It goes to the output layer and is fed into the next RNN step (input feeding).",
                           "step_attentional")
        output_section("⑥ Output (eq. 6)", [r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_s \tilde h_i)"])
    elif cfg.decoder == "transformer":
        layer = cfg.shown_layer % cfg.layers + 1
        vector_section(f"① Query: layer {layer}'s state after self-attention (§3.2.3)",
                       [r"x' = x + \mathrm{SelfAttention}(\mathrm{LN}(x), \text{positions} \le i)",
                        r"q_i = \mathrm{LN}(x'_i)"], record.query_states[k], f"q_{i}",
                       "No RNN step: the target so far is read by masked self-attention, and the result is the "
                       "query of the cross-attention.", "step_query")
        src, heads = record.source_tokens, record.head_weights[k, layer - 1]  # h x S
        with equation(f"② Scores and weights, per head (eq. 1), layer {layer}",
                      [r"e^{(k)}_{ij} = \frac{(q_i W^Q_k)^\top (h_j W^K_k)}{\sqrt{d_k}}",
                       r"\alpha^{(k)}_{ij} = \mathrm{softmax}_j\big(e^{(k)}_{ij}\big)"],
                      f"Each of the {cfg.heads} heads scores the encoder's output $h_j$ on its own projections and "
                      f"takes its own softmax: here they look most at "
                      + ", ".join(f"`{src[int(j)]}`" for j in heads.argmax(1)) + "."):
            st.plotly_chart(head_rows(heads, src, [f"head {h + 1}" for h in range(cfg.heads)]), key="step_heads")
        top = int(np.argmax(record.weights[k]))
        with equation("③ The attention shown: heads averaged", r"\alpha_{ij} = \frac{1}{h} \sum_k \alpha^{(k)}_{ij}",
                      f"The matrix the app draws for this model; it sums to {record.weights[k].sum():.4f}. "
                      "The From Luong to the Transformer page shows every layer and head."):
            st.plotly_chart(source_bars(record.weights[k], src, "α_ij", colour="#009E73", highlight=top, fmt=".3f"),
                            key="step_weights")
        output_section("④ Output, after the last layer (§3.4)",
                       [r"\mathrm{head}_k = \mathrm{softmax}(e^{(k)}_i)\, (H W^V_k), \quad "
                        r"\mathrm{MultiHead} = [\mathrm{head}_1; \dots; \mathrm{head}_h] W^O",
                        r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_o \mathrm{LN}(x^{(N)}_i))"])
    else:
        vector_section("① RNN step", [r"c = [\overrightarrow{h}_{T_x} ; \overleftarrow{h}_1]",
                                      r"s_i = \mathrm{GRU}\left(s_{i-1}, [E y_{i-1} ; c]\right)"],
                       record.states[k], f"s_{i}", "The fixed c is the same at every step; this is the new state.",
                       "step_state")
        output_section("② Output", [r"t_i = \mathrm{maxout}\left(U_o s_i + V_o E y_{i-1} + C_o c\right)",
                                    r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_o t_i + b_o)"])


@st.fragment
def step_view() -> None:
    """The chosen step, from the slider down. A fragment: moving the slider or pressing ◀ ▶
    reruns only this part, not the sentence box, the model picker and the decoding above it.
    i and k are the page's globals, which the sections read."""
    global i, k
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
    step_header()
    glance()
    sections()


step_view()
