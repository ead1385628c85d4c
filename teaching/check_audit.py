"""A check on the check (``teaching/check.py``): what a student who never saw the lesson scores by
answering with a rule, slot by slot, against what blind chance scores.

Each *strategy* reads an item as the student sees it (its prompt and its options, nothing of the
model) and answers it: a choice (several, when the rule ties, each then worth an equal share), a
number, or nothing where the rule does not apply. A strategy's score on a slot is its mean over
every item of that slot the seeds draw; chance on a choice item is the share of its options that
are right, and on a number item nothing (a number typed blind is never within the tolerance). The
check is fair to the lesson when no strategy beats chance by more than :data:`ALLOWED` on any slot.

The rules: the issue's five (the longest option, the diagonal, the longest-sentence bucket, h_j of
the largest α, 0.25 for α) and the ones found since: the shortest option, the middle option, the
option echoing the stem's words, elimination by the keys of the other items of the pair, the bucket
where RNNenc is lowest, the energy's share of their sum for α, the unweighted mean of h_j for c_i,
and on the alignment item every rule of place and spelling of ``teaching/check_alignment.py``
(off the diagonal, next to it, one before or after it, before or after it, nearest to it, farthest
from it, the English word spelt like the French one). Every rule is held to :data:`ALLOWED`; a rule
that does not apply to an item it reads (no option on the diagonal) guesses among all options. No UI
here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from teaching.check import check_pair, HALVES, Item, length_tables
from teaching.check_alignment import bare, RULES, View
from teaching.check_bank import content_words

ALLOWED = 0.10  # a rule may beat chance by this much on a slot, no more
NUMBER = r"-?\d+(?:\.\d+)?"


def _best(options, value) -> list[str]:
    """The options where ``value`` (a number per option) is largest: the rule's choice, ties and all."""
    values = [value(o) for o in options]
    top = max(values)
    return [o for o, v in zip(options, values) if v == top]


def longest(item: Item, _):
    q = item.question
    return _best(q.choices, len) if q.choices else None


def shortest(item: Item, _):
    q = item.question
    return _best(q.choices, lambda o: -len(o)) if q.choices else None


def middle(item: Item, _):
    """The middle of the options as listed (both middles of an even count): the "middle number"."""
    c = item.question.choices
    if not c:
        return None
    n = len(c)
    return [c[(n - 1) // 2], c[n // 2]]


def echo(item: Item, _):
    """The option sharing the most content words with the stem."""
    q = item.question
    if not q.choices:
        return None
    stem = content_words(q.prompt)
    return _best(q.choices, lambda o: len(content_words(o) & stem))


def elimination(item: Item, keys: set[str]):
    """Every option that is the key of another item of the pair (Before's or After's, told by a
    classmate or read off the other half) struck out, one of the rest."""
    q = item.question
    if not q.choices:
        return None
    rest = [o for o in q.choices if o not in keys - set(q.right)]
    return rest or list(q.choices)


def view(item: Item) -> View | None:
    """An alignment transfer item as its reader sees it (``teaching/check_alignment.py``): the asked
    French word, its place, both sentences' lengths and each option's English place, read off the
    prompt and the options' numbers."""
    m = re.search(r"translates “(.*)” as “(.*)” Which English word does it read most while writing “(.*)”",
                  item.question.prompt)
    if item.concept != "alignment" or item.kind != "transfer" or not m:
        return None
    french = [bare(w) for w in m.group(2).split()]
    asked = bare(m.group(3))
    places = {o: int(o.split(".", 1)[0]) - 1 for o in item.question.choices}
    return View(asked, french.index(asked) if asked in french else 0, len(french), len(m.group(1).split()), places)


def placed(rule):
    """A rule of :data:`teaching.check_alignment.RULES` as a strategy: the alignment item only."""
    def strategy(item: Item, _):
        found = view(item)
        return None if found is None else rule(found)
    return strategy


def _buckets(item: Item):
    if item.concept != "length":
        return None
    rows = re.findall(r"(\S+) words: RNNsearch (" + NUMBER + r"), RNNenc (" + NUMBER + ")", item.question.prompt)
    return [(f"{b} words", int(re.match(r"\d+", b).group()), float(s), float(e)) for b, s, e in rows]


def longest_bucket(item: Item, _):
    rows = _buckets(item)
    return [max(rows, key=lambda r: r[1])[0]] if rows else None


def rnnenc_lowest(item: Item, _):
    rows = _buckets(item)
    return [min(rows, key=lambda r: r[3])[0]] if rows else None


def _energies(item: Item):
    if item.concept != "weights" or item.kind != "transfer":
        return None
    e = [float(x) for x in re.findall(r"e = (" + NUMBER + ")", item.question.prompt)]
    names = re.findall(r"(\d+)\. [^:]+: e = ", item.question.prompt)
    asked = re.search(r"α of “(\d+)\.", item.question.prompt)
    return (np.array(e), names.index(asked.group(1))) if e and asked and asked.group(1) in names else None


def quarter(item: Item, _):
    """0.25 for α: one over the pieces shown."""
    found = _energies(item)
    return 1 / len(found[0]) if found else None


def energy_share(item: Item, _):
    """α as the energy's share of their sum, no exponential."""
    found = _energies(item)
    if not found:
        return None
    e, n = found
    return float(e[n] / e.sum()) if e.sum() else None


def _context(item: Item):
    if item.concept != "context":
        return None
    pairs = re.findall(r"α = (" + NUMBER + "), h = (" + NUMBER + ")", item.question.prompt)
    return [(float(a), float(h)) for a, h in pairs] or None


def largest_weights_h(item: Item, _):
    """h_j of the largest α, as if the context were the most attended annotation."""
    pairs = _context(item)
    return max(pairs)[1] if pairs else None


def mean_h(item: Item, _):
    """The unweighted mean of the annotations."""
    pairs = _context(item)
    return float(np.mean([h for _, h in pairs])) if pairs else None


STRATEGIES = {
    "longest option": longest, "shortest option": shortest, "middle option": middle, "echo of the stem": echo,
    "elimination by known keys": elimination,
    **{name: placed(rule) for name, rule in RULES.items() if name not in ("longest option", "shortest option")},
    "longest-sentence bucket": longest_bucket, "RNNenc lowest": rnnenc_lowest,
    "0.25 for α": quarter, "energy's share": energy_share, "h_j of the largest α": largest_weights_h,
    "mean of h_j": mean_h,
}

def worth(item: Item, answer) -> float:
    """What an answer scores: a number right or not; choices, the share of them that are right
    (a rule that ties picks one of its choices at random)."""
    q = item.question
    if isinstance(answer, list):
        return sum(q.check(a) for a in answer) / len(answer)
    return float(q.check(answer))


def chance(item: Item) -> float:
    q = item.question
    return len(set(q.right) & set(q.choices)) / len(q.choices) if q.choices else 0.0


@dataclass
class Audit:
    """Per strategy and slot, the scores of every item it answered; per slot, chance's."""
    scores: dict[str, dict[str, list[float]]]
    chances: dict[str, list[float]]
    features: dict[str, dict[str, float]]

    def table(self) -> list[dict]:
        rows = []
        for name, by_slot in self.scores.items():
            for slot, values in by_slot.items():
                rows.append({"strategy": name, "slot": slot, "items": len(values),
                             "score": float(np.mean(values)), "chance": float(np.mean(self.chances[slot])),
                             "over_chance": float(np.mean(values) - np.mean(self.chances[slot]))})
        return rows

    def worst(self) -> dict:
        """The rule that beats chance by the most on a slot."""
        return max(self.table(), key=lambda r: r["over_chance"])


def cues(items: list[Item]) -> int:
    """Pairs of items of one check where one's key could answer the other: printed in the other's
    stem, or sharing three content words or more with it."""
    found = 0
    for a in items:
        for b in items:
            if a is not b and a.question.choices and a.kind == "recall":
                key = str(a.question.right[0])
                found += key in b.question.prompt or len(content_words(key) & content_words(b.question.prompt)) >= 3
    return found


def audit(seeds, record_of, values_of, bleu) -> Audit:
    """Every strategy on every item of both halves of each seed."""
    bleu = length_tables(bleu)  # the BLEU table's pivots made once for every seed
    rules = STRATEGIES
    scores: dict[str, dict[str, list[float]]] = {name: {} for name in rules}
    chances: dict[str, list[float]] = {}
    rank: dict[str, list[float]] = {}
    echoes, cross, checks = 0, 0, 0
    for seed in seeds:
        pair = check_pair(seed, record_of, values_of, bleu)
        keys = {str(r) for check in pair for item in check.items if item.question.choices
                for r in item.question.right}
        for check in pair:
            checks += 1
            cross += cues(list(check.items))
            for item in check.items:
                q = item.question
                chances.setdefault(item.slug, []).append(chance(item))
                if item.kind == "recall":
                    rank.setdefault(item.slug, []).append(worth(item, longest(item, keys)))  # a tie: a share
                    echoes += bool(content_words(q.right[0]) & content_words(q.prompt))
                for name, strategy in rules.items():
                    answer = strategy(item, keys)
                    if answer is not None:
                        scores[name].setdefault(item.slug, []).append(worth(item, answer))
    features = {slug: {"key longest": float(np.mean(v))} for slug, v in rank.items()}
    features["check"] = {"stems echoing their key": float(echoes), "cross-item cues": float(cross),
                         "checks": float(checks)}
    return Audit({n: s for n, s in scores.items() if s}, chances, features)


__all__ = ["ALLOWED", "audit", "Audit", "STRATEGIES", "HALVES"]
