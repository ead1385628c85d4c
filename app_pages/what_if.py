"""What if: force the beginning of the French output and let the model continue.

The user picks a position in the greedy translation and replaces its token, by one of the
model's own top-k alternatives at that step or by a word typed in. Everything before it is
kept, the new token(s) are forced, and greedy decoding continues from there
(``model.search.greedy(..., prefix=...)``). The new attention is drawn beside the old: a
changed word changes what the decoder looks at next.
"""
import numpy as np
import streamlit as st

from ui.figures import chart_with_export
from ui.widgets import plain, sentence_input
from ui.zoo_cache import pick_model, target_language
from ui.teaching_pages import cached_greedy, keep_in_url, source_or_stop
from viz.teaching_figures import FORCED, FORCED_ROWS, highlighted_heatmap

TYPED = -1  # the "type a word" choice in the alternatives list

st.title("What if…")
st.caption("Change one word of the model's output and watch it carry on from your choice: the words "
           "before it stay, your word is forced, and the decoder continues greedily from there.")

text = sentence_input("whatif")
c_model, _ = st.columns([2, 3])
with c_model:
    name, entry = pick_model("whatif_model")
keep_in_url(name, text)
source_or_stop(entry, text)  # stops the page, with a message, on unusable input
original = cached_greedy(name, text)
T = len(original.target_tokens)

if st.session_state.get("whatif_position", 0) >= T:  # a shorter translation than the last one
    st.session_state["whatif_position"] = 0
c_pos, c_alt = st.columns(2)
with c_pos:
    position = st.selectbox("Change the token at step", range(T), key="whatif_position",
                            format_func=lambda i: f"{i + 1}: {original.target_tokens[i]}")
alternatives = [int(t) for t in original.topk_ids[position]]
probs = original.topk_probs[position]
options = [t for t in alternatives if t != original.target_ids[position]] + [TYPED]


def alternative_label(t: int) -> str:
    if t == TYPED:
        return "✏️ type a word…"
    token = original.topk_tokens[position][alternatives.index(t)]
    return f"{token}  (p = {probs[alternatives.index(t)]:.3f})"


with c_alt:
    choice = st.selectbox("Replace it with", options, key=f"whatif_alternative_{position}",
                          format_func=alternative_label,
                          help="The model's other top-k candidates at this step, most probable first.")
    if choice == TYPED:
        typed = st.text_input("Your word(s)", key="whatif_typed", placeholder="e.g. la",
                              help="Split into subword pieces as the model would; every piece is forced.")
        forced_ids = entry.vocab.encode_target(typed) if typed.strip() else []
    else:
        forced_ids = [choice]
if not forced_ids:
    st.info("Type a word to force.", icon=":material/edit:")
    st.stop()

prefix = tuple(int(t) for t in original.target_ids[:position]) + tuple(forced_ids)
changed = cached_greedy(name, text, prefix)
n_forced = len(forced_ids)


def sentence(record, forced_from: int | None = None, forced_to: int | None = None) -> str:
    tokens = [plain(t) for t in record.target_tokens]
    if forced_from is not None:
        for j in range(forced_from, min(forced_to, len(tokens))):
            tokens[j] = f":violet-background[**{tokens[j]}**]"
    return " ".join(tokens)


c_old, c_new = st.columns(2, gap="large")
with c_old:
    st.markdown("**The model's own translation**")
    st.markdown(f"### {plain(original.translation) or '*(empty)*'}")
    st.markdown(sentence(original))
    st.caption(f"log p = {original.score:.3f} over {T} tokens")
with c_new:
    st.markdown("**With your word forced**")
    st.markdown(f"### {plain(changed.translation) or '*(empty)*'}")
    st.markdown(sentence(changed, position, position + n_forced))
    st.caption(f"log p = {changed.score:.3f} over {len(changed.target_tokens)} tokens: the highlighted piece(s) "
               f"forced, the rest the model's own greedy continuation.")

same_after = changed.target_ids[position + n_forced:] == original.target_ids[position + 1:]
if same_after:
    st.info("The continuation is the same as before: the decoder recovered from the change.", icon=":material/info:")

if original.has_attention:
    c_old, c_new = st.columns(2, gap="large")
    with c_old:
        chart_with_export(highlighted_heatmap(original.weights, original.source_tokens, original.target_tokens,
                                              rows=[position], title="Before", target_language=target_language(entry)),
                          f"what-if-{name}-before", "whatif_before")
    with c_new:
        chart_with_export(highlighted_heatmap(changed.weights, changed.source_tokens, changed.target_tokens,
                                              rows=range(position, position + n_forced), name=FORCED_ROWS,
                                              target_language=target_language(entry), colour=FORCED, title="After"),
                          f"what-if-{name}-after", "whatif_after")
    shared = min(len(original.target_tokens), len(changed.target_tokens))
    moved = [j for j in range(position, shared)
             if np.argmax(original.weights[j]) != np.argmax(changed.weights[j])]
    st.caption(f"Framed: the step you changed. Rows before it are identical (same prefix, same states). "
               f"From step {position + 1} on, {len(moved)} of {shared - position} step(s) that both outputs "
               "have now attend most to a different source token.")
else:
    st.info("RNNenc has no attention to compare; the translations above still show how the continuation "
            "changes.", icon=":material/block:")
