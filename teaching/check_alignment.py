"""The check's alignment transfer item (``teaching/check.py``): which English word does RNNsearch
read most while writing a French word of an unseen sentence, an item no rule on the words'
positions answers better than chance.

A reader who never saw the lesson still sees both sentences, so she can answer by place: the
English word at the French word's own place (the *diagonal*), anything off it, one place off it
(French puts the adjective after its noun), one before or one after it, before or after it, the
nearest to it, the farthest from it, neither of those two, or the English word spelt like the
French one; or by the options' length. The item defeats each of these (:data:`RULES`, all held by
``teaching/check_audit.py``) the same way. It asks French words whose English word sits at varied
offsets from the diagonal and never on it, by class (:data:`CLASSES`: one before it, an adjective
or a possessor; one after it, a noun before its adjective; two or more before it, a possessor after
its noun; two or more after it, a noun after a possessor), the class taken from the seed so that
any run of seeds asks each as often. Then, among every set of :data:`OPTIONS` English content
words holding the key, it shows one where the rules point at the key least (:func:`exposure`):
a neighbour distractor on the key's other side, a farther one, a longer one. The options show a
possessor without its 's (father's: father), no longer than the words around it.
No UI here.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import combinations

import numpy as np

from teaching.check_bank import OPTIONS, STOPWORDS
from teaching.lesson_questions import Question, ties, words_of

CLEAR = 0.6  # the least α an asked French word puts on its English word: a prediction a reader can make
COGNATE = 0.5  # spelling similarity (difflib's ratio, accents dropped) from which two words look alike
PUNCTUATION = ".,!?;:'\"«»"


def bare(word: str) -> str:
    """A word as compared for spelling: lower case, accents and punctuation dropped."""
    decomposed = unicodedata.normalize("NFKD", word.lower().strip(PUNCTUATION))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def cognate(french: str, english: str) -> bool:
    """Do the two words look alike (banque, bank; rapport, report)? A reader who knows no attention
    would pick the English word spelt like the French one."""
    a, b = bare(french), bare(english)
    return a[:3] == b[:3] or SequenceMatcher(None, a, b).ratio() >= COGNATE


def diagonal(k: int, n_french: int, n_english: int) -> set[int]:
    """The English positions a reader guesses for French word k without reading α: the same
    position, and the same share of the way through the sentence."""
    return {min(k, n_english - 1), round(k * (n_english - 1) / max(1, n_french - 1))}


def offset(j: int, k: int, n_french: int, n_english: int) -> int:
    """English word j's signed distance from French word k's diagonal: 0 on it, −1 the word just
    before it, +2 two words after it."""
    d = diagonal(k, n_french, n_english)
    return j - min(d) if j < min(d) else j - max(d) if j > max(d) else 0


@dataclass(frozen=True)
class View:
    """An alignment item as its reader sees it: the asked French word, its place k, both sentences'
    lengths, and each option's English place."""
    asked: str
    k: int
    n_french: int
    n_english: int
    places: dict[str, int]

    def offsets(self) -> dict[str, int]:
        return {o: offset(j, self.k, self.n_french, self.n_english) for o, j in self.places.items()}


def _where(view: View, keep) -> list[str]:
    """The options whose offset passes ``keep``; every option (a blind guess) where none does."""
    found = [o for o, d in view.offsets().items() if keep(d)]
    return found or list(view.places)


def _extreme(view: View, sign: int) -> list[str]:
    distance = {o: sign * abs(d) for o, d in view.offsets().items()}
    top = max(distance.values())
    return [o for o, d in distance.items() if d == top]


def _between(view: View) -> list[str]:
    """Neither the nearest to the diagonal nor the farthest from it: the reader who avoids both ends."""
    distance = {o: abs(d) for o, d in view.offsets().items()}
    found = [o for o, d in distance.items() if min(distance.values()) < d < max(distance.values())]
    return found or list(view.places)


def _spelt(view: View) -> list[str]:
    ratio = {o: SequenceMatcher(None, bare(view.asked), bare(o.split(". ", 1)[-1])).ratio() for o in view.places}
    top = max(ratio.values())
    return [o for o, r in ratio.items() if r == top]


# the rules on places and spelling, each an answer (its choices, tied) from what the reader sees
RULES = {
    "diagonal": lambda v: _where(v, lambda d: d == 0),
    "off the diagonal": lambda v: _where(v, lambda d: d != 0),
    "next to the diagonal": lambda v: _where(v, lambda d: abs(d) == 1),
    "one before the diagonal": lambda v: _where(v, lambda d: d == -1),
    "one after the diagonal": lambda v: _where(v, lambda d: d == 1),
    "before the diagonal": lambda v: _where(v, lambda d: d < 0),
    "after the diagonal": lambda v: _where(v, lambda d: d > 0),
    "nearest the diagonal": lambda v: _extreme(v, -1),
    "farthest from the diagonal": lambda v: _extreme(v, 1),
    "neither nearest nor farthest": _between,
    "spelt alike": _spelt,
    "longest option": lambda v: [o for o in v.places if len(o) == max(map(len, v.places))],
    "shortest option": lambda v: [o for o in v.places if len(o) == min(map(len, v.places))],
}


# the rules the sentences' shape favours (a possessor is long; a key off the diagonal is seldom the
# nearest or the farthest word), weighted up so that the options offset them
WEIGHT = {"longest option": 3.0, "neither nearest nor farthest": 3.0}


def exposure(view: View, key: str) -> float:
    """How much the rules give the key away: the sum over :data:`RULES` of each one's share on the
    key beyond chance, squared, weighted by :data:`WEIGHT` (0 when no rule beats a blind guess)."""
    chance = 1 / len(view.places)
    shares = [(key in chosen) / len(chosen) for chosen in (rule(view) for rule in RULES.values())]
    return sum(WEIGHT.get(name, 1.0) * max(0.0, s - chance) ** 2 for name, s in zip(RULES, shares))


def stem_of(word: str) -> str:
    """An English word as an option shows it: punctuation and a possessive 's dropped (father's:
    father), so that a possessor is no longer than the words around it."""
    word = word.strip(PUNCTUATION)
    return word[:-2] if word.lower().endswith("'s") and len(word) > 4 else word


def content(words: list[str]) -> list[int]:
    """The English places an option may show: words of three letters or more, no function word."""
    return [n for n, w in enumerate(words) if len(w) >= 3 and w.lower() not in STOPWORDS]


def askable(weights, english, french) -> list[int]:
    """The French words an item may ask: a content word of four letters or more whose largest α
    (≥ CLEAR, alone at two decimals) falls on an English content word neither spelt alike nor on
    the diagonal."""
    words = [stem_of(w) for w in english]
    shown = set(content(words))
    out = []
    for k in range(len(french)):
        j = int(weights[k].argmax())
        if len(bare(french[k])) >= 4 and bare(french[k]).isalpha() and weights[k].max() >= CLEAR \
                and len(ties(weights[k], 2)) == 1 and j in shown and not cognate(french[k], words[j]) \
                and offset(j, k, len(french), len(english)) != 0:
            out.append(k)
    return out


def offset_class(d: int) -> int:
    """Offsets grouped as a reader's rules group them: two or more before, one before, one after,
    two or more after."""
    return max(-2, min(2, d))


# the offset classes a check draws from (check.check_pair, one per half): two or more places off the
# diagonal as often as one place off it, so that "next to the diagonal" and "one before it" stay
# near chance
CLASSES = (-2, -2, -1, 1, 2, 2)


def alignment_question(record, rng: np.random.Generator, strict: bool = True,
                       wanted: int | None = None) -> Question | None:
    """Predict the alignment of an unseen sentence: which English word RNNsearch reads most while
    writing a French word (α merged to words). Strict: a French word of :func:`askable` of offset
    class ``wanted`` (:func:`offset_class`; None when the sentence has none; any class, drawn
    first, when ``wanted`` is None), shown with the OPTIONS content words (the key among them)
    that give it away least (:func:`exposure`, ties drawn), in a seeded order; None when the
    sentence has no such word or fewer than OPTIONS content words. ``strict=False`` (a model that
    writes no such word, as the tests' digit-reversal models) asks any French word among all the
    English words, a tie at two decimals accepting each."""
    weights, english, french = words_of(record)
    words = [stem_of(w) for w in english]
    asked = askable(weights, english, french) if strict else list(range(len(french)))
    if not asked or len(english) < 2 or (strict and len(content(words)) < OPTIONS):
        return None
    group = {k: offset_class(offset(int(weights[k].argmax()), k, len(french), len(english))) for k in asked}
    classes = sorted(set(group.values()))
    if wanted is not None and wanted not in classes:
        return None
    chosen = wanted if wanted is not None else classes[int(rng.integers(0, len(classes)))]
    k = int(rng.choice([k for k in asked if group[k] == chosen]))
    right = ties(weights[k], 2)

    def name(n: int) -> str:
        return f"{n + 1}. {words[n] or english[n]}"
    if strict:
        j = right[0]
        pool = [n for n in content(words) if n != j]
        if len(pool) < OPTIONS - 1:
            return None
        sets = [sorted((j, *others)) for others in combinations(pool, OPTIONS - 1)]
        views = [View(bare(french[k]), k, len(french), len(english), {name(n): n for n in s}) for s in sets]
        cost = [round(exposure(v, name(j)), 9) for v in views]
        best = [s for s, c in zip(sets, cost) if c == min(cost)]
        shown = list(best[int(rng.integers(0, len(best)))])
        shown = [shown[n] for n in rng.permutation(len(shown))]
    else:
        shown = list(range(len(words)))
    choices = tuple(name(n) for n in shown)
    q = Question(f"RNNsearch translates “{' '.join(english)}” as “{' '.join(french)}” Which English word does it "
                 f"read most while writing “{french[k].strip(PUNCTUATION)}”?",
                 tuple(choices[shown.index(n)] for n in right), ("", ""),
                 f"{choices[shown.index(right[0])]}, α = {weights[k, right[0]]:.2f}.", choices,
                 values=tuple(float(weights[k, n]) for n in shown), digits=2, facts=(("reads-most", k),))
    return q
