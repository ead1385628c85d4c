"""The guided lesson's stops as plain data: each stop's text, its view's text equivalent, what
it notices, and its question (prompt, choices, the right answer or answers, the precision the
view shows, the tolerance), computed from the decoding records alone.

The Lesson page (``ui/lesson_stops.py``) draws these with Streamlit and the ``viz/``
figures; ``tests/test_lesson_questions.py`` walks them on many sentences and checks what a
student can rely on: every choice question's options are told apart at the precision the
view shows them (or the tie is accepted), no stop's text states its own answer, no two stops
ask the same fact, and every number question says its tolerance.

Shapes as in ``model.search.DecodingRecord``: ``weights`` and ``energies`` are T x S (row i is
step i's α_i over the source pieces, Bahdanau et al. 2014, eq. 6), ``values`` the annotations
h_j, S x 2n (eq. 5). No UI here: text is markdown, numbers come from the records.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from model.analysis import merge_to_words, word_groups
from teaching.multihead import as_query_keys_values


# -- what a stop shows and asks ------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    """One automatically checked question: a choice (``choices``) or a number (no choices),
    right within ``tolerance``. ``right``: every accepted choice (a tie at the shown precision
    accepts each tied option), or the one number. ``values``: each choice's number as the view
    shows it, to ``digits`` decimals (empty when the choices are not numbers compared).
    ``facts``: what answering takes knowing, as tuples such as ``("reads-most", k)`` (which
    English word French word k reads most), so that no two stops ask the same thing of a sentence."""
    prompt: str
    right: tuple
    hints: tuple[str, str]
    show_me: str
    choices: tuple[str, ...] = ()
    tolerance: float = 0.0
    values: tuple[float, ...] = ()
    digits: int | None = None
    facts: tuple[tuple, ...] = ()

    def check(self, given) -> bool:
        if given is None:
            return False
        if self.choices:
            return given in self.right
        return abs(float(given) - float(self.right[0])) <= self.tolerance + 1e-9

    @property
    def key(self) -> str:
        """A short name of this very question: an answer box starts afresh when it changes
        (another step, another test set), so an old verdict never stands under a new question."""
        return hashlib.sha1(repr((self.prompt, self.choices, self.right)).encode()).hexdigest()[:8]


@dataclass(frozen=True)
class StopText:
    """A stop's words: its text (markdown, at most 80 words), its view's one-sentence text
    equivalent, what it notices once the student acted, and its question (None: no question)."""
    text: str
    described: str
    notice: str
    question: Question | None


# -- small helpers ------------------------------------------------------------------------------
def plain(text: str) -> str:
    """User text for markdown, shown exactly as typed: markdown and HTML characters escaped."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join("\\" + ch if ch in "\\`*_{}[]()#+-.!|~$" else ch for ch in text)


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


def full_stop(text: str) -> str:
    """A full stop after a quoted sentence, unless it ends in one already ("économique." stays one)."""
    return "" if text.rstrip().rstrip("*").endswith((".", "!", "?", "…", ".\\", "\\.", "\\!", "\\?")) else "."


def code(token: str) -> str:
    return "`" + piece(token).replace("`", "'") + "`"


def numbered(tokens) -> tuple[str, ...]:
    """Choices naming each piece with its position, so a repeated piece stays two choices."""
    return tuple(f"{j + 1}. {piece(t)}" for j, t in enumerate(tokens))


def ties(values, digits: int) -> tuple[int, ...]:
    """The options whose value, to ``digits`` decimals, equals the largest: every one a reader
    of the view can call the largest."""
    shown = [round(float(v), digits) for v in values]
    return tuple(j for j, v in enumerate(shown) if v == max(shown))


def digits_to_tell(values, most: int = 4, least: int = 2) -> int:
    """The fewest decimals (``least``…``most``) at which the largest of ``values`` stands alone;
    ``most`` when it never does (the tie is then accepted)."""
    for d in range(least, most + 1):
        if len(ties(values, d)) == 1:
            return d
    return most


def crossings(word_weights: np.ndarray) -> list[int]:
    """French words (rows) whose most-attended English word lies before the previous French
    word's: where the attention leaves the diagonal and goes back (reordering)."""
    top = word_weights.argmax(1)
    return [k for k in range(1, len(top)) if top[k] < top[k - 1]]


def words_of(record):
    """RNNsearch's α merged to words, the </s> row and column left out: (T' x S', English, French)."""
    r = record
    return merge_to_words(r.weights[:-1, :-1], r.source_tokens[:-1], r.target_tokens[:-1])


def confident_row(record) -> int:
    """The most confident row (largest α anywhere), </s> left out: the row stop 1 asks about."""
    return int(np.argmax(record.weights[:-1].max(1))) if len(record.target_tokens) > 1 else 0


def first_row(record) -> int:
    """The row stop 1 frames before the student picks one: not the row its question asks about,
    whose brightest cell the view's text would otherwise name."""
    return 1 if confident_row(record) == 0 and len(record.target_tokens) > 1 else 0


def word_of_piece(record, k: int) -> int:
    """The French word (index into :func:`words_of`'s rows) that target piece ``k`` belongs to."""
    _, index = word_groups(record.target_tokens[:-1]) if len(record.target_tokens) > 1 else ([], [0])
    return int(index[k]) if k < len(index) else -1


# -- the stops' words, stop by stop --------------------------------------------------------------
def heatmap_text(r, picked: int) -> StopText:
    """Stop 1: the alignment matrix α (Bahdanau et al. 2014, Figure 3); ``picked``: the framed row."""
    S, T = len(r.source_tokens), len(r.target_tokens)
    j = int(r.weights[picked].argmax())
    q = confident_row(r)
    said = quoted(r.translation)
    text = (f"RNNsearch translates your sentence as **{said}**{full_stop(said)} The heatmap has one **row** per "
            f"French piece ({T}) and one **column** per English piece ({S}, with `</s>`). Row i is α_i, where the "
            "decoder looked while writing piece i; a light cell is a large weight, and each row sums to 1. "
            "Pick a row below: it is framed.")
    choices = numbered(r.source_tokens)
    right = ties(r.weights[q], 3)
    a = right[0]
    return StopText(
        text, f"row {picked + 1}: {piece(r.target_tokens[picked])} looks most at {piece(r.source_tokens[j])}, "
              f"α = {r.weights[picked, j]:.3f}.",
        f"Row {picked + 1}, {code(r.target_tokens[picked])}: its brightest cell is {code(r.source_tokens[j])}, "
        f"α = {r.weights[picked, j]:.3f}.",
        Question(f"Which English piece does row {q + 1}, {code(r.target_tokens[q])}, look at most?",
                 tuple(choices[n] for n in right), ("Pick that row above and find its lightest cell.",
                                                    "Hover the cells of the row (three decimals): the largest α wins."),
                 f"{choices[a]}, with α = {r.weights[q, a]:.3f}.", choices, values=tuple(map(float, r.weights[q])),
                 digits=3, facts=(("reads-most", word_of_piece(r, q),))))


def encoder_text(r, h: np.ndarray, j: int) -> StopText:
    """Stop 2: the annotations h_j = [→h_j ; ←h_j] of the bidirectional RNN (Bahdanau et al. 2014, §3.2)."""
    S, width = h.shape
    norm = float(np.linalg.norm(h[j]))
    text = ("Before any French is written, a bidirectional GRU reads your sentence's pieces forwards and backwards. "
            f"Each piece j gets an **annotation** $h_j = [\\overrightarrow{{h}}_j ; \\overleftarrow{{h}}_j]$: "
            f"{width} numbers, {width // 2} from the forward RNN (the words up to j) and {width // 2} from the "
            "backward one (the words from j). The decoder never sees the words again, only these vectors.")
    return StopText(
        text, f"h_{j + 1}, the annotation of {piece(r.source_tokens[j])}: {width} numbers from {h[j].min():.2f} to "
              f"{h[j].max():.2f}, length {norm:.2f}.",
        f"h_{j + 1} of {code(r.source_tokens[j])} has length ‖h‖ = {norm:.3f}; its first half knows the words "
        "before it, its second half the words after it.",
        Question("How many annotations h_j does the encoder make for your sentence (a whole number, exactly)?", (S,),
                 ("One per column of the heatmap.", "Count the pieces in the menu above, `</s>` included."),
                 f"{S}: one per source piece, `</s>` included.", tolerance=0, digits=0, facts=(("annotations",),)))


def score_text(r, i: int) -> StopText:
    """Stop 3: the additive score e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j) (eq. 6, A.1.2), at step i (1-based)."""
    k = i - 1
    e = r.energies[k]
    top = int(np.argmax(e))
    spread = float(e.max() - e.min())
    text = (f"At step {i} the decoder holds its previous state $s_{{{i - 1}}}$ ({r.query_states.shape[1]} numbers) "
            "and scores every annotation with Bahdanau's additive score "
            r"$e_{ij} = v_a^\top \tanh(W_a s_{i-1} + U_a h_j + b_a)$. "
            f"Here {code(r.source_tokens[top])} scores highest. Energies are not probabilities: any real number, "
            "negative too. Move the step.")
    return StopText(
        text, f"step {i}: one bar per English piece, its energy e_ij to two decimals; {piece(r.source_tokens[top])} "
              "has the tallest.",
        f"Step {i} writes {code(r.target_tokens[k])}, scoring from $s_{{{i - 1}}}$, the state *before* it.",
        Question(f"At step {i}, how far apart are the highest and the lowest energy (max − min, two decimals; "
                 "accepted within ±0.02)?", (round(spread, 2),),
                 ("Read the tallest and the lowest bar's numbers.", f"The highest is {num(e.max())}; subtract the "
                                                                     "lowest."),
                 f"{num(e.max())} − ({num(e.min())}) = {num(spread)}.", tolerance=0.02, digits=2,
                 facts=(("energy-spread", i),)))


def softmax_text(r, i: int) -> StopText:
    """Stop 4: α_ij = exp(e_ij) / Σ_k exp(e_ik) (eq. 6): positive, a row sums to 1, blind to a shift."""
    k = i - 1
    e, a = r.energies[k], r.weights[k]
    first, second = (int(n) for n in np.argsort(-a)[:2]) if len(a) > 1 else (0, 0)
    # the difference as printed, so exp(gap) is what a reader checks; a third decimal where two would
    # print the very number the question asks for
    places = 3 if num(e[first] - e[second]) == num(a[first]) else 2
    gap = round(float(e[first] - e[second]), places)
    text = (f"Softmax turns the energies of step {i} into weights: "
            r"$\alpha_{ij} = \exp(e_{ij}) / \sum_k \exp(e_{ik})$. Every "
            f"α is positive and the row sums to {a.sum():.4f}. {code(r.source_tokens[first])} leads the "
            f"runner-up {code(r.source_tokens[second])} by {num(gap, places)} in energy, so its weight is "
            f"exp({num(gap, places)}) = {np.exp(gap):.2f} times the runner-up's.")
    return StopText(
        text, f"step {i}: one bar per English piece, its weight α_ij to three decimals; "
              f"{piece(r.source_tokens[first])} has the tallest.",
        f"Step {i}: the tallest bar is {code(r.source_tokens[first])}'s.",
        Question(f"Add 5 to every energy of step {i}. What is α of {code(r.source_tokens[first])} then (two decimals; "
                 "accepted within ±0.01)?", (round(float(a[first]), 2),),
                 ("exp(e_ij + 5) = exp(5) · exp(e_ij): every term of the fraction gets the same factor.",
                  "The factor exp(5) cancels between the top and the bottom of the fraction."),
                 f"The same, {a[first]:.2f}: softmax only sees differences of energies.", tolerance=0.01, digits=2,
                 facts=(("alpha-after-shift", i),)))


def context_text(r, h: np.ndarray, i: int) -> StopText:
    """Stop 5: c_i = Σ_j α_ij h_j (eq. 5), and the next word p(y_i | y_<i, x) (eq. 4)."""
    k = i - 1
    a = r.weights[k]
    terms = np.linalg.norm(a[:, None] * h, axis=1)  # ‖α_ij h_j‖: how much each term weighs in c_i
    p = np.exp(r.token_logprobs[k])
    runner = (f", ahead of {code(r.topk_tokens[k][1])} ({r.topk_probs[k][1]:.2f})."
              if len(r.topk_tokens[k]) > 1 else ".")
    text = (f"The context is the weighted sum $c_{{{i}}} = \\sum_j \\alpha_{{{i}j}} h_j$: {h.shape[1]} numbers. "
            f"From $c_{{{i}}}$, $s_{{{i - 1}}}$ and the previous word the decoder takes its step and predicts the "
            f"next word: {code(r.target_tokens[k])} with p = {p:.2f}{runner}")
    choices = numbered(r.source_tokens)
    right = ties(terms, 2)
    return StopText(
        text, f"step {i}: each row is one term α_ij h_j, the last row their sum c_{i}; the terms' lengths run from "
              f"{terms.min():.2f} to {terms.max():.2f}.",
        f"Step {i}: c_{i} has length {np.linalg.norm(r.contexts[k]):.2f}; it led to {code(r.target_tokens[k])}.",
        Question(f"At step {i}, whose term α_ij h_j weighs most in c_{i} (the longest vector)?",
                 tuple(choices[n] for n in right),
                 ("The term with the boldest colours in its row.", "Usually, but not always, the largest α."),
                 f"{choices[right[0]]}: ‖α h‖ = {terms[right[0]]:.2f}.", choices, values=tuple(map(float, terms)),
                 digits=2, facts=(("longest-term", i),)))


def reordering_text(words, k: int) -> StopText:
    """Stop 6: where the word-level attention goes back to an earlier English word (Figure 3's
    reordering); ``words`` is :func:`words_of`'s triple, ``k`` the picked French word."""
    weights, english, french = words
    top, back = weights.argmax(1), crossings(weights)
    text = ("French often puts the adjective after the noun: *economic policy* → *politique économique*. Attention "
            "lets the decoder read the English in any order: where a French word looks at an English word *before* "
            "the one its neighbour above looked at, the bright cells leave the diagonal. Whole words here: an English "
            "word's pieces summed, a French word's averaged.")
    described = f"{french[k]} looks most at {english[top[k]]}, α = {weights[k, top[k]]:.2f}."
    notice = (f"{plain(french[k])} → {plain(english[top[k]])} (α = {weights[k, top[k]]:.2f})"
              + (": it goes back." if k in back else "."))
    hints = ("Follow the brightest cell down the rows.", "Look for a row whose bright cell is left of the row above's.")
    if back:
        choices = tuple(f"{n + 1}. {w}" for n, w in enumerate(french))
        return StopText(text, described, notice, Question(
            "Reading down from the top, which is the **first** French word whose attention jumps back to an earlier "
            "English word?", (choices[back[0]],), hints,
            f"{choices[back[0]]}" + (f" (later ones: {', '.join(choices[n] for n in back[1:])})" if back[1:] else "")
            + ".", choices, facts=(("looks-back",), *(("reads-most", n) for n in (back[0] - 1, back[0])))))
    return StopText(text, described, notice, Question(
        "Does the attention leave the diagonal in your sentence?", ("No",), (hints[0], "Does it ever move left?"),
        "No: each French word looks at or after the previous one's English word. Try *The European Parliament "
        "adopted the new economic policy.*", ("Yes", "No"), facts=(("looks-back",),)))


ADDITIVE = "additive (RNNsearch)"


def luong_rows(r, forced: dict, i: int) -> dict[str, np.ndarray]:
    """Step i's α under Bahdanau's additive score and each Luong score forced along the same French."""
    k = i - 1
    rows = {ADDITIVE: r.weights[k]}
    rows.update({n: rec.weights[min(k, len(rec.weights) - 1)] for n, rec in forced.items()})
    return rows


def luong_text(r, forced: dict, i: int) -> StopText:
    """Stop 7: Luong et al. (2015) eq. 8, dot, general and concat, on s_i, against Bahdanau's s_{i−1};
    ``forced``: score name (dot, general, concat) -> that model's record forced along RNNsearch's French."""
    k = i - 1
    rows = luong_rows(r, forced, i)
    j = int(r.weights[k].argmax())
    on_j = [float(w[j]) for w in rows.values()]
    digits = digits_to_tell(on_j)
    text = (r"Luong et al. score **after** the RNN step, from the new state $s_i$, with $\bar h_j = W_m h_j$: dot "
            r"$s_i^\top \bar h_j$, general $s_i^\top W_a \bar h_j$, concat $v_a^\top \tanh(W_a [s_i ; \bar h_j] + b_a)$. "
            r"Bahdanau scores $s_{i-1}$, the state before it. Forced along the same French, at step "
            f"{i} ({code(r.target_tokens[k])}) each score weighs {code(r.source_tokens[j])}, the piece RNNsearch reads "
            f"most; the bars give each weight to {digits} decimals.")
    choices = tuple(rows)
    right = ties(on_j, digits)
    agree = all(int(w.argmax()) == j for w in rows.values())
    return StopText(
        text, f"step {i}: the weights of the {len(rows)} scores on every English piece, to {digits} decimals on "
              f"{piece(r.source_tokens[j])}.",
        f"Step {i}: the models agree on {code(r.source_tokens[j])}." if agree else f"Step {i}: the models disagree.",
        Question(f"At step {i}, which score puts the most weight on {code(r.source_tokens[j])}?",
                 tuple(choices[n] for n in right), ("Compare the bars over that piece.",
                                                    f"The longest bar of that group, read to {digits} decimals."),
                 ", ".join(f"{choices[n]}" for n in right) + f", α = {num(on_j[right[0]], digits)}"
                 + (" (a tie at the shown precision)." if len(right) > 1 else "."),
                 choices, values=tuple(on_j), digits=digits, facts=(("luong-most", i),)))


def local_text(r, D: int, i: int, own: bool, text: str) -> StopText:
    """Stop 8: local-p (Luong et al. 2015, eq. 9, 10): the predicted centre p_i and the window p_i ± D;
    ``r`` is local-p's own greedy record of ``text`` (the student's sentence when ``own``)."""
    k = i - 1
    e, p = r.energies[k], float(r.positions[k])
    inside = int(np.isfinite(e).sum())
    window = np.flatnonzero(np.isfinite(e))  # the pieces scored: the rest have no bar ("outside")
    top = int(r.weights[k].argmax())
    said = ("" if own else f"Your sentence is too short for a window of 2D + 1 = {2 * D + 1} pieces, so this stop "
            f"reads a longer example ({len(r.source_tokens)} pieces: *{plain(' '.join(text.split()[:4]))} …*). ")
    said += (r"Luong's local-p predicts a centre $p_i = (S - 1)\,\sigma(v_p^\top \tanh(W_p s_i))$ and only scores "
             f"pieces within D = {D} of it, with a Gaussian. At step {i}, $p_{{{i}}}$ = {p:.1f} of "
             f"{len(r.source_tokens) - 1}.")
    return StopText(
        said, f"step {i}: bars only for the pieces scored around p = {p:.1f}, from piece {window[0] + 1}; "
              f"{piece(r.source_tokens[top])} gets the largest weight, α = {r.weights[k, top]:.2f}.",
        f"Step {i}: the centre moved to p = {p:.1f}.",
        Question(f"At step {i}, how many source pieces lie inside the window (are scored)? A whole number, exactly.",
                 (inside,), (f"The window is p ± {D}, cut at the sentence's ends.",
                             "Count the bars; a missing bar is outside."),
                 f"{inside} pieces: {window[0] + 1} to {window[-1] + 1}.", tolerance=0, digits=0,
                 facts=(("window", i),)))


SETS = {"test": "natural test split", "stress": "long-sentence stress set"}


def bleu_text(rows, chosen: str, n: int, ours_name: str = "rnnsearch", enc_name: str = "rnnenc") -> StopText | None:
    """Stop 9: BLEU by source length, RNNenc against RNNsearch (Bahdanau et al. 2014, Figure 2);
    ``rows``: the BLEU-by-length table's rows of the ``chosen`` set for both models; ``n``: the
    sentence's words. None when no bucket is measured for both."""
    both = rows.groupby("min_words")["model"].nunique()
    starts = sorted(both[both == 2].index)
    if not starts:
        return None
    start = max([s for s in starts if s <= n] or starts[:1])
    at = rows[rows["min_words"] == start].set_index("model")
    bucket, ours, enc = at.loc[ours_name, "bucket"], float(at.loc[ours_name, "bleu"]), float(at.loc[enc_name, "bleu"])
    lead = round(round(ours, 1) - round(enc, 1), 1)  # from the numbers as shown
    text = (f"The paper's Figure 2: does quality hold up on long sentences? RNNenc squeezes the sentence into one "
            f"fixed vector; RNNsearch attends. Your sentence has {n} words: the {bucket}-word bucket (cased "
            f"sacreBLEU, {SETS.get(chosen, chosen)}). Compare the two lines there, and at the longest buckets.")
    longest = rows["min_words"].max()
    return StopText(
        text, f"{bucket} words: RNNsearch {ours:.1f}, RNNenc {enc:.1f}"
              + ("; the longer the sentences, the further RNNenc falls behind." if chosen == "test" else "."),
        f"The {'stress set joins test sentences into long ones' if chosen == 'stress' else 'natural split'}: its "
        f"longest bucket starts at {longest} words.",
        Question(f"In the {bucket}-word bucket of the {SETS.get(chosen, chosen)}, by how many BLEU points does "
                 "RNNsearch lead RNNenc (one decimal; accepted within ±0.1)?", (lead,),
                 ("Hover (or tap) the two points of that bucket.", f"RNNsearch {ours:.1f} minus RNNenc's score."),
                 f"{ours:.1f} − {enc:.1f} = {num(lead, 1)}.", tolerance=0.1, digits=1,
                 facts=(("bleu-lead", chosen),)))


def qkv_step(dot, dot_values: np.ndarray, i: int):
    """Luong dot's step i as softmax(QKᵀ)V (``model.multihead.as_query_keys_values``)."""
    k = min(i - 1, len(dot.query_states) - 1)
    return as_query_keys_values(dot.query_states[k], dot_values, heads=4 if len(dot.query_states[k]) % 4 == 0 else 1)


def transformer_text(r, step, i: int) -> StopText:
    """Stop 10: Luong's dot step as softmax(QKᵀ)V, then the scale 1/√d_k (Vaswani et al. 2017, eq. 1);
    ``step``: :func:`qkv_step`'s result."""
    j = int(step.weights.argmax())
    before, after = float(step.weights[j]), float(step.scaled_weights[j])
    text = (r"Luong's dot score $e_{ij} = s_i^\top \bar h_j$ is a Transformer's $QK^\top$ with the query "
            r"$Q = s_i$ and the keys $K = \bar h_j$, and $c_i = \sum_j \alpha_{ij} \bar h_j$ is "
            r"$\mathrm{softmax}(QK^\top)V$ with $V = K$. The Transformer learns $W^Q, W^K, W^V$, splits them into "
            rf"heads and divides by $\sqrt{{d_k}}$: here d = {step.d}, √d = {np.sqrt(step.d):.0f}. "
            f"At step {i} Luong dot puts most weight on {code(r.source_tokens[j])}.")
    shown = round(before, 3), round(after, 3)  # the bars' labels
    truth = "smaller" if after < before - 1e-9 else ("larger" if after > before + 1e-9 else "the same")
    right = (truth,) if shown[0] != shown[1] or truth == "the same" else (truth, "the same")
    return StopText(
        text, f"step {i}: every English piece's weight, unscaled and scaled, to three decimals.",
        f"Step {i}: the scaled weights range from {step.scaled_weights.min():.2f} to "
        f"{step.scaled_weights.max():.2f}.",
        Question(f"At step {i}, does dividing by √d make the weight on {code(r.source_tokens[j])} larger or smaller?",
                 right, ("Compare the two bars over that piece.",
                         f"Dividing every energy by {np.sqrt(step.d):.0f} shrinks their differences."),
                 f"{truth.capitalize()}: {before:.3f} → {after:.3f}"
                 + (" (the same at three decimals)." if len(right) > 1 else "."),
                 ("larger", "smaller", "the same"), digits=3, facts=(("scale", i),)))


def your_turn_row(r, words) -> int:
    """The French word stop 11 asks about: not one stop 6 asks (a word that jumps back) nor the
    word of stop 1's row, and where one is left, not one spelt as an English word; the middle one
    of the rest; -1 when none is left."""
    weights, english, french = words
    back = crossings(weights)  # stop 6 asks the first of these, and so the row above it
    taken = ({back[0] - 1, back[0]} if back else set()) | {word_of_piece(r, confident_row(r))}
    left = [k for k in range(len(french)) if k not in taken]
    same = {w.lower() for w in english}  # a French word spelt as an English one (a number, a name) tells itself
    telling = [k for k in left if french[k].lower() not in same]
    left = telling or left
    return left[len(left) // 2] if left else -1


def your_turn_text(r, words) -> StopText:
    """Stop 11: predict which English word a French word reads most (least, when every French
    word is asked about elsewhere), then see the model's α by word."""
    weights, english, french = words
    k = your_turn_row(r, words)
    most = k >= 0
    k = k if most else 0
    row = weights[k] if most else -weights[k]
    right = ties(row, 2)
    top = right[0]
    choices = tuple(f"{n + 1}. {w}" for n, w in enumerate(english))
    said = quoted(" ".join(french))
    word = "most" if most else "least"
    text = (f"Your turn: predict before you look. RNNsearch wrote **{said}**{full_stop(said)} Which English word did "
            f"it read {word} while writing **{plain(french[k])}**? Commit to an answer below; the model's heatmap "
            "appears once you have checked it or asked to be shown. The Exercises page has more, with gold "
            "alignments.")
    return StopText(
        text, f"{french[k]} looks {word} at {english[top]}, α = {weights[k, top]:.2f}.",
        f"You predicted, then looked: {plain(french[k])} → {plain(english[top])}.",
        Question(f"Which English word does **{plain(french[k])}** attend to {word}?", tuple(choices[n] for n in right),
                 ("Which English word does it translate?" if most else "Which word has nothing to do with it?",
                  "Word order may differ: look for the meaning."),
                 ", ".join(choices[n] for n in right) + f", α = {weights[k, top]:.2f}.", choices,
                 values=tuple(map(float, row)), digits=2, facts=(("reads-most" if most else "reads-least", k),)))
