"""From Luong to the Transformer: the Transformer's attention built from what the class just saw.

1. One decoder step of Luong ``dot`` (Luong et al. 2015, eq. 8, 7) with the trained model's numbers.
2. The same step written as queries, keys and values, softmax(QKᵀ/√d_k)V (Vaswani et al. 2017,
   eq. 1): with identity projections and no scale it gives the very same numbers.
3. Several heads: the same vectors split into h slices, one softmax per slice (§3.2.2).
4. The trained Transformer's real cross-attention for the sentence, every layer × head, with
   the head that agrees most with RNNsearch (Bahdanau) marked; and its encoder self-attention.

The numbers of 1–3 come from ``teaching/multihead.py`` on the Luong model's decoding record;
4 from the Transformer's record (``model/transformer.py``). Each section says which model
it needs and shows a message, not an error, when that model is not loaded.
"""
import numpy as np
import pandas as pd
import streamlit as st

from ui.figures import chart, chart_with_export
from ui.url_state import query_param, set_query_params
from ui.widgets import plain, sentence_input
from ui.zoo_cache import target_language, usable_models
from ui.teaching_pages import cached_forced, cached_greedy, cached_values, source_or_stop, step_in_range
from model.analysis import merge_to_words
from model.hf import attention_layer_note
from teaching.multihead import as_query_keys_values, head_agreement
from viz.heatmap import alignment_heatmap
from viz.teaching_figures import source_bars, weight_comparison
from viz.transformer import head_grid, head_rows, self_attention_heatmap

HEADS = 4  # the heads section splits Luong's d = 256 into 4 slices, as the shipped Transformer has 4 heads
STEP = "tf_step"

st.title("From Luong to the Transformer")
st.caption("The Transformer's attention is Luong's, with learned projections, a scale and several heads. Follow "
           "one decoder step from Luong's dot score to scaled dot-product attention, then see where a trained "
           "Transformer's heads look for the same sentence.")
models = usable_models("there is nothing to show", attention_only=True)


def find(decoder: str, attention: str | None = None, prefer: str = "") -> str | None:
    """The loaded model of this kind (the one named ``prefer`` first), or None."""
    names = [n for n, e in models.items() if e.model.cfg.decoder == decoder
             and (attention is None or e.model.cfg.attention == attention)]
    return prefer if prefer in names else (names[0] if names else None)


luong, transformer, bahdanau = find("luong", "dot", "luong-dot"), find("transformer"), find("rnnsearch")
text = sentence_input("transformer")
set_query_params(text=text.strip() or None)


def columns():
    return st.columns([2, 3], vertical_alignment="top", gap="medium")


# -- 1–3: one Luong step, three ways --------------------------------------------------------------
@st.fragment
def luong_step() -> None:
    """The step slider reruns only this part."""
    record, values = cached_greedy(luong, text), cached_values(luong, text)
    T = len(record.target_tokens)
    step_in_range(STEP, T)
    i = st.slider("Target step i", 1, T, key=STEP) if T > 1 else 1
    k = i - 1
    step = as_query_keys_values(record.query_states[k], values, heads=HEADS)
    src = record.source_tokens
    top = int(np.argmax(step.weights))
    st.markdown(f"{models[luong].display_name} translates: **{plain(record.translation)}**. Step {i} emits "
                f"`{record.target_tokens[k]}` and looks most at `{src[top]}`.")

    st.subheader("① One step of Luong's dot attention")
    left, right = columns()
    with left:
        st.latex(r"e_{ij} = s_i^\top \bar h_j")
        st.latex(r"\alpha_{ij} = \frac{\exp(e_{ij})}{\sum_k \exp(e_{ik})}")
        st.latex(r"c_i = \sum_j \alpha_{ij} \bar h_j")
        gap = float(np.abs(step.energies - record.energies[k]).max())
        st.caption(f"Luong et al. 2015, eq. 8 (dot) and eq. 7. "
                   f"$s_{{{i}}}$ is the decoder state after its RNN step, $\\bar h_j = W_m h_j$ the {len(src)} source "
                   f"annotations mapped by the learned memory bridge $W_m$ (so the score is $s_i^\\top W_m h_j$), all "
                   f"d = {step.d} wide. Recomputed here from those vectors, $e_{{{i}j}}$ differs "
                   f"from the decoder's own by at most {gap:.1e}.")
    with right:
        # in the slider's fragment: the camera only, no widget added to a slider move
        chart(source_bars(step.weights, src, "α_ij", colour="#009E73", highlight=top, fmt=".3f"),
              f"{luong}-step{i}-weights", "tf_luong_weights")

    st.subheader("② The same step as queries, keys and values")
    left, right = columns()
    with left:
        st.latex(r"Q = s_i W^Q,\quad K = \bar H W^K,\quad V = \bar H W^V")
        st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V")
        same_e = float(np.abs(step.qkv_energies - step.energies).max())
        same_c = float(np.abs(step.qkv_context - step.context).max())
        st.caption(f"Vaswani et al. 2017, eq. 1. The decoder state is the **query**, the annotations are the "
                   f"**keys** and the **values**. With "
                   f"$W^Q = W^K = W^V = I$ and no scale, $QK^\\top$ is Luong's $e_{{{i}j}}$ (largest difference "
                   f"{same_e:.1e}) and $\\mathrm{{softmax}}(QK^\\top)V$ is $c_{{{i}}}$ ({same_c:.1e}). The Transformer "
                   f"learns the three projections and divides by $\\sqrt{{d_k}}$, here √{step.d} ≈ {np.sqrt(step.d):.1f}: dot "
                   "products of wide vectors grow with the width, and an ever sharper softmax stops learning. The "
                   "bars show what the scale alone does to this step's weights.")
    with right:
        chart(weight_comparison({"softmax(e): Luong": step.weights, f"softmax(e / √{step.d})": step.scaled_weights},
                                src), f"{luong}-step{i}-scaled", "tf_scale")

    st.subheader(f"③ Several heads: {HEADS} slices, {HEADS} softmaxes")
    left, right = columns()
    with left:
        st.latex(r"\mathrm{head}_k = \mathrm{softmax}\!\left(\frac{Q_k K_k^\top}{\sqrt{d_k}}\right) V_k")
        st.latex(r"\mathrm{MultiHead} = [\mathrm{head}_1 ; \dots ; \mathrm{head}_h]\, W^O")
        total = float(np.abs(step.head_energies.sum(0) * np.sqrt(step.d_k) - step.energies).max())
        spread = [src[int(j)] for j in step.head_weights.argmax(1)]
        st.caption(f"Split $s_{{{i}}}$ and every $\\bar h_j$ into h = {HEADS} slices of $d_k$ = {step.d_k}: a dot "
                   f"product is a sum over dimensions, so the {HEADS} heads' energies (times $\\sqrt{{d_k}}$) add up "
                   f"to Luong's exactly (difference {total:.1e}); but each head has its own softmax, so each can "
                   f"look elsewhere: here at " + ", ".join(f"`{t}`" for t in spread) + ". A Transformer learns a "
                   "$W^Q_k, W^K_k, W^V_k$ per head instead of fixed slices, and $W^O$ mixes the heads back.")
    with right:
        chart(head_rows(step.head_weights, src, [f"head {h + 1}" for h in range(HEADS)], title=f"α per head, step {i}"),
              f"{luong}-step{i}-heads", "tf_heads")


if luong is None:
    st.info("Sections ①–③ take their numbers from a Luong dot model, and none is loaded here "
            "(checkpoints/luong-dot).", icon=":material/block:")
else:
    source_or_stop(models[luong], text)
    luong_step()


# -- 4: the trained Transformer ------------------------------------------------------------------
def head_label(option: tuple[int, int | None]) -> str:
    layer, head = option
    return f"layer {layer + 1} · " + ("heads averaged" if head is None else f"head {head + 1}")


@st.fragment
def transformer_heads(record, agreement: np.ndarray | None) -> None:
    """The head picker reruns only this part: one head large, beside the grid of all."""
    L, H = record.head_weights.shape[1:3]
    options = [(layer, head) for layer in range(L) for head in [*range(H), None]]
    best = None if agreement is None else tuple(int(x) for x in np.unravel_index(agreement.argmax(), agreement.shape))
    default = options.index(best) if best else 0
    chosen = st.selectbox("Head", options, index=default, key="tf_head", format_func=head_label)
    layer, head = chosen
    weights = (record.head_weights[:, layer].mean(1) if head is None else record.head_weights[:, layer, head])
    note = "" if agreement is None or head is None else f": {agreement[layer, head]:.0%} like RNNsearch"
    title = (f"L{layer + 1} · " + ("mean" if head is None else f"H{head + 1}")) + note
    chart_with_export(alignment_heatmap(weights, record.source_tokens, record.target_tokens, title=title,
                                        target_language=target_language(models[transformer])),
                      f"{transformer}-L{layer + 1}-" + ("mean" if head is None else f"H{head + 1}"), "tf_head_map")


if transformer is None:
    st.info("The trained Transformer is not loaded here (checkpoints/transformer), so its real heads cannot be "
            "shown.", icon=":material/block:")
    st.stop()
st.subheader("④ A trained Transformer's cross-attention, every layer and head")
# ours, or one made elsewhere (ATTN_EXPLORER_HF_MODELS): the same record, the same grid
transformers_here = [n for n, e in models.items() if e.model.cfg.decoder == "transformer"]
if len(transformers_here) > 1:
    wanted = query_param("transformer", transformer)
    transformer = st.selectbox("Transformer", transformers_here, key="tf_model",
                               index=transformers_here.index(wanted) if wanted in transformers_here else 0,
                               format_func=lambda n: models[n].display_name)
    set_query_params(transformer=transformer if transformer != "transformer" else None)
entry = models[transformer]
source_or_stop(entry, text)
record = cached_greedy(transformer, text)
cfg = entry.model.cfg
st.markdown(f"{entry.display_name} translates: **{plain(record.translation)}**")
agreement = None
if bahdanau is not None and record.translation.strip() and entry.languages == ("en", "fr"):  # RNNsearch writes French
    reference = cached_forced(bahdanau, text, record.translation)
    ref_words, ref_src, ref_trg = merge_to_words(reference.weights[:-1], reference.source_tokens,
                                                 reference.target_tokens[:-1])
    per_head = [[merge_to_words(record.head_weights[:, layer, head], record.source_tokens, record.target_tokens)
                 for head in range(cfg.heads)] for layer in range(cfg.layers)]
    _, src_words, trg_words = per_head[0][0]
    # RNNsearch's vocabulary may cut words differently: compare only where both see the same words
    if src_words == ref_src and trg_words[:len(ref_trg)] == ref_trg:
        words = np.array([[m[:len(ref_trg)] for m, _, _ in row] for row in per_head])
        agreement = head_agreement(words, ref_words)
L, H = cfg.layers, cfg.heads
best = None if agreement is None else tuple(int(x) for x in np.unravel_index(agreement.argmax(), agreement.shape))
st.caption(f"{L} layers × {H} heads of scaled dot-product cross-attention; the decoder state of each layer is the "
           "query, the encoder's output the keys and values. "
           + (f"Elsewhere the app shows {attention_layer_note(cfg, entry.spec)}. " if entry.made_elsewhere else
              f"Elsewhere the app shows layer {cfg.shown_layer % cfg.layers + 1} with its heads averaged (the "
              "penultimate layer, which Garg et al. 2019 found to align best). ")
           + ("The framed head (★) agrees most often with RNNsearch: for each French word, the English word it "
              "attends to most is the one RNNsearch attends to most when forced along the same translation."
              if best else
              "RNNsearch is not loaded, or cuts this sentence into other words, so no head is marked."))
left, right = st.columns([3, 2], gap="large")
with left:
    chart_with_export(head_grid(record.head_weights.transpose(1, 2, 0, 3), record.source_tokens, record.target_tokens,
                                marked=best, marked_label="★"), f"{transformer}-heads", "tf_grid")
with right:
    transformer_heads(record, agreement)
if agreement is not None:
    st.dataframe(pd.DataFrame(agreement, index=[f"layer {n + 1}" for n in range(L)],
                              columns=[f"head {h + 1}" for h in range(H)]).style.format("{:.0%}"))
    st.caption("Agreement with RNNsearch's most-attended English word, per French word of this sentence.")


# -- 5: encoder self-attention --------------------------------------------------------------------
@st.fragment
def encoder_self_attention(record) -> None:
    st.subheader("⑤ Self-attention in the encoder")
    st.caption("What RNNsearch's bidirectional GRU does by recurrence, every Transformer layer does by attention: "
               "each English token's new vector is a weighted sum over the whole sentence, computed for all "
               "tokens at once, which is why it trains in parallel. Row j: what token j attends to.")
    c_layer, c_head = st.columns(2)
    L_enc, H_enc = record.encoder_attention.shape[:2]  # a model made elsewhere may have other encoder sizes
    layer = c_layer.selectbox("Encoder layer", range(L_enc), key="tf_enc_layer", format_func=lambda n: f"layer {n + 1}")
    head = c_head.selectbox("Encoder head", [*range(H_enc), None], key="tf_enc_head",
                            format_func=lambda h: "heads averaged" if h is None else f"head {h + 1}")
    weights = record.encoder_attention[layer].mean(0) if head is None else record.encoder_attention[layer, head]
    chart_with_export(self_attention_heatmap(weights, record.source_tokens, title=head_label((layer, head))),
                      f"{transformer}-encoder-L{layer + 1}-" + ("mean" if head is None else f"H{head + 1}"),
                      "tf_encoder")


encoder_self_attention(record)
