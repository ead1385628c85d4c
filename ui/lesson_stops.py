"""The guided lesson's stops: one small function per stop, in ``STOPS``, in teaching order.

A stop function takes the :class:`Lesson` (one sentence, and the records every stop reads
from the app's shared caches) and a :class:`Card` (the stop's slots on the page), writes its
text (≤ 80 words, every number from a record), draws one live view from ``viz/`` with a
one-sentence text equivalent, draws one thing to do, and returns its :class:`Question`, two
hints and the worked answer, with the page that explores it. ``app_pages/lesson.py`` draws
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
from ui.widgets import plain
from ui.zoo import available_models, DEFAULT_MODEL, shared_result
from ui.teaching import cached_forced, cached_greedy, cached_values
from model.analysis import merge_to_words
from teaching.multihead import as_query_keys_values
from model.search import DecodingRecord
from server import settings
from viz.bleu import bleu_by_length_figure
from viz.teaching import context_sum, highlighted_heatmap, source_bars, vector_strip, weight_comparison

LESSON_MODEL = DEFAULT_MODEL  # RNNsearch: the paper's model walks the sentence
LUONG = ("luong-dot", "luong-general", "luong-concat")
STEP = "lesson_i"             # the lesson's target step i (1-based), shared by the stops that move it
LOCAL_STEP = "lesson_local_i"  # local-p's own step: its sentence may be another (long enough for the window)
BLEU_CSV = "bleu_by_length.csv"


# -- what a stop returns -------------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    """One automatically checked question: a choice (``choices``) or a number (no choices),
    right within ``tolerance``. ``right``: every accepted choice (or the one number)."""
    prompt: str
    right: tuple
    hints: tuple[str, str]
    show_me: str
    choices: tuple[str, ...] = ()
    tolerance: float = 0.0

    def check(self, given) -> bool:
        if given is None:
            return False
        if self.choices:
            return given in self.right
        return abs(float(given) - float(self.right[0])) <= self.tolerance + 1e-9


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
    (``ui.teaching``): per sentence and model, once per process, for every session."""

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
        r = self.record
        return merge_to_words(r.weights[:-1, :-1], r.source_tokens[:-1], r.target_tokens[:-1])


class Card:
    """A stop's slots on the page, top to bottom: text, live view, the thing to do, its notice."""

    def __init__(self, slug: str):
        self.slug = slug
        self.text_slot, self.view_slot, self.action_slot, self.notice_slot = (st.container() for _ in range(4))
        self.tag = st.session_state.get(TAG)  # the sentence's: a menu of its pieces starts afresh with a new one

    def say(self, text: str) -> None:
        self.text_slot.markdown(text)

    def view(self, fig, described: str, key: str) -> None:
        """The live view (a figure from ``viz/``) and its one-sentence text equivalent. The
        toolbar's camera saves it as SVG; no download widget, since a whole class reruns this
        page on every click (docs/figures.md)."""
        with self.view_slot:
            chart(fig, f"lesson-{self.slug}-{key}", f"lesson_view_{key}", alt=described,
                  more_config={"responsive": True})
            st.caption(f"In words: {described}")

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


# -- small helpers ------------------------------------------------------------------------------
def piece(token: str) -> str:
    """A subword piece as a reader sees it: ▁ (a word starts here) dropped."""
    return token.replace("▁", "") or token


def num(x: float, digits: int = 2) -> str:
    """A number to ``digits`` decimals, never "-0.00"."""
    return f"{round(float(x), digits) + 0.0:.{digits}f}"


def quoted(text: str, words: int = 12) -> str:
    """A sentence as markdown, cut to its first ``words`` words (the stop's text stays short)."""
    cut = text.split()
    return plain(" ".join(cut[:words])) + (" …" if len(cut) > words else "")


def code(token: str) -> str:
    return "`" + piece(token).replace("`", "'") + "`"


def numbered(tokens) -> tuple[str, ...]:
    """Choices naming each piece with its position, so a repeated piece stays two choices."""
    return tuple(f"{j + 1}. {piece(t)}" for j, t in enumerate(tokens))


def crossings(word_weights: np.ndarray) -> list[int]:
    """French words (rows) whose most-attended English word lies before the previous French
    word's: where the attention leaves the diagonal and goes back (reordering)."""
    top = word_weights.argmax(1)
    return [k for k in range(1, len(top)) if top[k] < top[k - 1]]


def focus_row(lesson: Lesson) -> int:
    """The word-level French row the lesson asks about: the first reordered word, else the middle."""
    weights, _, french = lesson.words
    back = crossings(weights)
    return back[0] if back else len(french) // 2


# -- the stops ----------------------------------------------------------------------------------
def heatmap_stop(lesson: Lesson, card: Card):
    """Stop 1: the alignment matrix α (Bahdanau et al. 2014, Figure 3): a row per French piece, a column per English piece."""
    r = lesson.record
    S, T = len(r.source_tokens), lesson.T
    picked = card.action_slot.select_slider(
        "Pick a French row", list(range(T)), format_func=lambda k: f"{k + 1}. {piece(r.target_tokens[k])}",
        key=f"lesson_row_{card.tag}", on_change=card.mark) if T > 1 else 0
    j = int(r.weights[picked].argmax())
    q = int(np.argmax(r.weights[:-1].max(1))) if T > 1 else 0  # the most confident row (not </s>)
    card.say(f"RNNsearch translates your sentence as **{quoted(r.translation)}**. The heatmap has one **row** per "
             f"French piece ({T}) and one **column** per English piece ({S}, with `</s>`). Row i is α_i, where the "
             f"decoder looked while writing piece i; a light cell is a large weight, and each row sums to 1. "
             f"Pick a row below: it is framed.")
    card.view(highlighted_heatmap(r.weights, r.source_tokens, r.target_tokens, rows=[picked]),
              f"row {picked + 1}: {piece(r.target_tokens[picked])} looks most at {piece(r.source_tokens[j])}, "
              f"α = {r.weights[picked, j]:.2f}.", "heatmap")
    card.notice(f"Row {picked + 1}, {code(r.target_tokens[picked])}: its brightest cell is "
                f"{code(r.source_tokens[j])}, α = {r.weights[picked, j]:.3f}.")
    choices = numbered(r.source_tokens)
    a = int(r.weights[q].argmax())
    return Question(f"Which English piece does row {q + 1}, {code(r.target_tokens[q])}, look at most?",
                    (choices[a],), ("Pick that row above and find its lightest cell.",
                                    "Hover the cells of the row: the largest α wins."),
                    f"{choices[a]}, with α = {r.weights[q, a]:.3f}.", choices), \
        Link("app_pages/translate.py", "Translate", {"text": lesson.text})


def encoder_stop(lesson: Lesson, card: Card):
    """Stop 2: the annotations h_j = [→h_j ; ←h_j] of the bidirectional RNN (Bahdanau et al. 2014, §3.2)."""
    r, h = lesson.record, lesson.values
    S, width = h.shape
    j = card.action_slot.selectbox("Pick an English piece", range(S), key=f"lesson_piece_{card.tag}", on_change=card.mark,
                                   format_func=lambda j: f"{j + 1}. {piece(r.source_tokens[j])}")
    card.say(f"Before any French is written, a bidirectional GRU reads your {S} pieces forwards and backwards. "
             f"Each piece j gets an **annotation** $h_j = [\\overrightarrow{{h}}_j ; \\overleftarrow{{h}}_j]$: {width} "
             f"numbers, {width // 2} from the "
             f"forward RNN (the words up to j) and {width // 2} from the backward one (the words from j). "
             "The decoder never sees the words again, only these vectors.")
    norm = float(np.linalg.norm(h[j]))
    card.view(vector_strip(h[j], f"h_{j + 1}"), f"h_{j + 1}, the annotation of {piece(r.source_tokens[j])}: "
              f"{width} numbers from {h[j].min():.2f} to {h[j].max():.2f}, length {norm:.2f}.", "annotation")
    card.notice(f"h_{j + 1} of {code(r.source_tokens[j])} has length ‖h‖ = {norm:.3f}; its first half knows the "
                "words before it, its second half the words after it.")
    return Question("How many annotations h_j does the encoder make for your sentence?", (S,),
                    ("One per column of the heatmap.", "Count the pieces in the menu above, `</s>` included."),
                    f"{S}: one per source piece, `</s>` included.", tolerance=0), \
        Link("app_pages/step_through.py", "Step through", {"text": lesson.text, "model": LESSON_MODEL,
                                                           "sections": "context"})


def score_stop(lesson: Lesson, card: Card):
    """Stop 3: the additive score e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j) (eq. 6, A.1.2), read from s_{i−1}."""
    r = lesson.record
    i = card.step_slider(lesson)
    k = i - 1
    e = r.energies[k]
    top = int(np.argmax(e))
    card.say(f"At step {i} the decoder holds its previous state $s_{{{i - 1}}}$ (‖s‖ = "
             f"{np.linalg.norm(r.query_states[k]):.2f}) and scores every annotation with Bahdanau's additive score "
             r"$e_{ij} = v_a^\top \tanh(W_a s_{i-1} + U_a h_j + b_a)$. "
             f"Here the energies run from {num(e.min())} to {num(e.max())}; {code(r.source_tokens[top])} scores "
             "highest. Energies are not probabilities: any real number. Move the step.")
    card.view(source_bars(e, r.source_tokens, "e_ij", highlight=top),
              f"step {i}: {piece(r.source_tokens[top])} has the highest energy, e = {num(e[top])}, the lowest is "
              f"{num(e.min())}.", "energies")
    card.notice(f"Step {i} writes {code(r.target_tokens[k])}, scoring from $s_{{{i - 1}}}$, the state *before* it.")
    spread = float(e.max() - e.min())
    return Question(f"At step {i}, how far apart are the highest and the lowest energy (max − min, two decimals)?",
                    (round(spread, 2),), ("Hover the tallest and the lowest bar.",
                                          f"The highest is {num(e.max())}; subtract the lowest."),
                    f"{num(e.max())} − ({num(e.min())}) = {num(spread)}.", tolerance=0.02), \
        Link("app_pages/step_through.py", "Step through", {"text": lesson.text, "model": LESSON_MODEL, "step": i,
                                                           "sections": "query,score"})


def softmax_stop(lesson: Lesson, card: Card):
    """Stop 4: α_ij = exp(e_ij) / Σ_k exp(e_ik) (eq. 6): positive, a row sums to 1, blind to a shift."""
    r = lesson.record
    i = card.step_slider(lesson)
    k = i - 1
    e, a = r.energies[k], r.weights[k]
    first, second = np.argsort(-a)[:2] if len(a) > 1 else (0, 0)
    card.say(f"Softmax turns the energies of step {i} into weights: "
             r"$\alpha_{ij} = \exp(e_{ij}) / \sum_k \exp(e_{ik})$. Every "
             f"α is positive and the row sums to {a.sum():.4f}. {code(r.source_tokens[first])} leads the "
             f"runner-up {code(r.source_tokens[second])} by {e[first] - e[second]:.2f} in energy, so its weight is "
             f"e^{e[first] - e[second]:.2f} = {np.exp(e[first] - e[second]):.2f} times larger: "
             f"{a[first]:.3f} against {a[second]:.3f}.")
    card.view(source_bars(a, r.source_tokens, "α_ij", colour="#009E73", highlight=int(first), fmt=".3f"),
              f"step {i}: {piece(r.source_tokens[first])} gets α = {a[first]:.2f}, the rest share "
              f"{1 - a[first]:.2f}.", "weights")
    card.notice(f"Step {i}: the largest weight is {a[first]:.3f}, on {code(r.source_tokens[first])}.")
    return Question(f"Add 5 to every energy of step {i}. What is α of {code(r.source_tokens[first])} then "
                    "(two decimals)?", (round(float(a[first]), 2),),
                    ("exp(e + 5) = e⁵ · exp(e): every term of the fraction gets the same factor.",
                     "The factor cancels between the top and the bottom of the fraction."),
                    f"The same, {a[first]:.2f}: softmax only sees differences of energies.", tolerance=0.01), \
        Link("app_pages/step_through.py", "Step through", {"text": lesson.text, "model": LESSON_MODEL, "step": i,
                                                           "sections": "score,weights"})


def context_stop(lesson: Lesson, card: Card):
    """Stop 5: c_i = Σ_j α_ij h_j (eq. 5), and the next word p(y_i | y_<i, x) (eq. 4)."""
    r, h = lesson.record, lesson.values
    i = card.step_slider(lesson)
    k = i - 1
    a = r.weights[k]
    terms = np.linalg.norm(a[:, None] * h, axis=1)  # ‖α_ij h_j‖: how much each term weighs in c_i
    big = int(terms.argmax())
    p = np.exp(r.token_logprobs[k])
    card.say(f"The context is the weighted sum $c_{{{i}}} = \\sum_j \\alpha_{{{i}j}} h_j$: {h.shape[1]} numbers, "
             f"mostly {code(r.source_tokens[big])}'s annotation. From $c_{{{i}}}$, $s_{{{i - 1}}}$ and the previous "
             "word the decoder "
             f"takes its step and predicts the next word: {code(r.target_tokens[k])} with p = {p:.2f}"
             + (f", ahead of {code(r.topk_tokens[k][1])} ({r.topk_probs[k][1]:.2f})." if len(r.topk_tokens[k]) > 1
                else "."))
    card.view(context_sum(a, h, r.source_tokens, r.contexts[k]),
              f"step {i}: each row is one term α_ij h_j, the last row their sum c_{i}; the strongest term is "
              f"{piece(r.source_tokens[big])}'s, length {terms[big]:.2f}.", "context")
    card.notice(f"Step {i}: c_{i} has length {np.linalg.norm(r.contexts[k]):.2f}; it led to "
                f"{code(r.target_tokens[k])}.")
    choices = numbered(r.source_tokens)
    return Question(f"At step {i}, whose term α_ij h_j weighs most in c_{i} (the longest vector)?", (choices[big],),
                    ("The term with the boldest colours in its row.", "Usually, but not always, the largest α."),
                    f"{choices[big]}: ‖α h‖ = {terms[big]:.2f}.", choices), \
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
    top, back = weights.argmax(1), crossings(weights)
    k = card.action_slot.selectbox("Pick a French word", range(len(french)), key=f"lesson_word_{card.tag}",
                                   on_change=card.mark, format_func=lambda k: f"{k + 1}. {french[k]}")
    went = (f"**{plain(french[back[0]])}** looks back at **{plain(english[top[back[0]]])}**, before the English "
            "word its neighbour translated: the attention leaves the diagonal." if back else
            "here every French word looks at or after its neighbour's English word: the sentence is translated in "
            "order. Try *The European Parliament adopted the new economic policy.*")
    card.say("French often puts the adjective after the noun: *economic policy* → *politique économique*. Attention "
             f"lets the decoder read the English in any order. In your sentence, {went} "
             "Whole words here: an English word's pieces summed, a French word's averaged.")
    card.view(highlighted_heatmap(weights, english, french, rows=[k], title="α by word"),
              f"{french[k]} looks most at {english[top[k]]}, α = {weights[k, top[k]]:.2f}.", "words")
    card.notice(f"{plain(french[k])} → {plain(english[top[k]])} (α = {weights[k, top[k]]:.2f})"
                + (": it goes back." if k in back else "."))
    if back:
        choices = tuple(f"{n + 1}. {w}" for n, w in enumerate(french))
        return Question("Which French word's attention jumps back to an earlier English word?",
                        tuple(choices[n] for n in back), ("Follow the brightest cell down the rows.",
                                                          "Look for a row whose bright cell is left of the row above's."),
                        ", ".join(choices[n] for n in back) + ".", choices), \
            Link("app_pages/translate.py", "Translate", {"text": lesson.text, "view": "words"})
    return Question("Does the attention leave the diagonal in your sentence?", ("No",),
                    ("Follow the brightest cell down the rows.", "Does it ever move left?"),
                    "No: each French word looks at or after the previous one's English word.", ("Yes", "No")), \
        Link("app_pages/translate.py", "Translate", {"text": lesson.text, "view": "words"})


def luong_stop(lesson: Lesson, card: Card):
    """Stop 7: Luong et al. (2015) eq. 8, dot, general and concat, on s_i, against Bahdanau's s_{i−1}."""
    r = lesson.record
    scores = {n.split("-")[1]: lesson.forced(n) for n in LUONG}  # dot, general, concat
    scores = {n: rec for n, rec in scores.items() if rec is not None}
    if not scores:
        card.say("Luong's scores need the Luong models, and none is loaded here.")
        return None
    i = card.step_slider(lesson)
    k = i - 1
    rows = {"additive (RNNsearch)": r.weights[k]}
    rows.update({n: rec.weights[min(k, len(rec.weights) - 1)] for n, rec in scores.items()})
    j = int(r.weights[k].argmax())
    said = ", ".join(f"{n} {w[j]:.2f}" for n, w in rows.items())
    card.say(r"Luong et al. score **after** the RNN step, from the new state $s_i$, with $\bar h_j = W_m h_j$: dot "
             r"$s_i^\top \bar h_j$, general $s_i^\top W_a \bar h_j$, concat $v_a^\top \tanh(W_a [s_i ; \bar h_j] + b_a)$. "
             r"Bahdanau scores "
             r"$s_{i-1}$, the state before it. Forced "
             f"along the same French, at step {i} ({code(r.target_tokens[k])}) they put on "
             f"{code(r.source_tokens[j])}: {said}.")
    card.view(weight_comparison(rows, [piece(t) for t in r.source_tokens]),
              f"step {i}: weights on {piece(r.source_tokens[j])}: {said}.", "luong")
    card.notice(f"Step {i}: the models agree on {code(r.source_tokens[j])}"
                if all(int(w.argmax()) == j for w in rows.values()) else f"Step {i}: the models disagree.")
    choices = tuple(rows)
    best = max(choices, key=lambda n: rows[n][j])
    return Question(f"At step {i}, which score puts the most weight on {code(r.source_tokens[j])}?", (best,),
                    ("Compare the bars over that word.", "The tallest bar of that group."),
                    f"{best}, α = {rows[best][j]:.3f}.", choices), \
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
    k = i - 1
    e, p = r.energies[k], float(r.positions[k])
    inside = int(np.isfinite(e).sum())
    own = text == lesson.text
    card.say(("" if own else f"Your sentence is too short for a window of 2D + 1 = {2 * D + 1} pieces, so this "
              f"stop reads a longer example ({len(r.source_tokens)} pieces: *{plain(' '.join(text.split()[:4]))} …*). ") +
             r"Luong's local-p predicts a centre $p_i = (S - 1)\,\sigma(v_p^\top \tanh(W_p s_i))$ and only scores "
             f"pieces within D = {D} of it, with a Gaussian. At step {i}, $p_{{{i}}}$ = {p:.1f} of "
             f"{len(r.source_tokens) - 1}.")
    window = np.flatnonzero(np.isfinite(e))  # the pieces scored: the rest have no bar ("outside")
    top = int(r.weights[k].argmax())
    card.view(source_bars(e, r.source_tokens, "e′_ij (score + Gaussian)", highlight=top),
              f"step {i}: only pieces {window[0] + 1} to {window[-1] + 1} around p = {p:.1f} are scored, and "
              f"{piece(r.source_tokens[top])} gets the largest weight, α = {r.weights[k, top]:.2f}.", "local")
    card.notice(f"Step {i}: the centre moved to p = {p:.1f}.")
    return Question(f"At step {i}, how many source pieces lie inside the window (are scored)?", (inside,),
                    (f"The window is p ± {D}, cut at the sentence's ends.",
                     "Count the bars; a missing bar is outside."),
                    f"{inside} pieces.", tolerance=0), \
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
    chosen = card.action_slot.segmented_control("Test set", ["test", "stress"], default="test", key="lesson_set",
                                                on_change=card.mark, required=True,
                                                format_func={"test": "natural test split",
                                                             "stress": "long-sentence stress set"}.get) or "test"
    rows = table[(table["set"] == chosen) & table["model"].isin([LESSON_MODEL, "rnnenc"])]
    both = rows.groupby("min_words")["model"].nunique()
    starts = sorted(both[both == 2].index)
    if not starts:
        card.say("The BLEU table holds no bucket measured for both RNNsearch and RNNenc.")
        return None
    n = len(lesson.text.split())
    start = max([s for s in starts if s <= n] or starts[:1])
    at = rows[rows["min_words"] == start].set_index("model")
    bucket, ours, enc = at.loc[LESSON_MODEL, "bucket"], float(at.loc[LESSON_MODEL, "bleu"]), float(at.loc["rnnenc", "bleu"])
    card.say(f"The paper's Figure 2: does quality hold up on long sentences? RNNenc squeezes the sentence into one "
             f"fixed vector; RNNsearch attends. Your sentence has {n} words: the {bucket}-word bucket, where RNNsearch "
             f"scores BLEU {ours:.1f} and RNNenc {enc:.1f} (cased sacreBLEU, {chosen} set). Compare the longest "
             "buckets.")
    card.view(bleu_by_length_figure(rows, {LESSON_MODEL: "RNNsearch", "rnnenc": "RNNenc"}),
              f"{bucket} words: RNNsearch {ours:.1f}, RNNenc {enc:.1f}; the longer the sentences, the further "
              "RNNenc falls behind." if chosen == "test" else f"{bucket} words: RNNsearch {ours:.1f}, RNNenc {enc:.1f}.",
              "bleu")
    card.notice(f"The {'stress set joins test sentences into long ones' if chosen == 'stress' else 'natural split'}: "
                f"at {bucket} words RNNsearch leads by {ours - enc:.1f}.")
    return Question(f"In the {bucket}-word bucket, by how many BLEU points does RNNsearch lead RNNenc (one decimal)?",
                    (round(ours - enc, 1),), ("Hover the two points of that bucket.",
                                              f"RNNsearch {ours:.1f} minus RNNenc's score."),
                    f"{ours:.1f} − {enc:.1f} = {ours - enc:.1f}.", tolerance=0.15), \
        Link("app_pages/bleu_length.py", "BLEU vs length")


def transformer_stop(lesson: Lesson, card: Card):
    """Stop 10: Luong's dot step as softmax(QKᵀ)V, then the scale 1/√d_k (Vaswani et al. 2017, eq. 1)."""
    r, dot = lesson.record, lesson.forced("luong-dot")
    if dot is None:
        card.say("This stop takes its numbers from the Luong dot model, which is not loaded here.")
        return None
    i = card.step_slider(lesson)
    k = min(i - 1, len(dot.query_states) - 1)
    step = as_query_keys_values(dot.query_states[k], cached_values("luong-dot", lesson.text),
                                heads=4 if len(dot.query_states[k]) % 4 == 0 else 1)
    j = int(step.weights.argmax())
    card.say(r"Luong's dot score $e_{ij} = s_i^\top \bar h_j$ is a Transformer's $QK^\top$ with the query "
             r"$Q = s_i$ and the keys $K = \bar h_j$, and $c_i = \sum_j \alpha_{ij} \bar h_j$ is "
             r"$\mathrm{softmax}(QK^\top)V$ with $V = K$. The Transformer learns $W^Q, W^K, W^V$, splits them into "
             rf"heads and divides by $\sqrt{{d_k}}$: here d = {step.d}, √d = {np.sqrt(step.d):.0f}. "
             f"At step {i} Luong dot gives {code(r.source_tokens[j])} α = {step.weights[j]:.2f}.")
    card.view(weight_comparison({"softmax(QKᵀ): Luong dot": step.weights,
                                 f"softmax(QKᵀ/√{step.d})": step.scaled_weights}, [piece(t) for t in r.source_tokens]),
              f"step {i}: on {piece(r.source_tokens[j])}, α = {step.weights[j]:.2f} unscaled and "
              f"{step.scaled_weights[j]:.2f} scaled.", "qkv")
    card.notice(f"Step {i}: the scaled weights range from {step.scaled_weights.min():.2f} to "
                f"{step.scaled_weights.max():.2f}.")
    answer = "smaller" if step.scaled_weights[j] < step.weights[j] - 1e-6 else (
        "larger" if step.scaled_weights[j] > step.weights[j] + 1e-6 else "the same")
    return Question(f"At step {i}, does dividing by √d make the weight on {code(r.source_tokens[j])} larger or "
                    "smaller?", (answer,), ("Compare the two bars over that word.",
                                            "Dividing every energy by 16 shrinks their differences."),
                    f"{answer.capitalize()}: {step.weights[j]:.3f} → {step.scaled_weights[j]:.3f}.",
                    ("larger", "smaller", "the same")), \
        Link("app_pages/luong_to_transformer.py", "Luong → Transformer", {"text": lesson.text, "step": i})


def your_turn_stop(lesson: Lesson, card: Card):
    """Stop 11: predict which English word a French word reads most, then see the model's α."""
    if no_words(lesson, card):
        return None
    weights, english, french = lesson.words
    k = focus_row(lesson)
    top = int(weights[k].argmax())
    choices = tuple(f"{n + 1}. {w}" for n, w in enumerate(english))
    card.say(f"Your turn: predict before you look. RNNsearch wrote **{quoted(' '.join(french))}**. Which English "
             f"word did it read most while writing **{plain(french[k])}**? Commit to an answer below; the model's "
             "heatmap appears once you have checked it or asked to be shown. The Exercises page has more, with "
             "gold alignments.")
    answered = checked(card.slug) or hint_level(card.slug) > len(HINTS)
    if answered:
        card.view(highlighted_heatmap(weights, english, french, rows=[k], title="α by word"),
                  f"{french[k]} looks most at {english[top]}, α = {weights[k, top]:.2f}.", "predict")
    card.notice(f"You predicted, then looked: {plain(french[k])} → {plain(english[top])}.")
    if answered:
        card.mark()
    return Question(f"Which English word does **{plain(french[k])}** attend to most?", (choices[top],),
                    ("Which English word does it translate?", "Word order may differ: look for the meaning."),
                    f"{choices[top]}, α = {weights[k, top]:.2f}.", choices), \
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
