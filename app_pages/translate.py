"""Translate: one English sentence through one model, with its alignment heatmap.

The heatmap is the alignment matrix α of Bahdanau et al. (2014), Figure 3: row i is the
distribution α_i over the source tokens that the decoder read while emitting target
token y_i (eq. 6). The sentence and every choice live in the URL, so a link such as
``/?text=I%20will%20eat.&model=rnnsearch`` opens with the heatmap already drawn.
"""
import numpy as np
import streamlit as st

from model.search import InputError
from ui.examples import EXAMPLES
from ui.figures import shared_figure, show_figure
from ui.url_state import set_query_params
from ui.widgets import decoding_choice, plain, sentence_input, view_choice, within_bound, WORD_RULE
from server.costs import beam_bound
from ui.zoo_cache import attention_caption, cached_translate, pick_model, target_language
from model.analysis import merge_to_words, word_groups
from model.metrics import sentence_chrf
from viz.export import matrix_csv
from viz.heatmap import alignment_heatmap, probability_figure
from viz.latex import alignment_tex

st.title("Translate")
st.caption("English → French with an encoder–decoder (RNNs, or a Transformer; or a model made elsewhere, in its own "
           "language pair). The heatmap shows where the decoder looked in the English sentence while it wrote each "
           "output token.")
st.page_link("app_pages/lesson.py", label="New here? Take the 15-minute lesson", icon=":material/school:")
text = sentence_input("translate")
c_model, c_decoding, c_view = st.columns([2, 2, 1.3])
with c_model:
    name, entry = pick_model("translate_model", purpose="nothing can be translated")
models = {name: entry}
with c_decoding:
    beam = decoding_choice("translate")
with c_view:
    view = view_choice("translate")
set_query_params(text=text.strip() or None, model=name, beam=beam if beam > 1 else None,
                 view=view if view != "pieces" else None)

try:
    record = cached_translate(name, within_bound(beam_bound(text, beam)), beam)
except InputError as e:
    st.info(f"{e} Or pick one of the examples above.", icon=":material/edit:")
    st.stop()

for notice in record.notices:
    st.warning(notice, icon=":material/content_cut:")
byte_pieces = sum(p.startswith("<0x") for p in record.source_tokens)
if byte_pieces:
    st.info(f"{byte_pieces} subword piece(s) such as `<0xF0>` are raw UTF-8 bytes: characters the vocabulary does "
            "not know are spelled byte by byte (SentencePiece byte fallback), so nothing is lost. "
            "The whole-words view decodes them back into their characters.", icon=":material/info:")

language = target_language(entry)
st.markdown(f"**{language}** ({models[name].display_name}, {'greedy' if beam == 1 else f'beam search, k = {beam}'}):")
st.markdown(f"### {plain(record.translation) if record.translation.strip() else '*(empty translation)*'}")
example = EXAMPLES.get(text.strip()) if language == "French" else None  # the references are French
if example and example.reference:
    st.markdown(f"**A human translation** ({example.source}): {plain(example.reference)}")
    st.caption(f"chrF of the model's translation against it: {sentence_chrf(record.translation, example.reference):.0f} "
               "(0–100, character n-grams). Our models read about 8 million words (English and French) of everyday, "
               "caption, parliament and news text, the paper's 348 million words of news and debates: on news "
               "sentences they may well garble what the paper's model got right, and this is where to see it.")
if example and example.note:
    st.info(example.note, icon=":material/report:")

st.subheader("Alignment")
if not record.has_attention:
    st.info("RNNenc has no attention: the encoder squeezes the whole sentence into one fixed vector c, and the "
            "decoder reads that same c at every step (after Cho et al. 2014; ours reads the sentence both ways, "
            "a stronger baseline than theirs). There is no α to draw; compare its "
            "translation with an attention model's on the Compare page.", icon=":material/block:")
else:
    if view == "words":
        weights, source, target = merge_to_words(record.weights, record.source_tokens, record.target_tokens)
        st.caption(WORD_RULE)
    else:
        weights, source, target = record.weights, record.source_tokens, record.target_tokens
        st.caption("Subword pieces as the model sees them: ▁ marks the start of a word, `</s>` ends the sentence. "
                   "Hover a cell for α_ij. Colour: α from 0 (dark) to 1 (light), the same scale on every page.")
    if attention_caption(entry):  # which of its layers x heads this one matrix is
        st.caption(attention_caption(entry))
    fig = shared_figure(record, ("alignment", view, models[name].display_name, language), lambda: alignment_heatmap(
        weights, source, target, title=f"α_ij: {models[name].display_name}", target_language=language))
    show_figure(fig, f"alignment-{name}", key="translate_heatmap",
                latex=lambda w=weights, s=source, t=target: alignment_tex(w, s, t, models[name].display_name, language))
    st.download_button("Download attention matrix (CSV)", lambda w=weights, s=source, t=target: matrix_csv(w, s, t),
                       file_name=f"attention-{name}-{view}.csv", mime="text/csv", key="translate_csv",
                       icon=":material/table:")

st.subheader("How sure was the model?")
st.caption("p(y_i | y_<i, x) of each output token: the probability the model gave the token it wrote. "
           + ("A word's probability is the product of its pieces' (the chain rule)." if view == "words" else ""))
tgt_words, tgt_index = word_groups(record.target_tokens) if view == "words" else (None, None)
prob_fig = shared_figure(record, ("probabilities", view), lambda: probability_figure(
    record.target_tokens, record.token_logprobs, groups=tgt_index, group_labels=tgt_words))
show_figure(prob_fig, f"token-probabilities-{name}", key="translate_probabilities")
# built only when opened: a table is Streamlit's largest front-end chunk after Plotly's, and
# the first page should not wait for it
alternatives = st.expander("Alternatives at each step (top 5)", key="translate_alternatives", on_change="rerun")
if alternatives.open:
    alternatives.dataframe({
        "step": np.arange(1, len(record.target_tokens) + 1),
        "token": record.target_tokens,
        "p": np.round(np.exp(record.token_logprobs), 3),
        "next best tokens": [", ".join(f"{t} ({p:.2f})" for t, p in zip(toks, probs))
                             for toks, probs in zip(record.topk_tokens, record.topk_probs)],
    }, hide_index=True)
