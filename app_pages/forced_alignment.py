"""Forced alignment: the model scores a French translation you give it.

Forced decoding (``model.search.forced``) feeds the given French words to the decoder one
by one instead of its own choices, so we read off the probability it gives each word and
the attention it uses on the way. Each French word links to its most-attended English word
(the rule of ``python -m model.align``; a Hansards pair is written back as ordinary text
first, ``model.hansards``). For a sentence of the Hansards test set
(Mihalcea & Pedersen 2003) the gold links are overlaid (sure / possible / missed / wrong)
and that sentence's Alignment Error Rate is computed (Och & Ney 2003).
"""
import numpy as np
import pandas as pd
import streamlit as st

from ui.figures import chart_with_export
from ui.url_state import from_link, query_param, set_query_params
from ui.widgets import plain
from ui.zoo_cache import cached_translate, ENGLISH_FRENCH, pick_model
from ui.teaching_pages import cached_forced_alignment, gold_folder, gold_pairs
from model.hansards import written_english, written_french
from model.metrics import alignment_error_rate
from viz.teaching_figures import alignment_links, link_categories

HANSARDS, OWN = "A Hansards sentence (with gold links)", "My own sentences"
DEFAULT_HANSARDS = 23  # "there is a lot to be said on both sides of that question ."
DEFAULT_ENGLISH = "The agreement on the European Economic Area was signed in August 1992 ."
DEFAULT_FRENCH = "L' accord sur la zone économique européenne a été signé en août 1992 ."


st.title("Forced alignment")
st.caption("Give the model a French translation of your own: it scores every word and shows the attention it "
           "would use to produce exactly that translation, and the word links that attention implies.")

c_model, c_mode = st.columns([2, 3])
with c_model:
    # the gold links and the French box are English → French: a model of another pair is not offered
    name, entry = pick_model("fa_model", attention_only=True, pair=ENGLISH_FRENCH)
pairs = gold_pairs()
with c_mode:
    if pairs:
        from_link("fa_mode", lambda: OWN if query_param("fr") else HANSARDS)
        mode = st.radio("Sentence pair", [HANSARDS, OWN], key="fa_mode", horizontal=True)
    else:
        mode = OWN
        st.info(f"The Hansards gold alignments are missing (looked in `{gold_folder()}`; set ATTN_EXPLORER_GOLD "
                "to their folder), so only your own sentences can be aligned.", icon=":material/info:")

gold = None
if mode == HANSARDS:
    number = int(st.number_input(f"Hansards test sentence (1–{len(pairs)})", 1, len(pairs),
                                 min(DEFAULT_HANSARDS, len(pairs)), key="fa_number"))
    gold = pairs[number - 1]
    english, french = gold.english, gold.french
    st.markdown(f"**English**: {plain(' '.join(english))}  \n**French**: {plain(' '.join(french))}")
    st.markdown(f"**As the model reads them**: {plain(written_english(english).text)}  \n"
                f"**→** {plain(written_french(french).text)}")
    st.caption("Gold links from the Hansards word-alignment test set, over its tokens as given (the first two "
               "lines). The model was trained on ordinary written text, so it reads the pair written back that way "
               "(`de le` → `du`, `Speaker ,` → `Speaker,`); its attention is merged back to the gold tokens.")
    set_query_params(model=name, fr=None)
else:
    from_link("fa_english", lambda: query_param("text", DEFAULT_ENGLISH))
    from_link("fa_french", lambda: query_param("fr", DEFAULT_FRENCH))
    english_text = st.text_input("English", key="fa_english", max_chars=500)
    french_text = st.text_input("Your French translation", key="fa_french",
                                max_chars=500, help="Words are split at spaces; each is scored as the model's "
                                                    "subword pieces.")
    english, french = english_text.split(), french_text.split()
    set_query_params(model=name, text=english_text.strip() or None, fr=french_text.strip() or None)
    if not english or not french:
        st.info("Type an English sentence and a French translation.", icon=":material/edit:")
        st.stop()

result = cached_forced_alignment(name, tuple(english), tuple(french), hansards=gold is not None)
word_p = np.exp(result.word_logprobs)

c1, c2, c3 = st.columns(3)
c1.metric("log p(French | English)", f"{result.logprob:.2f}", help="Sum over the words and the final </s>.")
c2.metric("Per word (geometric mean p)", f"{np.exp(result.logprob / (len(french) + 1)):.3f}")
try:
    own = cached_translate(name, written_english(english).text if gold is not None else " ".join(english), 1)
    c3.metric("The model's own translation, log p", f"{own.score:.2f}",
              help=f"Greedy: {own.translation}")
except ValueError:
    own = None

st.subheader("How probable is each word?")
links = dict((k, i) for i, k in result.links)  # French word k -> English word i
table = pd.DataFrame({
    "French word": french,
    "p(word)": word_p,
    "log p": result.word_logprobs,
    "aligned to": [english[links[k]] for k in range(len(french))],
    "α of that link": [float(result.word_weights[k, links[k]]) for k in range(len(french))],
})
st.dataframe(table, key="fa_words", hide_index=True, column_config={
    "p(word)": st.column_config.ProgressColumn("p(word)", min_value=0.0, max_value=1.0, format="%.3f"),
    "log p": st.column_config.NumberColumn(format="%.3f"),
    "α of that link": st.column_config.NumberColumn(format="%.3f")})
st.caption(f"p(word) is the product of the word's subword pieces' probabilities; p(</s>) at the end = "
           f"{np.exp(result.eos_logprob):.3f}." + (f" The model's own greedy translation: *{own.translation}*"
                                                   if own is not None else ""))

st.subheader("Attention and the links it implies")
if gold is not None:
    scores = alignment_error_rate([result.links], [gold.sure], [gold.possible])
    cats = link_categories(result.links, gold.sure, gold.possible)
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("AER (this sentence)", f"{scores['aer']:.3f}", help="1 − (|A∩S| + |A∩P|) / (|A| + |S|)")
    c2.metric("Precision", f"{scores['precision']:.3f}", help="|A∩P| / |A|")
    c3.metric("Recall", f"{scores['recall']:.3f}", help="|A∩S| / |S|")
    c4.metric("Links: sure / possible / missed / wrong",
              " / ".join(str(len(cats[c])) for c in ("sure", "possible", "missed", "wrong")))
fig = alignment_links(result.word_weights, english, french, result.links,
                      gold.sure if gold else None, gold.possible if gold else None,
                      title=f"α by word: {entry.display_name}")
chart_with_export(fig, f"forced-alignment-{name}", "fa_alignment")
st.caption("Rows: French words, columns: English words; α merged from subword pieces (summed over an English "
           "word's pieces, averaged over a French word's). Each French word links to its most-attended English "
           "word." + (" Filled green: a predicted link that is a sure gold link; open green: a possible one; "
                      "orange square: a sure gold link the attention missed; red ×: a predicted link outside the gold."
                      if gold else ""))
