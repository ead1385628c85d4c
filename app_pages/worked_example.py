"""The worked example: one attention step by hand, "Turn off the lights".

A tiny additive attention network (hidden size 4, alignment layer of 3 units) applied to
four annotations, with every intermediate matrix shown with its shape and values: the
concatenated [s_{i-1} ; h_j] (4 x 8), the weights W (8 x 3) and v (3 x 1), tanh, the
energies, the softmax and the context vector. The student changes the inputs (a random
seed, or any number in the tables) and every value updates. The dot-product score runs on
the same inputs, so the difference in parameters and cost is visible. The arithmetic is
``teaching/worked_example.py``; this page only lays it out.
"""
import numpy as np
import pandas as pd
import streamlit as st

from ui.figures import chart_with_export
from ui.url_state import from_link, int_param, set_query_params
from ui.widgets import equation_text
from ui.zoo_cache import shared_result
from teaching.worked_example import (additive_attention, ALIGNMENT, cost, dot_attention, HIDDEN, random_inputs,
                                  SOURCE_WORDS, WorkedInputs)
from viz.teaching_figures import latex_matrix, shaped, weight_comparison

WORDS = list(SOURCE_WORDS)
N, H, A = len(WORDS), HIDDEN, ALIGNMENT
MAX_SEED = 10_000

st.title("Worked example")
st.caption("Attention by hand on a four-word sentence, as it is taught: hidden size 4, an alignment layer of 3 "
           "units. Change the seed or edit any number and every value below follows.")
st.markdown("The decoder is about to write the next French word of *Turn off the lights → Éteins les lumières*. "
            "It holds its previous state $s_{i-1}$; the encoder has left one annotation $h_j$ per English word. "
            "Attention decides how much of each $h_j$ goes into the context vector $c_i$.")

# -- inputs -------------------------------------------------------------------------------------
from_link("we_seed", lambda: int_param("seed", 0, 0, MAX_SEED))
seed = int(st.number_input("Random seed", min_value=0, max_value=MAX_SEED, step=1, key="we_seed",
                           help="Draws new inputs and weights, uniform in [−1, 1], rounded to one decimal."))
set_query_params(seed=seed if seed else None)
drawn = random_inputs(seed)


EDITS = "we_edits"  # {"seed": the seed, "values": {name: array}}: the numbers as last edited


def edited(label: str, values: np.ndarray, index: list[str], columns: list[str], key: str) -> np.ndarray:
    """An editable table of numbers; its key carries the seed, so a new seed starts it afresh."""
    st.markdown(label)
    frame = pd.DataFrame(np.atleast_2d(values), index=index, columns=columns)
    config = {c: st.column_config.NumberColumn(c, format="%.2f", step=0.1) for c in columns}
    return st.data_editor(frame, key=f"{key}_{seed}", column_config=config, width="content").to_numpy(dtype=float)


# The four tables are drawn only while their panel is open (opening it reruns the page): closed,
# they would still cost a third of the page's run, on every rerun and for every follower of a
# class the teacher sends it to. What was edited is kept for the seed and is where the tables
# start when the panel opens again ("base": fixed while it is open, so the tables stay as drawn).
NAMES = ("decoder_state", "annotations", "W", "v")
kept = st.session_state.get(EDITS)
if not kept or kept.get("seed") != seed:
    kept = {"seed": seed, "base": None, "values": None}
seeds = {name: getattr(drawn, name) for name in NAMES}
panel = st.expander("Edit the numbers", key="we_edit", on_change="rerun", icon=":material/edit:")
if panel.open:
    start = kept["base"] or seeds
    with panel:
        dims = [f"d{d + 1}" for d in range(H)]
        c1, c2 = st.columns(2)
        with c1:
            s_prev = edited("Decoder state $s_{i-1}$ (1 × 4)", start["decoder_state"], ["s_{i−1}"], dims, "we_s")
            annotations = edited("Annotations $h_j$, one row per word (4 × 4)", start["annotations"], WORDS, dims,
                                 "we_h")
        with c2:
            W = edited("Alignment weights $W$ (8 × 3): rows 1–4 are $W_a^\\top$ (act on $s_{i-1}$), rows 5–8 are "
                       "$U_a^\\top$ (act on $h_j$)", start["W"], [f"s·{d}" for d in dims] + [f"h·{d}" for d in dims],
                       [f"u{a + 1}" for a in range(A)], "we_W")
            v = edited("Output weights $v = v_a$ (3 × 1)", start["v"], [f"u{a + 1}" for a in range(A)], ["v"], "we_v")
    kept = {**kept, "values": dict(decoder_state=s_prev, annotations=annotations, W=W, v=v)}
else:
    s_prev, annotations, W, v = ((kept["values"] or seeds)[name] for name in NAMES)
    kept = {**kept, "base": kept["values"]}
st.session_state[EDITS] = kept
try:
    inputs = WorkedInputs(decoder_state=s_prev, annotations=annotations, W=W, v=v)
except ValueError as e:
    st.warning(f"{e}. Showing the seed's numbers instead.", icon=":material/warning:")
    inputs = drawn

additive = additive_attention(inputs)
dot = dot_attention(inputs)
st.latex(r"s_{i-1} = " + shaped(latex_matrix(inputs.decoder_state), 1, H) + r",\qquad H = "
         + shaped(latex_matrix(inputs.annotations, WORDS), N, H))


def show(title: str, latex: str | list[str], note: str | None = None) -> None:
    """One step: its title, equations and note as one text, as Step through's sections."""
    st.markdown(equation_text(title, latex, note))


def context_lines(steps) -> list[str]:
    """c_i as its four terms α_j h_j, then their sum (two lines, so both fit the page)."""
    terms = latex_matrix(steps.contributions, [f"α·h ({w})" for w in WORDS], digits=3)
    return [r"\alpha_j h_j = " + shaped(terms, N, H),
            r"c_i = \sum_j \alpha_j h_j = \alpha^\top H = " + shaped(latex_matrix(steps.context, digits=3), 1, H)]


# -- additive -------------------------------------------------------------------------------------
def additive_tab() -> None:
    st.latex(r"e_{ij} = v_a^\top \tanh\left(W_a s_{i-1} + U_a h_j\right) \qquad \text{(Bahdanau eq. 6, A.1.2)}")
    st.caption("Written for all four words at once: put $s_{i-1}$ beside every $h_j$ and multiply by one matrix $W$ "
               "whose top half is $W_a^\\top$ and bottom half $U_a^\\top$, so row $j$ of $XW$ is "
               "$W_a s_{i-1} + U_a h_j$.")
    show("**1. Concatenate** the state with each annotation",
         r"X = [\,s_{i-1} ; h_j\,]_{j=1..4} = "
         + shaped(latex_matrix(additive.concat, WORDS, split_column=H), N, 2 * H),
         "Left of the bar: $s_{i-1}$, the same in every row; right: the word's own annotation $h_j$.")
    show("**2. Project** onto the alignment layer",
         r"Z = X W = " + shaped("X", N, 2 * H) + shaped(latex_matrix(inputs.W, split_after=H), 2 * H, A)
         + " = " + shaped(latex_matrix(additive.pre_activation, WORDS), N, A))
    show("**3. Squash** with tanh", r"\tanh(Z) = " + shaped(latex_matrix(additive.hidden, WORDS, digits=3), N, A))
    show("**4. Energies**: one number per word",
         r"e = \tanh(Z)\, v = " + shaped(r"\tanh(Z)", N, A) + shaped(latex_matrix(inputs.v), A, 1)
         + " = " + shaped(latex_matrix(additive.energies, WORDS, digits=3), N, 1))
    show("**5. Softmax**: energies become weights that sum to 1 (eq. 6)",
         r"\alpha_j = \frac{\exp(e_j)}{\sum_k \exp(e_k)} \;\Rightarrow\; \alpha = "
         + shaped(latex_matrix(additive.weights, WORDS, digits=3), N, 1),
         f"$\\sum_j \\alpha_j$ = {additive.weights.sum():.3f}")
    show("**6. Context vector**: the weighted sum of the annotations (eq. 5)", context_lines(additive))

@shared_result()
def cost_table(words: int, hidden: int, alignment: int):
    """The two scores' costs as an Arrow table, converted from pandas once per process (``st.dataframe``
    converts a pandas frame on every run; the bytes it sends are the same)."""
    import pyarrow as pa
    return pa.Table.from_pandas(pd.DataFrame(cost(words, hidden, alignment)).set_index("score"))


# -- dot ----------------------------------------------------------------------------------------
def dot_tab() -> None:
    st.latex(r"e_{ij} = s_i^\top h_j \qquad \text{(Luong eq. 8, dot)}")
    st.caption("The same inputs, scored by a plain dot product: no weights to learn, no tanh. (Luong's decoder "
               "scores the state *after* its RNN step; here both scores read the same vector, to compare them. "
               "The shipped luong-dot scores s_iᵀ W_m h_j, with a learned W_m: see the Compare page.)")
    show("**1. Energies**: each annotation dotted with the state",
         r"e = H\, s_{i-1} = " + shaped(latex_matrix(inputs.annotations, WORDS), N, H)
         + shaped(latex_matrix(inputs.decoder_state.reshape(-1, 1)), H, 1)
         + " = " + shaped(latex_matrix(dot.energies, WORDS, digits=3), N, 1))
    show("**2. Softmax**", r"\alpha = " + shaped(latex_matrix(dot.weights, WORDS, digits=3), N, 1),
         f"$\\sum_j \\alpha_j$ = {dot.weights.sum():.3f}")
    show("**3. Context vector**: the same weighted sum, with the dot product's weights", context_lines(dot))

# -- compare -------------------------------------------------------------------------------------
def compare_tab() -> None:
    chart_with_export(weight_comparison({"additive": additive.weights, "dot": dot.weights}, WORDS),
                      "worked-example-weights", "we_weights")
    st.dataframe(cost_table(N, H, A), key="we_cost")
    st.caption("Additive attention learns 2·4·3 + 3 = 27 numbers and pays a small network per word; the dot "
               "product on its own learns none and costs 4 multiplications per word, but needs s and h_j of the "
               "same size and can only measure their similarity. The shipped luong-dot is not parameter-free: its "
               "annotations (512 wide) first pass through a learned W_m to the decoder's 256, so it scores "
               "s_iᵀ W_m h_j and learns what to look for through W_m. The real RNNsearch computes U_a h_j "
               "(plus a bias this example leaves out) once per sentence (model/attention.py, compute_proj_keys), "
               "so each decoder step only pays for W_a s_{i−1}, the tanh and v_a.")


# only the chosen tab is drawn (choosing one reruns the page): a class the teacher sends here opens on
# the first, and the other two were half of the elements every follower's run drew and sent
for tab, draw_tab in zip(st.tabs(["Additive (Bahdanau)", "Dot product (Luong)", "Compare"], key="we_tab",
                                 on_change="rerun"), (additive_tab, dot_tab, compare_tab)):
    if tab.open:
        with tab:
            draw_tab()
