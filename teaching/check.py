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
from collections.abc import Collection
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from teaching.check_alignment import alignment_question, bare, CLASSES, CLEAR, cognate, COGNATE, diagonal  # noqa: F401
from teaching.check_alignment import PUNCTUATION  # noqa: F401  (read as check.PUNCTUATION)
from teaching.check_bank import BANK, members, OPTIONS, OTHERS, recall_parts, REORDERED
from teaching.check_bank import SENTENCES  # noqa: F401  (the unseen sentences, read as check.SENTENCES)
from teaching.lesson_questions import num, Question, ties

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


@dataclass(frozen=True)
class Item:
    """One item of a check: its slot (concept, kind) and its question (``Question``: a choice, or
    a number right within its tolerance)."""
    concept: str
    kind: str
    question: Question
    guesses: tuple[float, ...] = ()  # a number item: what a reader without the lesson would compute instead

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


# -- recall: drawn from the banks of teaching/check_bank.py -----------------------------------------
RECALL = BANK  # concept -> its pools of parallel facts


def recall_draw(concept: str, rng: np.random.Generator, pick: int, avoid: int | None = None) -> Item:
    """The recall item of member ``pick`` (modulo the concept's members) of ``concept``'s bank, in
    a seeded phrasing, with three distractors drawn from the other members of its pool, never
    member ``avoid`` (the other half's key: a student told it strikes out no option with it)."""
    choices = members(concept)
    pool, member = choices[pick % len(choices)]
    others = [int(m) for m in rng.permutation(len(BANK[concept][pool].cues)) if m not in (member, avoid)][:OPTIONS - 1]
    order = [member, *others]
    rng.shuffle(order)
    prompt, right, options = recall_parts(concept, pool, member, int(rng.integers(0, 2)), order)
    q = Question(prompt, (right,), ("", ""), right, options, facts=((concept, member),))
    return Item(concept, "recall", q)


def recall_item(concept: str, rng: np.random.Generator, pick: int) -> Item:
    return recall_draw(concept, rng, pick)


# -- transfer (the alignment item and its reader's rules: teaching/check_alignment.py) ------------
def alignment_item(record, rng: np.random.Generator, strict: bool = True, wanted: int | None = None) -> Item | None:
    """The alignment transfer item (``check_alignment.alignment_question``), or None where the
    sentence has no word to ask."""
    q = alignment_question(record, rng, strict, wanted)
    return None if q is None else Item("alignment", "transfer", q)


def shows(text: str, number: str) -> bool:
    """Does ``text`` print ``number`` (as a whole number, not inside a longer one)?"""
    return any(m.group() == number for m in re.finditer(r"(?<![\d.])-?\d+(?:\.\d+)?(?![\d.])", text))


def guessable(item: Item) -> bool:
    """Would one of the item's guesses (what a reader computes without the lesson) be accepted,
    or come within a hundredth of being accepted?"""
    q = item.question
    return any(abs(q.right[0] - g) <= q.tolerance + 0.01 for g in item.guesses)


def steps(record, rng: np.random.Generator) -> list[int]:
    """The target steps (</s> left out) in a seeded order: an item takes the first that gives no answer away."""
    return [int(i) for i in rng.permutation(max(1, len(record.target_tokens) - 1))]


def word_pieces(record) -> list[int]:
    """The source pieces that are words (letters), never punctuation or </s>: what an item names."""
    return [j for j, t in enumerate(record.source_tokens) if any(ch.isalpha() for ch in t) and t != "</s>"]


def weights_item(record, rng: np.random.Generator) -> Item:
    """α from given energies (eq. 6), over four word pieces of one step of an unseen sentence, the
    energies shown to one decimal and the answer computed from those; a step and piece whose α is
    printed nowhere in the prompt and is none of the untaught reader's guesses (1/4, the energy's
    share of their sum, 0 or 1 by rank)."""
    first = None
    for i in steps(record, rng):
        for n in rng.permutation(4):
            item = _weights_item(record, i, int(n))
            first = first or item
            if item is not None and not shows(item.question.prompt, num(item.question.right[0])) \
                    and not guessable(item):
                return item
    return first


def _weights_item(record, i: int, n: int) -> Item | None:
    e = record.energies[i]
    pieces = word_pieces(record) or list(range(len(e)))
    shown = sorted(pieces[j] for j in np.argsort(-e[pieces])[:4])
    if n >= len(shown):
        return None
    energies = np.round(e[shown], 1)
    a = np.exp(energies - energies.max())
    a /= a.sum()
    names = [f"{m + 1}. {record.source_tokens[j].replace('▁', '') or record.source_tokens[j]}"
             for m, j in enumerate(shown)]
    listed = ", ".join(f"{name}: e = {num(v, 1)}" for name, v in zip(names, energies))
    total = float(np.sum(energies))
    naive = (1 / len(shown), float(energies[n]) / total if total else 0.0, float(n == int(np.argmax(energies))))
    q = Question(f"Four energies of one decoder step: {listed}. Take the softmax over these four only. What is α of "
                 f"“{names[n]}” (two decimals; accepted within ±0.01)?", (round(float(a[n]), 2),), ("", ""),
                 f"exp({num(energies[n], 1)}) / Σ exp(e) = {a[n]:.2f}.", tolerance=0.01, digits=2)
    return Item("weights", "transfer", q, naive)


DIMENSIONS = 8  # the numbers of h_j a context item may ask (one of the first eight): many steps then pass


def context_item(record, values: np.ndarray, rng: np.random.Generator, avoid: Collection[str] = ()) -> Item:
    """A context from given weights and annotations (eq. 5): three word pieces' α (renormalised
    over the three, two decimals, summing to 1) and one number of each h_j (two decimals); a step
    and number whose c_i is none of the untaught reader's guesses (an h_j, the largest α's h_j,
    their mean or sum), nor printed in the prompt, nor one of the questions ``avoid`` (the other
    half's: two sentences can round to the same three α and h)."""
    first = None
    for i in steps(record, rng):
        for d in rng.permutation(min(DIMENSIONS, values.shape[1])):
            item = _context_item(record, values, i, int(d))
            if item.question.prompt in avoid:
                continue
            first = first or item
            if not shows(item.question.prompt, num(item.question.right[0])) and not guessable(item):
                return item
    return first


def _context_item(record, values: np.ndarray, i: int, d: int = 0) -> Item:
    pieces = word_pieces(record) or list(range(record.weights.shape[1]))
    top = sorted(pieces[j] for j in np.argsort(-record.weights[i, pieces])[:3])
    a = record.weights[i, top] / record.weights[i, top].sum()
    a = np.round(a, 2)
    a[-1] = round(1.0 - a[:-1].sum(), 2)
    h = np.round(values[top, d], 2)
    c = float(np.dot(a, h))
    listed = "; ".join(f"α = {num(w)}, h = {num(v)}" for w, v in zip(a, h))
    q = Question(f"A decoder step attends to three annotations, with these weights (RNNsearch's, over the three) and "
                 f"number {d + 1} of each h_j: {listed}. What is number {d + 1} of the context c_i = Σ_j α_ij h_j "
                 "(two decimals; accepted within ±0.02)?",
                 (round(c, 2),), ("", ""), " + ".join(f"{num(w)} × {num(v)}" for w, v in zip(a, h)) + f" = {c:.2f}.",
                 tolerance=0.02, digits=2)
    return Item("context", "transfer", q, (*map(float, h), float(np.mean(h)), float(np.sum(h))))


SETS = {"test": "the natural test split", "stress": "the long-sentence stress set",
        "newstest2014": "WMT newstest2014"}
MIN_SEGMENTS = 10  # a bucket with fewer sentences is noise, not a curve
MARGIN = 0.5  # the least lead, in BLEU points, by which the asked bucket beats the other three


def bucket_table(bleu, chosen: str):
    """RNNsearch's and RNNenc's BLEU per length bucket of one set, buckets of MIN_SEGMENTS or more."""
    rows = bleu[(bleu["set"] == chosen) & bleu["model"].isin(["rnnsearch", "rnnenc"])
                & (bleu["segments"] >= MIN_SEGMENTS)]
    return rows.pivot_table(index=["min_words", "bucket"], columns="model", values="bleu").dropna().reset_index()


def quartets(table, place: int) -> list[tuple[int, ...]]:
    """The four buckets (rows, shortest first) whose largest lead, alone by MARGIN, is the
    ``place``-th shortest: asking each place equally often, "the longest bucket" is right a
    quarter of the time."""
    leads = [round(round(s, 1) - round(e, 1), 1) for s, e in zip(table["rnnsearch"], table["rnnenc"])]
    out = []
    for four in combinations(range(len(table)), 4):
        ranked = sorted(four, key=lambda r: -leads[r])
        if ranked[0] == four[place] and leads[ranked[0]] - leads[ranked[1]] >= MARGIN:
            out.append(four)
    return out


class LengthTables:
    """What a BLEU-by-length table gives the length items, made once: each set's bucket table (a
    pandas pivot) and its quartets per place. Every check drawn from one table (a process's
    checks, one per seed; the audit's hundred seeds) reads them from one object: made per check,
    they would be most of a check's CPU. Made whole at once and never changed, so threads share it."""

    def __init__(self, bleu):
        self.bleu = bleu
        self._tables = {s: bucket_table(bleu, s) for s in SETS}
        self._quartets = {(s, p): quartets(t, p) for s, t in self._tables.items() for p in range(4)}
        self._sets = [s for s in SETS if all(self._quartets[s, p] for p in range(4))]

    def table(self, chosen: str):
        return self._tables[chosen] if chosen in self._tables else bucket_table(self.bleu, chosen)

    def quartets(self, chosen: str, place: int) -> list[tuple[int, ...]]:
        found = self._quartets.get((chosen, place))
        return found if found is not None else quartets(self.table(chosen), place)

    def sets(self) -> list[str]:
        """The sets whose table can put the largest lead at every place: the item's sets."""
        return list(self._sets)


def length_tables(bleu) -> LengthTables | None:
    """``bleu`` as :class:`LengthTables` (None stays None: no table, no length item)."""
    return bleu if bleu is None or isinstance(bleu, LengthTables) else LengthTables(bleu)


def length_sets(bleu) -> list[str]:
    """The sets whose table can put the largest lead at every place: the item's sets."""
    return length_tables(bleu).sets()


def length_item(bleu, chosen: str, rng: np.random.Generator, avoid: tuple = ()) -> Item:
    """Read a BLEU-by-length table (Figure 2's curves as numbers): in which of four buckets does
    RNNsearch lead RNNenc most? Leads compared at one decimal, as the table shows them; the four
    buckets drawn so that the asked one is at a seeded place, not always the longest, and not the
    four buckets ``avoid`` names (the other half's)."""
    tables = length_tables(bleu)
    table = tables.table(chosen)
    buckets, avoid = list(table["bucket"]), list(avoid)  # plain lists: a quartet's test is then a list read, not pandas' iloc
    fours = [f for p in rng.permutation(4) for f in [[q for q in tables.quartets(chosen, int(p))
                                                        if [buckets[i] for i in q] != avoid]] if f]
    picked = list(fours[0][int(rng.integers(0, len(fours[0])))]) if fours else \
        sorted(rng.choice(len(table), size=min(4, len(table)), replace=False))
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


ALIGNMENT_TRIES = 8  # REORDERED sentences tried for the alignment item (each a decoding): six for the drawn offset
# class, one for any class, the last asking any word


def check_pair(seed: int, record_of, values_of, bleu) -> tuple[Check, Check]:
    """The before and after checks of one seed: the same slots (:data:`SLOTS`), different instances.
    The unseen sentences are taken in a seeded order, each used once across the two halves (the
    alignment item takes an offset class per half from CLASSES, by the seed, and the first of
    REORDERED with a word of that class to ask); each recall slot asks two different members of its
    bank (for scoring, two different mechanisms), neither showing the other's key; ``bleu`` None
    (no BLEU-by-length table here) leaves the length slot out of both halves; ``bleu`` may be
    the table's :class:`LengthTables`, made once for every seed drawn from it."""
    bleu = length_tables(bleu)
    rng = np.random.default_rng([int(seed), 60])
    order = iter([OTHERS[n] for n in rng.permutation(len(OTHERS))])
    reordered = iter([REORDERED[n] for n in rng.permutation(len(REORDERED))])
    recall_order = {c: [int(m) for m in rng.permutation(len(members(c)))] for c in RECALL}
    sets = [str(s) for s in rng.permutation(sorted(SETS))]
    usable = length_sets(bleu) if bleu is not None else []
    sets = [s for s in sets if s in usable] or sets  # the sets that can put the asked bucket anywhere

    # the halves' offset classes, by the seed: any run of len(CLASSES) seeds asks each class as often
    offsets = [CLASSES[int(seed) % len(CLASSES)], CLASSES[(int(seed) + len(CLASSES) // 2) % len(CLASSES)]]

    def alignment(n: int):
        for tries, text in zip(range(ALIGNMENT_TRIES), reordered):  # the last try asks whatever word it has
            made = alignment_item(record_of(text), rng, strict=tries < ALIGNMENT_TRIES - 1,
                                  wanted=offsets[n] if tries < ALIGNMENT_TRIES - 2 else None)
            if made is not None:
                return made
        raise ValueError("no unseen sentence has a word to ask")

    def recall(concept: str, n: int) -> Item:  # the halves' members, different: each avoids the other's
        first = recall_order[concept][0]
        second = next(p for p in recall_order[concept] if members(concept)[p][1] != members(concept)[first][1])
        picks = (first, second) if n == 0 else (second, first)
        return recall_draw(concept, rng, picks[0], avoid=members(concept)[picks[1]][1])

    halves = []
    for n, half in enumerate(HALVES):
        items = []
        for concept, kind in slots(bleu):
            if kind == "recall":
                items.append(recall(concept, n))
            elif concept == "alignment":
                items.append(alignment(n))
            elif concept == "weights":
                items.append(weights_item(record_of(next(order)), rng))
            elif concept == "context":
                text = next(order)
                asked = {i.question.prompt for i in (halves[0].items if halves else ()) if i.concept == "context"}
                items.append(context_item(record_of(text), values_of(text), rng, asked))
            else:
                before = [i for i in (halves[0].items if halves else ()) if i.concept == "length"]
                items.append(length_item(bleu, sets[n % len(sets)], rng,
                                         tuple(c.removesuffix(" words") for c in before[0].question.choices)
                                         if before else ()))
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
    """The items most missed in ``half``: (slug, students wrong, students who answered), most wrong
    first; the ``top`` most missed and every item tied with the last of them (a cut never drops one)."""
    wrong: dict[str, list[int]] = {}
    for answers in cc.halves[half].values():
        for slug, ok in answers.items():
            wrong.setdefault(slug, []).append(int(not ok))
    ranked = [(slug, sum(v), len(v)) for slug, v in sorted(wrong.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
              if sum(v)]
    last = ranked[min(top, len(ranked)) - 1][1] if ranked else 0
    return [r for n, r in enumerate(ranked) if n < top or r[1] == last]
