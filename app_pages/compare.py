"""Compare: one sentence through several models, side by side.

All heatmaps share one colour scale (α from 0 to 1), so a brighter cell means more
attention in every panel. The numbers come from ``model/analysis.py``: attention entropy
per step, agreement of the most-attended source word, and diagonality.
"""
import numpy as np
import pandas as pd
import streamlit as st

from model.search import InputError
from ui.figures import shared_figure, show_figure
from ui.url_state import names_param, set_query_params
from ui.widgets import decoding_choice, plain, sentence_input, view_choice, within_bound, WORD_RULE
from server.costs import compare_bound
from ui.zoo_cache import cached_translate, target_language, usable_models
from model.analysis import argmax_agreement, diagonality, entropy, merge_to_words
from viz.export import matrix_csv
from viz.heatmap import alignment_heatmap, difference_heatmap, entropy_figure
from viz.latex import alignment_tex

DEFAULT_MODELS = ["rnnsearch", "luong-dot", "luong-general", "luong-concat", "rnnenc"]

MAX_COMPARED = 8  # models side by side: the whole zoo and one more; each is a decoding and a figure

st.title("Compare")
st.caption("One sentence through several models. RNNsearch (Bahdanau) against Luong's dot, general and concat "
           "scores, and RNNenc, which has no attention, for contrast; add the Transformer, or a model made elsewhere, "
           "to see where its cross-attention looks (one layer's heads averaged, or any layer × head you pick).")
models = usable_models("nothing can be compared")

text = sentence_input("compare")
names = list(models)
in_url = names_param("models", models, MAX_COMPARED)
chosen = st.multiselect("Models", names, default=in_url or [n for n in DEFAULT_MODELS if n in models] or names[:2],
                        key="compare_models", format_func=lambda n: models[n].display_name, max_selections=MAX_COMPARED)
c_decoding, c_view = st.columns([2, 1])
with c_decoding:
    beam = decoding_choice("compare")
with c_view:
    view = view_choice("compare", default="words")
set_query_params(text=text.strip() or None, models=",".join(chosen) or None, beam=beam if beam > 1 else None,
                 view=view if view != "pieces" else None)

if not chosen:
    st.info("Choose two or more models to compare.", icon=":material/checklist:")
    st.stop()
bounded = within_bound(compare_bound(text, len(chosen), beam))  # Compare decodes it once per model
try:
    records = {n: cached_translate(n, bounded, beam) for n in chosen}
except InputError as e:
    st.info(f"{e} Or pick one of the examples above.", icon=":material/edit:")
    st.stop()

first = next(iter(records.values()))
for notice in first.notices:
    st.warning(notice, icon=":material/content_cut:")


def head_choice(n: str) -> tuple[int, int | None]:
    """Which of a Transformer's cross-attention matrices to draw: (layer, head), head None for the
    layer's heads averaged; the default is the layer every other page shows."""
    cfg = models[n].model.cfg
    options = [(layer, head) for layer in range(cfg.layers) for head in (None, *range(cfg.heads))]
    return st.selectbox(f"{models[n].display_name}: layer × head", options, key=f"compare_head_{n}",
                        index=options.index((cfg.shown_layer % cfg.layers, None)),
                        format_func=lambda o: f"layer {o[0] + 1}, " + ("heads averaged" if o[1] is None else f"head {o[1] + 1}"))


def shown(record, choice: tuple[int, int | None] | None):
    """(weights, source tokens, target tokens) in the chosen view; weights None without attention."""
    if not record.has_attention:
        return None, record.source_tokens, record.target_tokens
    weights = record.weights
    if choice is not None:
        layer, head = choice
        weights = record.head_weights[:, layer].mean(1) if head is None else record.head_weights[:, layer, head]
    if view == "words":
        return merge_to_words(weights, record.source_tokens, record.target_tokens)
    return weights, record.source_tokens, record.target_tokens


with_heads = [n for n in chosen if records[n].head_weights is not None]
choices = {}
for k, n in enumerate(with_heads):
    if k % 3 == 0:
        picker_columns = st.columns(3)
    with picker_columns[k % 3]:
        choices[n] = head_choice(n)
views = {n: shown(r, choices.get(n)) for n, r in records.items()}
attending = [n for n in chosen if records[n].has_attention]

st.subheader("Translations")
st.dataframe(pd.DataFrame({
    "model": [models[n].display_name for n in chosen],
    "translation": [records[n].translation for n in chosen],
    "log p(y|x)": [round(records[n].score, 2) for n in chosen],
    "target tokens": [len(records[n].target_tokens) for n in chosen],
}), hide_index=True, width="stretch")

st.subheader("Where each model looks")
st.caption("Every heatmap uses the same colour scale: α from 0 (dark) to 1 (light). "
           + (WORD_RULE if view == "words" else "Subword pieces as the model sees them."))
for k, n in enumerate(chosen):
    weights, source, target = views[n]
    if k % 2 == 0:
        columns = st.columns(2)  # a new row every two models, so panels line up
    with columns[k % 2]:
        if weights is None:
            st.markdown(f"**{models[n].display_name}**")
            st.info(f"No attention to draw: RNNenc reads one fixed summary vector of the source at every step. "
                    f"Its translation: {plain(records[n].translation)}", icon=":material/block:")
            continue
        title = models[n].display_name + ("" if n not in choices else f" · layer {choices[n][0] + 1}, "
                                          + ("mean" if choices[n][1] is None else f"head {choices[n][1] + 1}"))
        language = target_language(models[n])
        fig = shared_figure(records[n], ("alignment", view, title, language),
                            lambda w=weights, s=source, t=target, m=title, x=language:
                            alignment_heatmap(w, s, t, title=m, target_language=x))
        show_figure(fig, f"alignment-{n}", key=f"compare_heatmap_{n}",
                    latex=lambda w=weights, s=source, t=target, m=title, x=language: alignment_tex(w, s, t, m, x))
        # the CSV is written only when clicked (the loop's values bound now), as the figure's HTML is
        st.download_button("Attention matrix (CSV)", lambda w=weights, s=source, t=target: matrix_csv(w, s, t),
                           file_name=f"attention-{n}-{view}.csv", mime="text/csv", key=f"compare_csv_{n}",
                           icon=":material/table:")

def comparable(a: str, b: str) -> bool:
    """Position-by-position numbers need the same source tokens: models on different vocabularies
    (the Transformer's, say) cut a sentence into different pieces, though usually into the same words."""
    return views[a][1] == views[b][1]


def agreement_between(a: str, b: str) -> float | None:
    return round(argmax_agreement(views[a][0], views[b][0]), 3) if comparable(a, b) else None


if attending:
    st.subheader("The comparison in numbers")
    reference = attending[0]
    rows = []
    for n in attending:
        weights, source, _ = views[n]
        h = entropy(weights)
        rows.append({
            "model": models[n].display_name,
            "mean entropy (nats)": round(float(h.mean()), 3),
            "diagonality": round(diagonality(weights), 3),
            f"argmax agrees with {models[reference].display_name}": agreement_between(n, reference),
        })
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption(
        "**Entropy** of α_i, averaged over target steps: 0 when all attention sits on one source "
        f"{'word' if view == 'words' else 'piece'}; spread evenly over all S = {views[reference][0].shape[1]} it "
        f"would be log S = {np.log(views[reference][0].shape[1]):.3f}. "
        "**Diagonality**: 1 − mean |expected source position − i/T| (positions scaled to 0…1); 1 means step i "
        "looks where i/T falls in the source. **Argmax agreement**: the share of target steps i whose most-attended "
        f"source {'word' if view == 'words' else 'piece'} is the same as the reference model's at the same step"
        + ("; empty where two models cut the sentence into different pieces (another vocabulary): the words view "
           "compares them." if any(not comparable(n, reference) for n in attending) else "."))
    if len(attending) > 1:
        # built only when opened (the expander reruns the page then), like Translate's alternatives
        pairs = st.expander("Argmax agreement between every pair", key="compare_pairs", on_change="rerun")
        if pairs.open:
            pairs.dataframe(pd.DataFrame([[agreement_between(a, b) for b in attending] for a in attending],
                                         index=[models[a].display_name for a in attending],
                                         columns=[models[b].display_name for b in attending]), width="stretch")
    show_figure(entropy_figure({models[n].display_name: entropy(views[n][0]) for n in attending}),
                "attention-entropy", key="compare_entropy")

def difference_view() -> None:
    """α_A − α_B for two models the student picks, over the steps where their outputs coincide."""
    c_a, c_b = st.columns(2)
    a = c_a.selectbox("Model A", attending, index=0, key="compare_diff_a", format_func=lambda n: models[n].display_name)
    b = c_b.selectbox("Model B", attending, index=1, key="compare_diff_b", format_func=lambda n: models[n].display_name)
    (wa, source, ta), (wb, _, tb) = views[a], views[b]
    same = 0  # steps whose target prefixes coincide: only there do α_A and α_B answer the same question
    while same < min(len(ta), len(tb)) and ta[same] == tb[same]:
        same += 1
    if a == b:
        st.info("Pick two different models.")
    elif not comparable(a, b):
        st.info("The two models cut the sentence into different source pieces (they use different vocabularies), "
                "so their weights cannot be subtracted piece by piece. Switch the view to whole words.",
                icon=":material/call_split:")
    elif same == 0:
        st.info("The two translations differ from the first token, so no step can be compared: after a "
                "different output the models condition on different histories.", icon=":material/call_split:")
    else:
        note = ("The translations are identical." if same == len(ta) == len(tb) else
                f"The translations coincide for the first {same} target tokens; only those steps are shown "
                "(after the first difference the models condition on different histories).")
        st.caption(f"α_A − α_B, {note} Red: {models[a].display_name} attends more; blue: "
                   f"{models[b].display_name} attends more.")
        show_figure(difference_heatmap(wa[:same] - wb[:same], source, ta[:same],
                                       title=f"{models[a].display_name} − {models[b].display_name}",
                                       target_language=target_language(models[a])),
                    f"difference-{a}-{b}", key="compare_difference")


if len(attending) >= 2:
    # built only when opened (the expander reruns the page then), like the every-pair table
    difference = st.expander("Difference between two models: α_A − α_B", key="compare_difference_open",
                             on_change="rerun", icon=":material/compare_arrows:")
    if difference.open:
        with difference:
            difference_view()

st.subheader("Why they differ")
st.markdown(r"""
All attention models share the encoder (a bidirectional GRU: annotations $h_j$) and one step that turns
energies into weights, $\alpha_{ij} = \mathrm{softmax}_j(e_{ij})$, and a context vector $c_i = \sum_j \alpha_{ij} h_j$.
They differ in three places.

| | RNNsearch (Bahdanau et al. 2014) | Luong et al. 2015 (global) |
|---|---|---|
| **score** $e_{ij}$ | *additive*: $v_a^\top \tanh(W_a s_{i-1} + U_a h_j)$, a one-layer network | *multiplicative*: dot $s_i^\top \bar h_j$, general $s_i^\top W_a \bar h_j$; concat $v_a^\top \tanh(W_a[s_i; \bar h_j])$ is the additive score up to a bias (ours: $U_a$'s $b_a$, in both) |
| **query** | the previous state $s_{i-1}$, *before* the RNN step | the current state $s_i$, *after* the RNN step |
| **where $c_i$ goes** | into the RNN input, $s_i = \mathrm{GRU}(s_{i-1}, [E y_{i-1}; c_i])$, and the deep output | into the output layer, $\tilde h_i = \tanh(W_c[c_i; s_i])$, $p(y_i) = \mathrm{softmax}(W_s \tilde h_i)$; $\tilde h_{i-1}$ is fed to the next RNN input (input feeding) |

So RNNsearch decides where to look *before* it knows which word it is writing, from what it has written so
far; Luong's decoder first updates its state with the previous word and then looks, so its attention is
about the word it is writing now.

In our Luong models $\bar h_j = W_m h_j$, a **learned** matrix $W_m$ (512 → 256 in the shipped models, no bias),
maps the bidirectional annotations to the decoder's size so that the dot score is defined, and its output is both
the keys and the values. So our dot scores $s_i^\top W_m h_j$: it learns its score through $W_m$, and general,
$s_i^\top W_a W_m h_j$, is the same function class for the score (with $W_a$'s 65,536 more parameters, which let the
keys differ from the values). RNNenc has no score at all: one fixed vector
$c = [\overrightarrow{h}_S; \overleftarrow{h}_1]$ is read at every step, which is why its translations of long
sentences suffer (the paper's Figure 2, on the *BLEU vs length* page). It is a stronger baseline than Cho et al.'s
RNN Encoder–Decoder, whose encoder reads forwards only: ours is the attention models' bidirectional GRU.
""")
