"""The guided lesson's stops: one small function per stop, in ``STOPS``, in teaching order.

A stop function takes the :class:`Lesson` (one sentence, and the records every stop reads
from the app's shared caches) and a :class:`Card` (the stop's slots on the page), draws one
thing to do, takes its words (text ≤ 80 words, the view's text equivalent, what it notices
and its :class:`Question`: two hints and the worked answer) as plain data from
``teaching/lesson_questions.py``, draws one live view from ``viz/``, and returns the question
with the page that explores it. ``app_pages/lesson.py`` draws
the card around it: navigation, the check, the hints, *show me*, the class's answers.
To add a stop, write one such function and put it in ``STOPS`` (docs/lesson.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from ui.examples import EXAMPLES
from ui.figures import chart
from ui.zoo_cache import available_models, DEFAULT_MODEL, shared_result
from ui.teaching_pages import cached_forced, cached_greedy, cached_values
from teaching import lesson_questions as texts
from teaching.lesson_questions import piece, Question, StopText
from model.search import DecodingRecord
from server import settings
from viz.bleu import bleu_by_length_figure
from viz.teaching_figures import context_sum, highlighted_heatmap, source_bars, vector_strip, weight_rows

LESSON_MODEL = DEFAULT_MODEL  # RNNsearch: the paper's model walks the sentence
LUONG = ("luong-dot", "luong-general", "luong-concat")
STEP = "lesson_i"             # the lesson's target step i (1-based), shared by the stops that move it
LOCAL_STEP = "lesson_local_i"  # local-p's own step: its sentence may be another (long enough for the window)
BLEU_CSV = "bleu_by_length.csv"


# -- what a stop returns -------------------------------------------------------------------------
@dataclass(frozen=True)
class Link:
    """The page that explores the stop on its own, opened with the same sentence and step."""
    page: str     # the page's file, as navigation.py names it
    label: str
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Stop:
    slug: str
    title: str
    draw: Callable  # (Lesson, Card) -> tuple[Question, Link] | None


# -- the sentence, and the records the stops read ----------------------------------------------
class Lesson:
    """One sentence through the lesson. Every record comes from the app's shared caches
    (``ui.teaching_pages``): per sentence and model, once per process, for every session."""

    def __init__(self, text: str):
        self.text = text
        self.models = available_models()

    @cached_property
    def record(self) -> DecodingRecord:
        """RNNsearch's greedy translation of the sentence: the lesson's record."""
        return cached_greedy(LESSON_MODEL, self.text)

    @cached_property
    def values(self) -> np.ndarray:
        """RNNsearch's annotations h_j (S x 2n)."""
        return cached_values(LESSON_MODEL, self.text)

    @property
    def T(self) -> int:
        return len(self.record.target_tokens)

    def forced(self, name: str) -> DecodingRecord | None:
        """Model ``name`` forced along RNNsearch's translation: its attention on the same French."""
        if name not in self.models or not self.models[name].has_attention:
            return None
        return cached_forced(name, self.text, self.record.translation)

    def step(self, key: str = STEP, T: int | None = None) -> int:
        """The step i that ``key`` holds, kept within 1…T."""
        T = T or self.T
        st.session_state[key] = min(max(1, int(st.session_state.get(key, 1))), T)
        return st.session_state[key]

    @cached_property
    def words(self):
        """RNNsearch's α merged to words, the </s> row and column left out: (T' x S', English, French)."""
        return texts.words_of(self.record)


class Card:
    """A stop's slots on the page, top to bottom: text, live view, the thing to do, its notice."""

    def __init__(self, slug: str):
        self.slug = slug
        self.text_slot, self.view_slot, self.action_slot, self.notice_slot = (st.container() for _ in range(4))
        self.tag = st.session_state.get(TAG)  # the sentence's: a menu of its pieces starts afresh with a new one

    def say(self, text: str) -> None:
        self.text_slot.markdown(text)

    def view(self, fig, described: str, key: str, caption: str | None = None) -> None:
        """The live view (a figure from ``viz/``) and its one-sentence text equivalent (its
        ``alt``, and under it unless ``caption`` is given). The toolbar's camera saves it as
        SVG; no download widget, since a whole class reruns this page on every click
        (docs/figures.md)."""
        with self.view_slot:
            chart(fig, f"lesson-{self.slug}-{key}", f"lesson_view_{key}", alt=described,
                  more_config={"responsive": True})
            st.caption(f"In words: {caption or described}")

    @property
    def did(self) -> bool:
        return bool(st.session_state.get(f"lesson_did_{self.slug}"))

    def mark(self) -> None:
        st.session_state[f"lesson_did_{self.slug}"] = True

    def notice(self, text: str) -> None:
        """What the stop noticed of the student's action (shown once they acted)."""
        if self.did:
            self.notice_slot.success(text, icon=":material/visibility:")

    def step_slider(self, lesson: Lesson, key: str = STEP, T: int | None = None, label: str = "Target step i") -> int:
        """The step slider (the thing to do of several stops); returns step i."""
        T = T or lesson.T
        i = lesson.step(key, T)
        if T == 1:
            self.action_slot.caption("The output has a single piece, so there is only step 1.")
            return 1
        widget = f"{key}_slider_{self.slug}"
        st.session_state[widget] = i

        def moved():
            st.session_state[key] = st.session_state[widget]
            self.mark()
        return self.action_slot.slider(label, 1, T, key=widget, on_change=moved)


# -- what the page keeps of each stop, in the session --------------------------------------------
HINTS = ("Hint 1", "Hint 2")  # then "Show me"
TAG = "lesson_tag"  # a short hash of the sentence: a new sentence starts every question afresh


def hint_level(slug: str) -> int:
    """0: no hint yet; 1, 2: the hints shown; 3: the answer shown (*show me*)."""
    return int(st.session_state.get(f"lesson_hint_{slug}_{st.session_state.get(TAG)}", 0))


def checked(slug: str) -> bool:
    """Whether the student has checked an answer to this stop's question, for this sentence."""
    return f"lesson_checked_{slug}_{st.session_state.get(TAG)}" in st.session_state


# -- the stops ----------------------------------------------------------------------------------
def show(card: Card, content: StopText, fig, key: str) -> Question | None:
    """The stop's words from ``teaching/lesson_questions.py`` and its live view, in the card's slots."""
    card.say(content.text)
    if fig is not None:
        card.view(fig, content.described, key)
    if content.notice:
        card.notice(content.notice)
    return content.question


def heatmap_stop(lesson: Lesson, card: Card):
    """Stop 1: the alignment matrix α (Bahdanau et al. 2014, Figure 3): a row per French piece, a column per English piece."""
    r = lesson.record
    T = lesson.T
    picked = card.action_slot.select_slider(
        "Pick a French row", list(range(T)), format_func=lambda k: f"{k + 1}. {piece(r.target_tokens[k])}",
        key=f"lesson_row_{card.tag}", on_change=card.mark, value=texts.first_row(r)) if T > 1 else 0
    fig = highlighted_heatmap(r.weights, r.source_tokens, r.target_tokens, rows=[picked])
    return show(card, texts.heatmap_text(r, picked), fig, "heatmap"), \
        Link("app_pages/translate.py", "Translate", {"text": lesson.text})


def encoder_stop(lesson: Lesson, card: Card):
    """Stop 2: the annotations h_j = [→h_j ; ←h_j] of the bidirectional RNN (Bahdanau et al. 2014, §3.2)."""
    r, h = lesson.record, lesson.values
    j = card.action_slot.selectbox("Pick an English piece", range(len(h)), key=f"lesson_piece_{card.tag}",
                                   on_change=card.mark, format_func=lambda j: f"{j + 1}. {piece(r.source_tokens[j])}")
    return show(card, texts.encoder_text(r, h, j), vector_strip(h[j], f"h_{j + 1}"), "annotation"), \
        Link("app_pages/step_through.py", "Step through", {"text": lesson.text, "model": LESSON_MODEL,
                                                           "sections": "context"})


def score_stop(lesson: Lesson, card: Card):
    """Stop 3: the additive score e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j) (eq. 6, A.1.2), read from s_{i−1}."""
    r = lesson.record
    i = card.step_slider(lesson)
    e = r.energies[i - 1]
    fig = source_bars(e, r.source_tokens, "e_ij", highlight=int(np.argmax(e)))
    return show(card, texts.score_text(r, i), fig, "energies"), \
        Link("app_pages/step_through.py", "Step through", {"text": lesson.text, "model": LESSON_MODEL, "step": i,
                                                           "sections": "query,score"})


def softmax_stop(lesson: Lesson, card: Card):
    """Stop 4: α_ij = exp(e_ij) / Σ_k exp(e_ik) (eq. 6): positive, a row sums to 1, blind to a shift."""
    r = lesson.record
    i = card.step_slider(lesson)
    a = r.weights[i - 1]
    fig = source_bars(a, r.source_tokens, "α_ij", colour="#009E73", highlight=int(np.argmax(a)), fmt=".3f")
    return show(card, texts.softmax_text(r, i), fig, "weights"), \
        Link("app_pages/step_through.py", "Step through", {"text": lesson.text, "model": LESSON_MODEL, "step": i,
                                                           "sections": "score,weights"})


def context_stop(lesson: Lesson, card: Card):
    """Stop 5: c_i = Σ_j α_ij h_j (eq. 5), and the next word p(y_i | y_<i, x) (eq. 4)."""
    r, h = lesson.record, lesson.values
    i = card.step_slider(lesson)
    fig = context_sum(r.weights[i - 1], h, r.source_tokens, r.contexts[i - 1])
    return show(card, texts.context_text(r, h, i), fig, "context"), \
        Link("app_pages/step_through.py", "Step through", {"text": lesson.text, "model": LESSON_MODEL, "step": i,
                                                           "sections": "weights,context,output"})


def no_words(lesson: Lesson, card: Card) -> bool:
    """True (and says so) when the translation has no word to ask about: the model wrote only </s>."""
    if lesson.words[2]:
        return False
    card.say("RNNsearch wrote nothing for this sentence (only the end of sentence), so there is no word to look at "
             "here: try another sentence.")
    return True


def reordering_stop(lesson: Lesson, card: Card):
    """Stop 6: where the word-level attention goes back to an earlier English word (Figure 3's reordering)."""
    if no_words(lesson, card):
        return None
    weights, english, french = lesson.words
    k = card.action_slot.selectbox("Pick a French word", range(len(french)), key=f"lesson_word_{card.tag}",
                                   on_change=card.mark, format_func=lambda k: f"{k + 1}. {french[k]}")
    fig = highlighted_heatmap(weights, english, french, rows=[k], title="α by word")
    return show(card, texts.reordering_text(lesson.words, k), fig, "words"), \
        Link("app_pages/translate.py", "Translate", {"text": lesson.text, "view": "words"})


def luong_stop(lesson: Lesson, card: Card):
    """Stop 7: Luong et al. (2015) eq. 8, dot, general and concat, on s_i, against Bahdanau's s_{i−1}."""
    r = lesson.record
    forced = {n.split("-")[1]: lesson.forced(n) for n in LUONG}  # dot, general, concat
    forced = {n: rec for n, rec in forced.items() if rec is not None}
    if not forced:
        card.say("Luong's scores need the Luong models, and none is loaded here.")
        return None
    i = card.step_slider(lesson)
    content = texts.luong_text(r, forced, i)
    j = int(r.weights[i - 1].argmax())
    fig = weight_rows(texts.luong_rows(r, forced, i), [piece(t) for t in r.source_tokens],
                      digits=content.question.digits, label_at=j)
    return show(card, content, fig, "luong"), \
        Link("app_pages/compare.py", "Compare", {"text": lesson.text, "models": ",".join(
            [LESSON_MODEL, *[n for n in LUONG if n in lesson.models]])})


def local_sentence(lesson: Lesson, D: int) -> str:
    """The student's sentence if its window can show (more than 2D + 1 pieces), else the longest example."""
    if len(lesson.record.source_tokens) > 2 * D + 1:
        return lesson.text
    return max(EXAMPLES, key=len)


def local_stop(lesson: Lesson, card: Card):
    """Stop 8: local-p (Luong et al. 2015, eq. 9, 10): the predicted centre p_i and the window p_i ± D."""
    if "luong-local" not in lesson.models:
        card.say("Local attention needs the Luong local-p model, and it is not loaded here.")
        return None
    D = lesson.models["luong-local"].model.cfg.local_window
    text = local_sentence(lesson, D)
    r = cached_greedy("luong-local", text)
    i = card.step_slider(lesson, LOCAL_STEP, len(r.target_tokens))
    fig = source_bars(r.energies[i - 1], r.source_tokens, "e′_ij (score + Gaussian)",
                      highlight=int(r.weights[i - 1].argmax()))
    return show(card, texts.local_text(r, D, i, text == lesson.text, text), fig, "local"), \
        Link("app_pages/step_through.py", "Step through", {"text": text, "model": "luong-local", "step": i,
                                                           "sections": "score,weights"})


@shared_result()
def bleu_table(path: str, modified: float) -> pd.DataFrame | None:
    """The shipped BLEU-by-length table (``results/bleu_by_length.csv``), read once per version of the file."""
    try:
        return pd.read_csv(path)
    except (OSError, ValueError):
        return None


def bleu_stop(lesson: Lesson, card: Card):
    """Stop 9: BLEU by source length, RNNenc against RNNsearch (Bahdanau et al. 2014, Figure 2)."""
    path = settings.results() / BLEU_CSV
    table = bleu_table(str(path), path.stat().st_mtime) if path.exists() else None
    if table is None or not {"model", "set", "bucket", "min_words", "bleu"} <= set(table):
        card.say(f"BLEU by length is read from `{path}`, which is missing here.")
        return None
    chosen = card.action_slot.segmented_control("Test set", list(texts.SETS), default="test", key="lesson_set",
                                                on_change=card.mark, required=True,
                                                format_func=texts.SETS.get) or "test"
    rows = table[(table["set"] == chosen) & table["model"].isin([LESSON_MODEL, "rnnenc"])]
    content = texts.bleu_text(rows, chosen, len(lesson.text.split()), LESSON_MODEL)
    if content is None:
        card.say("The BLEU table holds no bucket measured for both RNNsearch and RNNenc.")
        return None
    fig = bleu_by_length_figure(rows, {LESSON_MODEL: "RNNsearch", "rnnenc": "RNNenc"})
    return show(card, content, fig, "bleu"), Link("app_pages/bleu_length.py", "BLEU vs length")


def transformer_stop(lesson: Lesson, card: Card):
    """Stop 10: Luong's dot step as softmax(QKᵀ)V, then the scale 1/√d_k (Vaswani et al. 2017, eq. 1)."""
    r, dot = lesson.record, lesson.forced("luong-dot")
    if dot is None:
        card.say("This stop takes its numbers from the Luong dot model, which is not loaded here.")
        return None
    i = card.step_slider(lesson)
    step = texts.qkv_step(dot, cached_values("luong-dot", lesson.text), i)
    fig = weight_rows({"softmax(QKᵀ): Luong dot": step.weights, f"softmax(QKᵀ/√{step.d})": step.scaled_weights},
                      [piece(t) for t in r.source_tokens], digits=3, label_at=int(step.weights.argmax()))
    return show(card, texts.transformer_text(r, step, i), fig, "qkv"), \
        Link("app_pages/luong_to_transformer.py", "Luong → Transformer", {"text": lesson.text, "step": i})


def your_turn_stop(lesson: Lesson, card: Card):
    """Stop 11: predict which English word a French word reads most, then see the model's α. The
    heatmap's place is kept before the answer (its cells blank), so the question never moves."""
    if no_words(lesson, card):
        return None
    weights, english, french = lesson.words
    content = texts.your_turn_text(lesson.record, lesson.words)
    k = max(0, texts.your_turn_row(lesson.record, lesson.words))
    answered = checked(card.slug) or hint_level(card.slug) > len(HINTS)
    shown = weights if answered else np.full(weights.shape, np.nan)
    fig = highlighted_heatmap(shown, english, french, rows=[k],
                              title="α by word" if answered else "α by word: shown once you have answered")
    # the verdict under the question says what the student saw; no notice above the question, whose
    # place stays the same before and after the check
    card.say(content.text)
    # the caption reads the same before and after (the same height: the question stays put); the
    # answer is in the figure's alt once answered, and in the verdict and *show me*
    card.view(fig, content.described if answered else "its colours appear once you have answered.", "predict",
              caption=f"the heatmap of α by word, the row of {french[k]} framed.")
    return content.question, \
        Link("app_pages/exercises.py", "Exercises: predict the alignment", {"ex": "align", "seed": "0"})

STOPS = [
    Stop("heatmap", "The translation and its heatmap", heatmap_stop),
    Stop("encoder", "The encoder: one annotation per piece", encoder_stop),
    Stop("score", "The score e_ij, with the real numbers", score_stop),
    Stop("softmax", "Softmax: from energies to weights", softmax_stop),
    Stop("context", "The context c_i and the next word", context_stop),
    Stop("reordering", "Reordering: leaving the diagonal", reordering_stop),
    Stop("luong", "Luong's scores on the same sentence", luong_stop),
    Stop("local", "Local attention: the window around p_i", local_stop),
    Stop("bleu", "Long sentences: BLEU by length", bleu_stop),
    Stop("transformer", "From Luong's dot to softmax(QKᵀ/√d_k)V", transformer_stop),
    Stop("your-turn", "Your turn: predict an alignment", your_turn_stop),
]
