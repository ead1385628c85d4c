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

from ui.figures import chart, export_popover, shared_figure
from ui.url_state import query_param
from ui.widgets import equation_text, plain, sentence_input, small
from ui.zoo_cache import pick_model, target_language
from model.analysis import entropy
from ui.teaching_pages import (cached_energies, cached_greedy, cached_local_p, cached_values, keep_in_url, source_or_stop,
                         step_in_range)
from viz.heatmap import alignment_heatmap
from viz.teaching_figures import context_sum, highlighted_heatmap, local_p_forms, source_bars, topk_bars, vector_strip
from viz.transformer import head_rows

STEP = "step_i"  # session key of the slider: target step i, 1-based as in the papers
GLANCE_WIDTH = 420  # pixels of "Step i at a glance"; the heatmap takes the rest
EQUATION_WIDTH = 460  # pixels of a section's equations; its chart takes the rest of the row (wraps below if narrow)

LUONG_SCORES = {  # Luong et al. 2015, eq. 8, as model/attention.py computes them (concat with U_a's bias b_a)
    "dot": r"e_{ij} = s_i^\top \bar h_j = s_i^\top W_m h_j",
    "general": r"e_{ij} = s_i^\top W_a \bar h_j = s_i^\top W_a W_m h_j",
    "concat": r"e_{ij} = v_a^\top \tanh\left(W_a [s_i ; \bar h_j] + b_a\right)",
}
BAHDANAU_SCORE = r"e_{ij} = v_a^\top \tanh\left(W_a s_{i-1} + U_a h_j + b_a\right)"  # eq. 6, A.1.2, with U_a's bias
MEMORY_BRIDGE = ("$\\bar h_j = W_m h_j$: a learned {rows} × {cols} matrix (no bias) maps the {cols}-wide annotations to the "
                 "decoder's {rows}, and its output is both the keys and the values (Luong et al. score the encoder's states "
                 "directly: there they are as wide as the decoder's).")
DEEP_OUTPUT = ("The deep output reads $s_i$, the state after the step, as eq. 4's $g(y_{i-1}, s_i, c_i)$ does; "
               "Appendix A.2.2 writes $U_o s_{i-1}$ there.")
BIAS_NOTE = " $b_a$ is $U_a$'s bias, which the paper's equation leaves out."
RNNENC_SOURCE = ("after Cho et al. 2014, with the attention models' bidirectional encoder and "
                 "$c = [\\overrightarrow{h}_{T_x} ; \\overleftarrow{h}_1]$: a stronger baseline than theirs, whose "
                 "encoder reads forwards only")
LOCAL_P_FORM = ("Here align is the inner score's softmax over the **whole sentence**, then the Gaussian within the "
                "window; Luong's eq. 10 takes the softmax over the window's 2D + 1 positions only. Both give these "
                "renormalised weights; they differ in the window mass and the context, shown side by side below.")

# The sections each mechanism computes, in its order, as the picker above the slider names them
# (the page draws the chosen ones; their full titles, with the papers' equation numbers, are below)
SECTIONS = {
    "rnnsearch": {"query": "Query", "score": "① Score", "weights": "② Weights", "context": "③ Context",
                  "state": "④ RNN step", "output": "⑤ Output"},
    "luong": {"query": "① RNN step", "score": "② Score", "weights": "③ Weights", "context": "④ Context",
              "local_forms": "Local-p, two forms", "attentional": "⑤ Attentional state", "output": "⑥ Output"},
    "transformer": {"query": "① Query", "heads": "② Per head", "weights": "③ Heads averaged", "output": "④ Output"},
    "rnnenc": {"state": "① RNN step", "output": "② Output"},
}

st.title("Step through")
st.caption("Walk the decoder one French token at a time. Choose the sections of the mechanism to show beside "
           "each step: every number in them is the real one the model computed, and each equation sits beside "
           "the numbers it produces, in the order the decoder computes them.")

text = sentence_input("step")
c_model, c_show = st.columns([2, 3])
with c_model:
    name, entry = pick_model("step_model", ours_only=True)
source_or_stop(entry, text)  # stops the page, with a message, on unusable input
record = cached_greedy(name, text)
cfg = entry.model.cfg
T = len(record.target_tokens)
if record.has_attention:
    # Outside the step's fragment: the whole sentence's heatmap as files, one element per page
    # rerun and none per slider move (the charts below have the camera only)
    export_popover(lambda: alignment_heatmap(record.weights, record.source_tokens, record.target_tokens,
                                             title=entry.display_name, target_language=target_language(entry)),
                   f"alignment-{name}", "step_alignment", where=c_model, label="Heatmap: SVG · PDF · PNG · HTML")
labels = {key: label for key, label in SECTIONS[cfg.decoder].items()
          if key != "local_forms" or (cfg.attention.startswith("local-") and cfg.local_p == "eq10")}
# Outside the step's fragment: a slider move redraws the chosen sections only, not this picker
# (each element is a message the server builds and sends: docs/performance.md). One picker per
# mechanism and form, so a choice made for one model's sections is not offered another's; the
# first visit takes the link's ?sections= (a teacher's link, or a page sent to the class).
SHOW = "step_show_" + "_".join(labels)
if SHOW not in st.session_state:
    st.session_state[SHOW] = [key for key in labels if key in (query_param("sections") or "").split(",")]
shown = set(c_show.pills(
    "Sections beside each step, in the order this model computes them", list(labels), format_func=labels.get,
    selection_mode="multi", key=SHOW,
    help="Each section shows one part of the step: its equations beside this step's numbers. The chosen "
         "ones stay as you move through the steps.") or ())
values = cached_values(name, text) if "context" in shown else None  # the encoder again: only when drawn

# -- which step ------------------------------------------------------------------------------
step_in_range(STEP, T)


def move(delta: int) -> None:
    st.session_state[STEP] = min(T, max(1, st.session_state[STEP] + delta))


def chosen() -> tuple[int, int]:
    """(i, k): the target step the slider chose, 1-based as in the papers, and its 0-based row of the record."""
    i = int(st.session_state[STEP]) if T > 1 else 1
    return i, i - 1


def equation(title: str, latex: str | list[str], note: str | None = None):
    """A section: its title, equations and note as one text on the left; returns the row, for
    the numbers drawn beside them. One row and one text, not columns holding a title, each
    equation and a caption: each element is a message the server builds and sends."""
    row = st.container(horizontal=True, gap="medium")
    row.markdown(equation_text(f"**{title}**", latex, note), width=EQUATION_WIDTH)
    return row


def figure_name(part: str) -> str:
    """The file name the camera gives a section's chart: the model, the step and the part."""
    i = chosen()[0]
    return f"{name}-step{i}-{part}"


def norm(v) -> str:
    return f"{float(np.linalg.norm(v)):.3f}"


def recomputation_gap(energies) -> str:
    """How far the energies scored again from the record's query state are from the decoder's own."""
    i, k = chosen()
    again = cached_energies(name, text)
    if again is None:
        return ""
    same = np.isfinite(energies) == np.isfinite(again[k])
    gap = float(np.abs(np.where(np.isfinite(energies), energies - np.nan_to_num(again[k]), 0.0)).max())
    return (f" Scored again here from the query state by the model's own attention module, $e_{{{i}j}}$ differs "
            f"from the decoder's by at most {gap:.1e}." if same.all() else "")


def score_weights_context(query: str, score_title: str, score_latex: list[str], weights_title: str,
                          context_title: str, context_latex: list[str], value: str, note: str = "",
                          before_score: str = ""):
    """The three sections every attention model shares (score, weights, context), in its own words."""
    i, k = chosen()
    energies, weights = record.energies[k], record.weights[k]
    top = int(np.argmax(weights))
    if "score" in shown:
        finite = energies[np.isfinite(energies)]
        if before_score:
            st.caption(before_score)
        with equation(score_title, score_latex,
                      f"One energy per source token, from ${query}$ and that token's ${value}$: here "
                      f"$e_{{{i}j}}$ runs from {finite.min():.3f} to {finite.max():.3f}."
                      + (" Bars missing: outside the window." if not np.isfinite(energies).all() else "")
                      + recomputation_gap(energies) + note):
            label = "e′_ij (score + Gaussian)" if record.positions is not None else "e_ij"
            chart(shared_figure(record, ("energies", k, label),
                                lambda: source_bars(energies, record.source_tokens, label, highlight=top)),
                  figure_name("energies"), "step_energies")
    if "weights" in shown:
        with equation(weights_title, r"\alpha_{ij} = \frac{\exp(e_{ij})}{\sum_{k} \exp(e_{ik})}",
                      f"$\\sum_j \\alpha_{{{i}j}}$ = {weights.sum():.4f}. The largest weight, {weights[top]:.3f}, "
                      f"goes to `{record.source_tokens[top]}`: the framed row of the heatmap."):
            chart(shared_figure(record, ("weights", k), lambda: source_bars(
                weights, record.source_tokens, "α_ij", colour="#009E73", highlight=top, fmt=".3f")),
                  figure_name("weights"), "step_weights")
    if values is not None and "context" in shown:
        # local-p (eq. 10): the weights the context sums are m_i α_ij, whose total is the window mass m_i
        mass = 1.0 if record.window_masses is None else float(record.window_masses[k])
        gap = float(np.abs(mass * weights @ values - record.contexts[k]).max())
        with equation(context_title, context_latex,
                      f"Each row is one term $\\alpha_{{{i}j}} {value}$; the last row is their sum $c_{{{i}}}$ "
                      + (f"times the window mass $m_{{{i}}}$ = {mass:.3f} " if record.window_masses is not None
                         else "")
                      + f"(‖c‖ = {norm(record.contexts[k])}). The decoder's own $c_{{{i}}}$ and this sum differ "
                      f"by at most {gap:.1e}: the same numbers."):
            chart(context_sum(mass * weights, values, record.source_tokens, record.contexts[k]),
                  figure_name("context"), "step_context")


def vector_section(title: str, latex: str | list[str], vector, label: str, note: str, key: str):
    k = chosen()[1]
    if key in shown:
        with equation(title, latex, f"{note} {len(vector)} numbers, ‖·‖ = {norm(vector)}."):
            chart(shared_figure(record, ("vector", key, k, label), lambda: vector_strip(vector, label)),
                  figure_name(key), f"step_{key}")


def output_section(title: str, latex: list[str], note: str = ""):
    k = chosen()[1]
    if "output" in shown:
        with equation(title, latex, f"The {len(record.topk_tokens[k])} most probable next tokens; greedy decoding "
                                    f"emits the first, `{record.target_tokens[k]}` "
                                    f"($p$ = {np.exp(record.token_logprobs[k]):.3f}). " + note):
            chart(shared_figure(record, ("topk", k), lambda: topk_bars(
                record.topk_tokens[k], record.topk_probs[k], chosen=record.target_tokens[k])),
                  figure_name("topk"), "step_topk")


def step_header() -> None:
    """Which token this step emits, in the output so far."""
    i, k = chosen()
    words = [plain(t) for t in record.target_tokens]
    words[k] = f":orange-background[**{words[k]}**]"
    st.markdown(f"**Step {i} of {T}** · output so far: " + " ".join(words) + "\n\n"
                + small(f"The decoder has written $y_{{<{i}}}$ and now emits $y_{{{i}}}$; the token before it, "
                        f"$y_{{{i - 1}}}$ = {'⟨s⟩' if k == 0 else plain(record.target_tokens[k - 1])}, is fed back in."))


def glance() -> None:
    """The heatmap with the step's row framed, and the step at a glance."""
    i, k = chosen()
    row = st.container(horizontal=True, gap="large")
    if record.has_attention:
        chart(shared_figure(record, ("glance", k), lambda: highlighted_heatmap(
            record.weights, record.source_tokens, record.target_tokens, rows=[k],
            title=f"α_ij: row {i} is the step explained")), figure_name("heatmap"), "step_heatmap", where=row)
    else:
        row.info("RNNenc has no attention, so there is no α to draw: every step reads the same fixed vector c "
                 f"({RNNENC_SOURCE}).", icon=":material/block:")
    lines = [f"#### Step {i} at a glance", "",
             f"- emits $y_{{{i}}}$ = `{record.target_tokens[k]}`, $p$ = {np.exp(record.token_logprobs[k]):.3f}"]
    if record.has_attention:
        top = int(np.argmax(record.weights[k]))
        lines += [f"- looks most at `{record.source_tokens[top]}`, $\\alpha$ = {record.weights[k, top]:.3f}",
                  f"- entropy of $\\alpha_{{{i}}}$: {float(entropy(record.weights[k])):.2f} nats "
                  f"(uniform: {np.log(len(record.source_tokens)):.2f}, one token: 0)"]
    if record.positions is not None:
        lines.append(f"- local-p centre $p_{{{i}}}$ = {float(record.positions[k]):.2f}")
    row.markdown("\n".join(lines) + "\n\n**Order of computation** " + {
        "rnnsearch": "(Bahdanau et al. 2014, §3.1): attention reads the *previous* state, *before* the RNN step.  \n"
                     "score($s_{i-1}$, $h_j$) → weights → context $c_i$ → RNN step $s_i$ → output",
        "luong": "(Luong et al. 2015, §3): the RNN step comes *first*; attention reads the *current* state.  \n"
                 "RNN step $s_i$ → score($s_i$, $\\bar h_j$) → weights → context $c_i$ → attentional state "
                 "$\\tilde h_i$ → output",
        "rnnenc": f"({RNNENC_SOURCE}): no attention.  \nRNN step $s_i$ with the fixed $c$ → output",
        "transformer": "(Vaswani et al. 2017): no recurrence; every layer attends to the target so far, then "
                       "to the source.  \nself-attention → query → scaled dot-product scores, per head → "
                       "weights → heads joined → next layer → output",
    }[cfg.decoder], width=GLANCE_WIDTH)


def sections() -> None:
    """The chosen sections of the mechanism, in the order it computes."""
    if shown:
        st.divider()
    {"rnnsearch": rnnsearch_sections, "luong": luong_sections,
     "transformer": transformer_sections}.get(cfg.decoder, rnnenc_sections)()


def rnnsearch_sections() -> None:
    """Bahdanau's step (RNNsearch): the query is the previous state; attention comes before the RNN step."""
    i, k = chosen()
    vector_section("Query: the previous decoder state", r"s_{i-1}", record.query_states[k], f"s_{i - 1}",
                   f"The state after step {i - 1} ($s_0$ comes from the encoder).", "query")
    score_weights_context("s_{i-1}", "① Score (eq. 6, A.1.2)", [BAHDANAU_SCORE],
                          "② Weights (eq. 6)", "③ Context vector (eq. 5)", [r"c_i = \sum_j \alpha_{ij} h_j"], "h_j",
                          note=BIAS_NOTE)
    vector_section("④ RNN step (eq. 4, A.2.2)", r"s_i = \mathrm{GRU}\left(s_{i-1}, [E y_{i-1} ; c_i]\right)",
                   record.states[k], f"s_{i}", f"The new state; it is the query of step {i + 1}.", "state")
    output_section("⑤ Output (eq. 4; deep output, A.2.2)",
                   [r"t_i = \mathrm{maxout}\left(U_o s_i + V_o E y_{i-1} + C_o c_i\right)",
                    r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_o t_i + b_o)"], DEEP_OUTPUT)


def luong_sections() -> None:
    """Luong's step: the RNN step first, then global or local-p attention on the new state."""
    i, k = chosen()
    local = cfg.attention.startswith("local-")
    inner = cfg.attention[len("local-"):] if local else cfg.attention
    vector_section("① RNN step (input feeding, §3.3)",
                   r"s_i = \mathrm{GRU}\left(s_{i-1}, [E y_{i-1} ; \tilde h_{i-1}]\right)", record.query_states[k],
                   f"s_{i}", "The new state is the query: attention comes after the RNN step.", "query")
    if local:
        score_title, score_latex = "② Score, local-p around $p_i$ (eq. 9, 8, 10)", [
            r"p_i = (S-1)\,\sigma\left(v_p^\top \tanh(W_p s_i)\right)", LUONG_SCORES[inner],
            r"e'_{ij} = e_{ij} - \frac{(j - p_i)^2}{2\sigma^2}, \quad |j - p_i| \le D,\ \sigma = D/2"]
        before = (f"Local-p: the decoder predicts a centre $p_{{{i}}}$ = {float(record.positions[k]):.2f} "
                  f"(positions 0…{len(record.source_tokens) - 1}) and only tokens within D = {cfg.local_window} "
                   "of it get weight. The weights shown are the Gaussian-weighted align renormalised to sum to 1 "
                   "(the Gaussian added to the energies in log space); "
                   + ("the context is their sum times the window mass $m_i$, the share of the inner score's "
                      "attention that the Gaussian window keeps (model/attention.py, LocalPAttention). "
                      + LOCAL_P_FORM if cfg.local_p == "eq10" else
                      "this checkpoint was trained with that renormalised form, so its context is their plain sum."))
    else:
        score_title, score_latex, before = f"② Score, {inner} (eq. 8)", [LUONG_SCORES[inner]], ""
    bridge = entry.model.decoder.W_m.weight.shape
    score_weights_context("s_i", score_title, score_latex, "③ Weights (eq. 7)", "④ Context vector (eq. 7, §3.1)",
                          [r"c_i = m_i \sum_j \alpha_{ij} \bar h_j" if local and cfg.local_p == "eq10"
                           else r"c_i = \sum_j \alpha_{ij} \bar h_j", r"\bar h_j = W_m h_j"], r"\bar h_j",
                          note=" " + MEMORY_BRIDGE.format(rows=bridge[0], cols=bridge[1])
                          + (BIAS_NOTE if inner == "concat" else ""), before_score=before)
    if local and cfg.local_p == "eq10":
        local_p_two_forms()
    if record.attentional is not None:
        vector_section("⑤ Attentional state (eq. 5)", r"\tilde h_i = \tanh\left(W_c [c_i ; s_i]\right)",
                       record.attentional[k], f"h̃_{i}",
                       "It goes to the output layer and is fed into the next RNN step (input feeding).",
                       "attentional")
    output_section("⑥ Output (eq. 6)", [r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_s \tilde h_i)"])


def transformer_sections() -> None:
    """The Transformer's step: one layer's cross-attention query, its heads, their average, the output."""
    i, k = chosen()
    layer = cfg.shown_layer % cfg.layers + 1
    vector_section(f"① Query: layer {layer}'s state after self-attention (§3.2.3)",
                   [r"x' = x + \mathrm{SelfAttention}(\mathrm{LN}(x), \text{positions} \le i)",
                    r"q_i = \mathrm{LN}(x'_i)"], record.query_states[k], f"q_{i}",
                   "No RNN step: the target so far is read by masked self-attention, and the result is the "
                   "query of the cross-attention.", "query")
    src, heads = record.source_tokens, record.head_weights[k, layer - 1]  # h x S
    if "heads" in shown:
        with equation(f"② Scores and weights, per head (eq. 1), layer {layer}",
                      [r"e^{(k)}_{ij} = \frac{(q_i W^Q_k)^\top (h_j W^K_k)}{\sqrt{d_k}}",
                       r"\alpha^{(k)}_{ij} = \mathrm{softmax}_j\big(e^{(k)}_{ij}\big)"],
                      f"Each of the {cfg.heads} heads scores the encoder's output $h_j$ on its own "
                      f"projections and takes its own softmax: here they look most at "
                      + ", ".join(f"`{src[int(j)]}`" for j in heads.argmax(1)) + "."):
            chart(head_rows(heads, src, [f"head {h + 1}" for h in range(cfg.heads)]), figure_name("heads"),
                  "step_heads")
    if "weights" in shown:
        top = int(np.argmax(record.weights[k]))
        with equation("③ The attention shown: heads averaged",
                      r"\alpha_{ij} = \frac{1}{h} \sum_k \alpha^{(k)}_{ij}",
                      f"The matrix the app draws for this model; it sums to {record.weights[k].sum():.4f}. "
                      "The From Luong to the Transformer page shows every layer and head."):
            chart(source_bars(record.weights[k], src, "α_ij", colour="#009E73", highlight=top, fmt=".3f"),
                  figure_name("weights"), "step_weights")
    output_section("④ Output, after the last layer (§3.4)",
                   [r"\mathrm{head}_k = \mathrm{softmax}(e^{(k)}_i)\, (H W^V_k), \quad "
                    r"\mathrm{MultiHead} = [\mathrm{head}_1; \dots; \mathrm{head}_h] W^O",
                    r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_o \mathrm{LN}(x^{(N)}_i))"])


def rnnenc_sections() -> None:
    """RNNenc's step: no attention, the fixed c in every RNN step."""
    i, k = chosen()
    vector_section("① RNN step", [r"c = [\overrightarrow{h}_{T_x} ; \overleftarrow{h}_1]",
                                  r"s_i = \mathrm{GRU}\left(s_{i-1}, [E y_{i-1} ; c]\right)"],
                   record.states[k], f"s_{i}", "The fixed c is the same at every step; this is the new state.",
                   "state")
    output_section("② Output", [r"t_i = \mathrm{maxout}\left(U_o s_i + V_o E y_{i-1} + C_o c\right)",
                                r"p(y_i \mid y_{<i}, x) = \mathrm{softmax}(W_o t_i + b_o)"])


def local_p_two_forms() -> None:
    """This step's local-p in the shipped form and in Luong's eq. 10, from the same e_ij and p_i."""
    i, k = chosen()
    steps = cached_local_p(name, text) if "local_forms" in shown else None
    if steps is None:
        return
    shipped, luong = steps.shipped_context[k], steps.luong_context[k]
    gap = float(np.abs(shipped - record.contexts[k]).max())
    change = float(np.linalg.norm(shipped - luong) / max(np.linalg.norm(luong), 1e-12))
    share = float(steps.shipped_mass[k] / steps.luong_mass[k])
    with equation("Local-p in two forms (eq. 10)",
                  [r"a_i(j) = \mathrm{align}(s_i, \bar h_j)\, \exp\!\left(-\frac{(j - p_i)^2}{2\sigma^2}\right)",
                   r"\text{shipped: } \mathrm{align} = \mathrm{softmax}_{k \in 1..S}(e_{ik})",
                   r"\text{Luong: } \mathrm{align} = \mathrm{softmax}_{k \in [p_i - D,\, p_i + D]}(e_{ik})",
                   r"c_i = \sum_j a_i(j)\, \bar h_j"],
                  f"The same energies $e_{{{i}j}}$ and centre $p_{{{i}}}$, normalised two ways. Window masses: "
                  f"{steps.shipped_mass[k]:.4f} shipped, {steps.luong_mass[k]:.4f} Luong's; the window holds "
                  f"{share:.2%} of the whole-sentence align, so the contexts differ by {change:.1%} (relative). "
                  f"They coincide when align puts all its mass inside the window. The shipped context is the "
                  f"decoder's own $c_{{{i}}}$ (largest difference {gap:.1e})."):
        chart(local_p_forms({"shipped (softmax over the sentence)": (steps.shipped_weights[k], shipped),
                             "Luong eq. 10 (softmax over the window)": (steps.luong_weights[k], luong)},
                            record.source_tokens), figure_name("local-p-forms"), "step_local_forms")


@st.fragment
def step_view() -> None:
    """The chosen step, from the slider down. A fragment: moving the slider or pressing ◀ ▶
    reruns only this part, not the sentence box, the model picker and the decoding above it.
    The sections read the step from the session (``chosen``), never from a global this writes: a
    shared run's fragment (server/streamlit_patches/replay.py) runs in the run's namespace, for
    every session that shares it."""
    row = st.container(horizontal=True, vertical_alignment="bottom")  # ◀ slider ▶, in that order
    row.button("◀", key="step_prev", on_click=move, args=(-1,), help="previous target step",
               disabled=st.session_state[STEP] <= 1)
    if T > 1:
        i = row.slider("Target step i", 1, T, key=STEP)
    else:
        i = 1
        row.caption("The output has a single token, so there is only step 1.")
    row.button("▶", key="step_next", on_click=move, args=(1,), help="next target step",
               disabled=st.session_state[STEP] >= T)
    keep_in_url(name, text, step=i if i > 1 else None, sections=",".join(key for key in labels if key in shown) or None)
    step_header()
    glance()
    sections()


step_view()
