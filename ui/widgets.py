"""The widgets several pages share: the sentence box, the decoding and view choices, and
user text made safe (and small) for markdown."""
from __future__ import annotations

import streamlit as st

from model.search import MAX_BEAM
from ui.examples import DEFAULT_SENTENCE, EXAMPLES
from ui.url_state import from_link, query_param

MAX_INPUT_CHARS = 1000  # the text box's limit; the model further cuts at MAX_SOURCE_TOKENS pieces
SENTENCE = "sentence"  # session key: the current sentence, carried from page to page


def sentence_input(key: str) -> str:
    """Example picker and English text box. The first value comes from the URL (``?text=``),
    else from the sentence on the last page visited; returns the text as typed."""
    text_key = f"{key}_text"

    def first_text() -> str:
        initial = query_param("text") or st.session_state.get(SENTENCE) or DEFAULT_SENTENCE
        if len(initial) > MAX_INPUT_CHARS:
            st.session_state[f"{key}_clipped"] = len(initial)
            initial = initial[:MAX_INPUT_CHARS]
        return initial
    from_link(text_key, first_text)  # the rule every page's linked widgets follow (ui/url_state.py)

    def pick_example():
        choice = st.session_state.get(f"{key}_example")
        if choice:
            st.session_state[text_key] = choice
            st.session_state[f"{key}_example"] = None  # a menu, not a state: the box holds the sentence

    st.selectbox("Example sentences", list(EXAMPLES), index=None, key=f"{key}_example", on_change=pick_example,
                 format_func=lambda s: f"{EXAMPLES[s].domain}: {s}", placeholder="Pick an example, or type below")
    text = st.text_area("English sentence", key=text_key, max_chars=MAX_INPUT_CHARS, height=100,
                        help="Press Ctrl+Enter (⌘+Enter) or click outside the box to translate.")
    clipped = st.session_state.get(f"{key}_clipped")
    if clipped:
        st.warning(f"The text in the link had {clipped} characters; the box keeps the first {MAX_INPUT_CHARS}.")
    st.session_state[SENTENCE] = text
    return text


WORD_RULE = ("**Whole words**: a piece that starts with ▁ begins a new word. Over a *source* word's pieces the "
             "weights are **summed** (the attention the word receives, so every row still sums to 1); over a "
             "*target* word's pieces the rows are **averaged**.")


def decoding_choice(key: str) -> int:
    """Greedy or beam search (with its width), first from the URL (``?beam=``); returns the beam size (1 = greedy)."""
    try:
        beam_in_url = max(1, min(MAX_BEAM, int(query_param("beam", "1"))))
    except ValueError:
        beam_in_url = 1
    method = st.segmented_control("Decoding", ["greedy", "beam search"], key=f"{key}_method", required=True,
                                  default="greedy" if beam_in_url == 1 else "beam search",
                                  help="Greedy takes the most probable token at each step; beam search keeps "
                                       "the k best prefixes and returns the most probable finished one.")
    if method != "beam search":
        return 1
    return st.slider("Beam size k", 2, MAX_BEAM, beam_in_url if beam_in_url > 1 else 5, key=f"{key}_beam")


def view_choice(key: str, default: str = "pieces") -> str:
    """Subword pieces or whole words (``?view=pieces|words``)."""
    first = query_param("view", default)
    view = st.segmented_control("Show", ["pieces", "words"], key=f"{key}_view", required=True,
                                default=first if first in ("pieces", "words") else default,
                                format_func={"pieces": "subword pieces", "words": "whole words"}.get)
    return view or default


def within_bound(cut) -> str:
    """The text a page's bound left (``server.costs.Cut``), saying so where it cut."""
    if cut.notice:
        st.info(cut.notice, icon=":material/content_cut:")
    return cut.text


def plain(text: str) -> str:
    """User text for st.markdown, shown exactly as typed: markdown and HTML characters escaped."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join("\\" + ch if ch in "\\`*_{}[]()#+-.!|~$" else ch for ch in text)


def small(text: str) -> str:
    """``text`` in small type (Streamlit's ``:small[…]``) for a markdown body. A square bracket
    that pairs with none (a token such as `](` quoted in the text) would end the directive
    early and show the rest as it is typed, so such a text keeps its normal size."""
    depth, escaped = 0, False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                break
    return f":small[{text}]" if depth == 0 else text


def equation_text(title: str, latex: str | list[str], note: str | None = None) -> str:
    """A section's title, its equations (display math, one block each) and its note in small
    type, as one markdown body: one element where a title, each equation and a caption were
    several (each element is a message the server builds and sends to every tab)."""
    lines = [latex] if isinstance(latex, str) else latex
    body = f"{title}\n\n" + "\n\n".join(f"$$\n{line}\n$$" for line in lines)
    return body + (f"\n\n{small(note)}" if note else "")

