"""The check before the lesson and after it: what the lesson teaches, as named concepts, each
asked by items of two kinds, and the gain between the two checks.

- **recall**: choose the definition, name the mechanism (what the lesson said);
- **transfer**: use it on something the lesson did not show: the alignment of an unseen
  sentence (the shipped RNNsearch's own α), α from given energies (eq. 6), a context from given
  weights and annotations (eq. 5), a BLEU-by-length table (Bahdanau et al. 2014, Figure 2).

A check is one *half*, ``before`` or ``after``, of a pair drawn from one seed: the two halves ask
the same slots (concept, kind) on different instances (another sentence, another question of the
same concept, other buckets), so the gain compares like with like. Transfer items read RNNsearch's
records of sentences the lesson does not use (:data:`SENTENCES`, none of ``ui.examples``) through
``record_of`` (text -> ``model.search.DecodingRecord``) and ``values_of`` (text -> annotations h_j,
S x 2n), and the BLEU-by-length table (``results/bleu_by_length.csv``); every answer is computed
from the numbers the item shows, at the precision it shows them, a number within the tolerance
its prompt states. No UI here.

The gain is Hake's normalised gain g = (post − pre) / (max − pre): the share of what was left to
learn that was learned. When pre = max there is nothing left to gain and g is undefined (None):
the page says "at the top before" and whether the after check stayed there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from teaching.lesson_questions import num, Question, ties, words_of

HALVES = ("before", "after")
KINDS = ("recall", "transfer")


@dataclass(frozen=True)
class Concept:
    slug: str
    name: str
    stops: tuple[int, ...]  # the lesson's stops (1-based) that teach it: where to look again
    short: str              # a figure's tick label: six fit a phone's width


CONCEPTS = (
    Concept("weights", "Scores → softmax → weights", (3, 4), "softmax"),
    Concept("context", "The context vector, a weighted sum", (5,), "context"),
    Concept("alignment", "Reading an alignment", (1, 6, 11), "alignment"),
    Concept("scoring", "Additive and multiplicative scores", (3, 7), "scores"),
    Concept("length", "Why RNNenc falls behind on long sentences", (9,), "length"),
    Concept("transformer", "Attention as softmax(QKᵀ/√d_k)V", (10,), "QKᵀ/√d"),
)
CONCEPT = {c.slug: c for c in CONCEPTS}
# the slots a check asks, in order: 8 items, four of each kind, every concept at least once
SLOTS = (("alignment", "recall"), ("alignment", "transfer"), ("weights", "recall"), ("weights", "transfer"),
         ("context", "transfer"), ("scoring", "recall"), ("length", "transfer"), ("transformer", "recall"))

# Sentences the lesson never shows (none is in ui.examples): the transfer items' unseen sentences.
SENTENCES = (
    "The children are playing in the garden.", "My brother works in a large hospital.",
    "We must reduce the cost of energy.", "The old house has a beautiful blue door.",
    "He reads the newspaper every morning.", "The government has presented a new budget.",
    "Our teacher explained the problem very clearly.", "The river flows through the small town.",
    "The bank raised its interest rates.", "A woman is walking her dog in the park.",
    "This report describes the situation in Europe.", "The students asked many difficult questions.",
    "The new law protects the rights of workers.", "Two men are sitting on a wooden bench.",
    "The price of bread increased last month.", "She writes a letter to her mother.",
    "The members voted against the proposal.", "A little girl is eating an apple.",
    "The city built a new bridge over the river.", "The police arrested three young men.",
    "The farmers need more water this summer.", "They visited the museum on Sunday.",
)


@dataclass(frozen=True)
class Item:
    """One item of a check: its slot (concept, kind) and its question (``Question``: a choice, or
    a number right within its tolerance)."""
    concept: str
    kind: str
    question: Question

    @property
    def slug(self) -> str:
        return f"{self.concept}-{self.kind}"


def exercise_id(half: str, item: Item | str) -> str:
    """The name an item's answers are stored under in a class: ``check:before:weights-transfer``."""
    return f"check:{half}:{item if isinstance(item, str) else item.slug}"


def parse_exercise(exercise: str) -> tuple[str, str, str] | None:
    """``check:after:length-transfer`` -> ("after", "length", "transfer"); None for any other id."""
    parts = str(exercise).split(":")
    if len(parts) != 3 or parts[0] != "check" or parts[1] not in HALVES:
        return None
    concept, _, kind = parts[2].rpartition("-")
    return (parts[1], concept, kind) if concept in CONCEPT and kind in KINDS else None


# -- recall: each concept's questions, one per half (two or more, so the halves differ) -------------
RECALL = {
    "alignment": (
        ("A row of RNNsearch's attention heatmap is …",
         "the weights α_i over the source pieces while one target piece is written; it sums to 1",
         ("the translation probabilities of one source word; it sums to 1",
          "the energies of one source piece against every target piece",
          "the encoder's annotation of one source piece")),
        ("In a heatmap, a French row whose brightest cell lies left of the row above's brightest cell shows …",
         "reordering: that word reads an earlier English word",
         ("a translation error the decoder corrects later", "the end of the sentence",
          "an English word skipped by the encoder")),
    ),
    "weights": (
        ("What does softmax guarantee of one step's attention weights α_ij?",
         "each is positive and together they sum to 1",
         ("each lies between −1 and 1", "the largest is always 1", "they sum to the number of source pieces")),
        ("Add the same number to every energy e_ij of one step. The weights α_ij …",
         "stay the same: softmax sees only differences of energies",
         ("all grow by that number", "all grow by the same factor", "become uniform")),
    ),
    "scoring": (
        ("Which mechanism scores e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j)?", "additive (Bahdanau, RNNsearch)",
         ("Luong's dot", "Luong's general", "Luong's local-p")),
        ("Which mechanism scores e_ij = s_iᵀ W_a h̄_j?", "Luong's general",
         ("additive (Bahdanau, RNNsearch)", "Luong's dot", "Luong's concat")),
        ("Which mechanism scores e_ij = s_iᵀ h̄_j?", "Luong's dot",
         ("additive (Bahdanau, RNNsearch)", "Luong's general", "Luong's concat")),
    ),
    "transformer": (
        ("Why does the Transformer divide QKᵀ by √d_k?",
         "large dot products would push softmax towards one-hot weights with tiny gradients",
         ("to make the weights sum to 1", "to make the scores positive", "to average over the heads")),
        ("In softmax(QKᵀ/√d_k)V, which of Luong's quantities does Q play?",
         "the decoder's state s_i, the query",
         ("the annotations h_j, the keys", "the context vector c_i", "the energies e_ij")),
    ),
    "context": (
        ("The context vector c_i is …", "the α_i-weighted sum of the annotations, Σ_j α_ij h_j",
         ("the annotation with the largest weight", "the decoder's previous state s_{i−1}",
          "the mean of the annotations, unweighted")),
        ("What does the decoder do with the context c_i?",
         "uses it with its state and the previous word to predict the next word",
         ("adds it to the energies", "stores it as the next annotation", "divides the weights by it")),
    ),
    "length": (
        ("Why does RNNenc fall behind on long sentences?",
         "it squeezes the whole sentence into one fixed-length vector",
         ("its vocabulary is smaller", "it reads the sentence only backwards", "it scores every word twice")),
        ("What lets RNNsearch keep its BLEU on long sentences?",
         "it attends: every target word reads the annotations it needs",
         ("a larger beam", "a longer fixed-length vector", "training only on long sentences")),
    ),
}


def recall_item(concept: str, rng: np.random.Generator, pick: int) -> Item:
    prompt, right, wrong = RECALL[concept][pick % len(RECALL[concept])]
    choices = [right, *wrong]
    rng.shuffle(choices)
    return Item(concept, "recall", Question(prompt, (right,), ("", ""), right, tuple(choices)))


# -- transfer ------------------------------------------------------------------------------------
CLEAR = 0.6  # the least α an asked French word puts on its English word: a prediction a reader can make


def alignment_item(record, rng: np.random.Generator, strict: bool = True) -> Item | None:
    """Predict the alignment of an unseen sentence: which English word RNNsearch reads most while
    writing a French word (α merged to words); None when no French word is asked clearly (a
    content word, not spelt as an English word, its largest α ≥ CLEAR and alone at two decimals).
    ``strict=False`` (a model that writes no such word, as the tests' digit-reversal models) asks
    any French word, a tie at two decimals accepting each tied word."""
    weights, english, french = words_of(record)
    same = {w.lower().strip(".,!?") for w in english}
    asked = [k for k in range(len(french)) if len(french[k].strip(".,!?")) >= 4 and french[k].strip(".,!?").isalpha()
             and french[k].lower().strip(".,!?") not in same and weights[k].max() >= CLEAR
             and len(ties(weights[k], 2)) == 1]
    if not strict and not asked:
        asked = list(range(len(french)))
    if not asked or len(english) < 2:
        return None
    k = int(rng.choice(asked))
    choices = tuple(f"{n + 1}. {w}" for n, w in enumerate(english))
    right = ties(weights[k], 2)
    q = Question(f"RNNsearch translates *{' '.join(english)}* as *{' '.join(french)}* Which English word does it "
                 f"read most while writing “{french[k]}”?", tuple(choices[n] for n in right), ("", ""),
                 f"{choices[right[0]]}, α = {weights[k, right[0]]:.2f}.", choices,
                 values=tuple(map(float, weights[k])), digits=2)
    return Item("alignment", "transfer", q)


def shows(text: str, number: str) -> bool:
    """Does ``text`` print ``number`` (as a whole number, not inside a longer one)?"""
    return any(m.group() == number for m in re.finditer(r"(?<![\d.])-?\d+(?:\.\d+)?(?![\d.])", text))


def steps(record, rng: np.random.Generator) -> list[int]:
    """The target steps (</s> left out) in a seeded order: an item takes the first that gives no answer away."""
    return [int(i) for i in rng.permutation(max(1, len(record.target_tokens) - 1))]


def weights_item(record, rng: np.random.Generator) -> Item:
    """α from given energies (eq. 6), over four pieces of one step of an unseen sentence, the
    energies shown to one decimal and the answer computed from those."""
    for i in steps(record, rng):
        item = _weights_item(record, rng, i)
        if not shows(item.question.prompt, num(item.question.right[0])):
            break
    return item


def _weights_item(record, rng: np.random.Generator, i: int) -> Item:
    e = record.energies[i]
    shown = sorted(int(j) for j in np.argsort(-e)[:4])
    energies = np.round(e[shown], 1)
    a = np.exp(energies - energies.max())
    a /= a.sum()
    n = int(rng.integers(0, len(shown)))
    names = [f"{m + 1}. {record.source_tokens[j].replace('▁', '') or record.source_tokens[j]}"
             for m, j in enumerate(shown)]
    listed = ", ".join(f"{name}: e = {num(v, 1)}" for name, v in zip(names, energies))
    q = Question(f"Four energies of one decoder step: {listed}. Take the softmax over these four only. What is α of "
                 f"“{names[n]}” (two decimals; accepted within ±0.01)?", (round(float(a[n]), 2),), ("", ""),
                 f"exp({num(energies[n], 1)}) / Σ exp(e) = {a[n]:.2f}.", tolerance=0.01, digits=2)
    return Item("weights", "transfer", q)


def context_item(record, values: np.ndarray, rng: np.random.Generator) -> Item:
    """A context from given weights and annotations (eq. 5): three pieces' α (renormalised over the
    three, two decimals, summing to 1) and the first number of each h_j (two decimals)."""
    for i in steps(record, rng):
        item = _context_item(record, values, i)
        if not shows(item.question.prompt, num(item.question.right[0])):
            break
    return item


def _context_item(record, values: np.ndarray, i: int) -> Item:
    top = sorted(int(j) for j in np.argsort(-record.weights[i])[:3])
    a = record.weights[i, top] / record.weights[i, top].sum()
    a = np.round(a, 2)
    a[-1] = round(1.0 - a[:-1].sum(), 2)
    h = np.round(values[top, 0], 2)
    c = float(np.dot(a, h))
    listed = "; ".join(f"α = {num(w)}, h = {num(v)}" for w, v in zip(a, h))
    q = Question(f"A decoder step attends to three annotations, with these weights (RNNsearch's, over the three) and "
                 f"first numbers of h_j: {listed}. What is the first number of the context c_i = Σ_j α_ij h_j "
                 "(two decimals; accepted within ±0.02)?",
                 (round(c, 2),), ("", ""), " + ".join(f"{num(w)} × {num(v)}" for w, v in zip(a, h)) + f" = {c:.2f}.",
                 tolerance=0.02, digits=2)
    return Item("context", "transfer", q)


SETS = {"test": "the natural test split", "stress": "the long-sentence stress set",
        "newstest2014": "WMT newstest2014"}
MIN_SEGMENTS = 10  # a bucket with fewer sentences is noise, not a curve


def length_item(bleu, chosen: str, rng: np.random.Generator) -> Item:
    """Read a BLEU-by-length table (Figure 2's curves as numbers): in which of four buckets does
    RNNsearch lead RNNenc most? Leads compared at one decimal, as the table shows them."""
    rows = bleu[(bleu["set"] == chosen) & bleu["model"].isin(["rnnsearch", "rnnenc"])
                & (bleu["segments"] >= MIN_SEGMENTS)]
    table = rows.pivot_table(index=["min_words", "bucket"], columns="model", values="bleu").dropna().reset_index()
    picked = sorted(rng.choice(len(table), size=min(4, len(table)), replace=False))
    table = table.iloc[picked]
    leads = [round(round(s, 1) - round(e, 1), 1) for s, e in zip(table["rnnsearch"], table["rnnenc"])]
    choices = tuple(f"{b} words" for b in table["bucket"])
    listed = "; ".join(f"{b} words: RNNsearch {s:.1f}, RNNenc {e:.1f}"
                       for b, s, e in zip(table["bucket"], table["rnnsearch"], table["rnnenc"]))
    right = ties(leads, 1)
    q = Question(f"BLEU by source length on {SETS.get(chosen, chosen)} (cased sacreBLEU): {listed}. In which bucket "
                 "does RNNsearch lead RNNenc by the most points?", tuple(choices[n] for n in right), ("", ""),
                 f"{choices[right[0]]}: a lead of {num(leads[right[0]], 1)}.", choices, values=tuple(leads), digits=1)
    return Item("length", "transfer", q)


@dataclass(frozen=True)
class Check:
    half: str
    seed: int
    items: tuple[Item, ...]


ALIGNMENT_TRIES = 4  # unseen sentences tried for the alignment item (each half uses at most 6 of the 22)


def check_pair(seed: int, record_of, values_of, bleu) -> tuple[Check, Check]:
    """The before and after checks of one seed: the same slots (:data:`SLOTS`), different instances.
    The unseen sentences are taken in a seeded order, each used once across the two halves;
    ``bleu`` None (no BLEU-by-length table here) leaves the length slot out of both halves."""
    rng = np.random.default_rng([int(seed), 60])
    order = iter([SENTENCES[n] for n in rng.permutation(len(SENTENCES))])
    recall_order = {c: rng.permutation(len(q)) for c, q in RECALL.items()}
    sets = [str(s) for s in rng.permutation(sorted(SETS))]

    def alignment():
        for tries in range(ALIGNMENT_TRIES):  # the last try asks whatever word its sentence has
            made = alignment_item(record_of(next(order)), rng, strict=tries < ALIGNMENT_TRIES - 1)
            if made is not None:
                return made
        raise ValueError("no unseen sentence has a word to ask")

    halves = []
    for n, half in enumerate(HALVES):
        items = []
        for concept, kind in slots(bleu):
            if kind == "recall":
                items.append(recall_item(concept, rng, int(recall_order[concept][n])))
            elif concept == "alignment":
                items.append(alignment())
            elif concept == "weights":
                items.append(weights_item(record_of(next(order)), rng))
            elif concept == "context":
                text = next(order)
                items.append(context_item(record_of(text), values_of(text), rng))
            else:
                items.append(length_item(bleu, sets[n], rng))
        halves.append(Check(half, int(seed), tuple(items)))
    return halves[0], halves[1]


def slots(bleu) -> tuple[tuple[str, str], ...]:
    """The slots a check asks: :data:`SLOTS`, the length item only where the BLEU table is."""
    return tuple(s for s in SLOTS if bleu is not None or s != ("length", "transfer"))


# -- scores and the gain --------------------------------------------------------------------------
def normalised_gain(pre: float, post: float, top: float = 1.0) -> float | None:
    """Hake's g = (post − pre) / (top − pre); None when pre = top (nothing left to gain)."""
    if top - pre <= 1e-12:
        return None
    return (post - pre) / (top - pre)


def scores(right: dict[str, bool], by: str = "concept") -> dict[str, float]:
    """The share right per concept (``by="concept"``) or per kind, from item slug -> right."""
    totals: dict[str, list[int]] = {}
    for slug, ok in right.items():
        concept, _, kind = slug.rpartition("-")
        totals.setdefault(concept if by == "concept" else kind, []).append(int(bool(ok)))
    return {k: sum(v) / len(v) for k, v in totals.items()}


@dataclass(frozen=True)
class Gain:
    """One concept's (or kind's) share right before and after, and the normalised gain."""
    name: str
    pre: float
    post: float

    @property
    def gain(self) -> float | None:
        return normalised_gain(self.pre, self.post)

    def said(self) -> str:
        g = self.gain
        if g is None:
            return "at the top before" + (", and after" if self.post >= 1 else f"; {self.post:.0%} after")
        return f"g = {g:+.2f}"


def gains(before: dict[str, bool], after: dict[str, bool], by: str = "concept") -> list[Gain]:
    """Per concept (in :data:`CONCEPTS` order) or per kind, the share right before and after."""
    pre, post = scores(before, by), scores(after, by)
    names = [c.slug for c in CONCEPTS] if by == "concept" else list(KINDS)
    return [Gain(n, pre[n], post[n]) for n in names if n in pre and n in post]


def to_revisit(after: dict[str, bool]) -> list[tuple[Concept, tuple[int, ...]]]:
    """The concepts missed in the after check, each with the stops that teach it."""
    missed = {slug.rpartition("-")[0] for slug, ok in after.items() if not ok}
    return [(c, c.stops) for c in CONCEPTS if c.slug in missed]


# -- a class's check: every student's counted answers ---------------------------------------------
@dataclass
class ClassCheck:
    """A class's check, from its stored answers: per student (session id) and half, item slug -> right.
    ``both``: the students who took both halves (the gain is theirs); ``only``: half -> the
    students who took that half alone, shown apart."""
    halves: dict[str, dict[str, dict[str, bool]]]

    @property
    def both(self) -> list[str]:
        return [s for s in self.halves.get("before", {}) if s in self.halves.get("after", {})]

    def only(self, half: str) -> list[str]:
        other = self.halves.get(HALVES[1 - HALVES.index(half)], {})
        return [s for s in self.halves.get(half, {}) if s not in other]


def class_check(stored) -> ClassCheck:
    """From the store's answers (``StoredAnswer``: exercise, session, correct, counted), the counted
    (first) answer of each student to each check item."""
    halves: dict[str, dict[str, dict[str, bool]]] = {h: {} for h in HALVES}
    for a in stored:
        parsed = parse_exercise(a.exercise)
        if parsed is not None and a.counted:
            half, concept, kind = parsed
            halves[half].setdefault(a.session, {})[f"{concept}-{kind}"] = bool(a.correct)
    return ClassCheck(halves)


def class_gains(cc: ClassCheck, by: str = "concept") -> list[Gain]:
    """Per concept (or kind), the mean share right before and after over the students who took both
    halves, and the class's normalised gain from those means (Hake's ⟨g⟩)."""
    students = cc.both
    rows = [gains(cc.halves["before"][s], cc.halves["after"][s], by) for s in students]
    out = []
    for n, name in enumerate(g.name for g in rows[0]) if rows else ():
        pre = [r[n].pre for r in rows]
        post = [r[n].post for r in rows]
        out.append(Gain(name, float(np.mean(pre)), float(np.mean(post))))
    return out


def student_changes(cc: ClassCheck, by: str = "concept") -> dict[str, list[float]]:
    """Per concept (or kind), each student's change in share right (after − before): the spread."""
    out: dict[str, list[float]] = {}
    for s in cc.both:
        for g in gains(cc.halves["before"][s], cc.halves["after"][s], by):
            out.setdefault(g.name, []).append(g.post - g.pre)
    return out


def most_missed(cc: ClassCheck, half: str = "after", top: int = 3) -> list[tuple[str, int, int]]:
    """The items most missed in ``half``: (slug, students wrong, students who answered), most wrong first."""
    wrong: dict[str, list[int]] = {}
    for answers in cc.halves[half].values():
        for slug, ok in answers.items():
            wrong.setdefault(slug, []).append(int(not ok))
    ranked = sorted(wrong.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
    return [(slug, sum(v), len(v)) for slug, v in ranked[:top] if sum(v)]
