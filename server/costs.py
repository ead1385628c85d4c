"""What one piece of a page's work costs, estimated before it starts, and how much of it one run may ask.

A decoder step attends over every source piece for every hypothesis of the beam, and a sentence
of S pieces takes about S steps (``model/search.py``), so one decoding costs about S · S · k
*units* (a unit: one hypothesis attending over one piece at one step); Compare pays it once per
model, and an attribution once per pass (``model/attribution.py``: knock-out and input
occlusion force-decode the sentence once per source piece, gradient × input takes one backward
pass per target token, integrated gradients that many per point). The estimate needs only the
number of pieces, so it is known before any model runs.

The scheduler (``server/lanes.py``) sends work of at least ``COSTLY_FROM`` units to the costly
lane, and lets everything cheaper (a class's short sentences, a page that decodes nothing new)
pass it. The bounds here cut what one run may ask (the first N words of the sentence), each with
the sentence the page shows where it cuts; ``docs/settings.md`` lists the settings behind them.
"""
from __future__ import annotations

from dataclasses import dataclass

from server import settings

COSTLY_FROM = 5000  # units: a 40-piece sentence at k = 3 (4,800) is cheap; 120 pieces greedy (14,400) is not
PASSES = {"knock-out": "pieces", "input-occlusion": "pieces", "gxi": "targets", "ig": "targets x points"}


def decoding_cost(pieces: int, beam: int = 1, models: int = 1) -> int:
    """Units of one decoding of ``pieces`` source pieces with a beam of ``beam``, on ``models`` models."""
    pieces = max(1, pieces)
    return pieces * pieces * max(1, beam) * max(1, models)


def attribution_cost(pieces: int, targets: int, method: str, points: int = 1) -> int:
    """Units of one attribution: its passes (see the module) times one forced decoding each."""
    pieces, targets = max(1, pieces), max(1, targets)
    passes = {"knock-out": pieces, "input-occlusion": pieces, "gxi": targets, "ig": targets * max(1, points)}
    return passes.get(method, pieces) * pieces * targets


def costly(cost: float) -> bool:
    return cost >= COSTLY_FROM


@dataclass(frozen=True)
class Cut:
    """What a bound left of the input: ``text``, and ``notice`` (None when nothing was cut)."""
    text: str
    notice: str | None


def first_words(text: str, most: int, what: str) -> Cut:
    """``text`` cut to its first ``most`` words (whitespace-separated), with the sentence the page
    shows: "<what> here takes at most N words: the first N are shown"."""
    words = text.split()
    if len(words) <= most:
        return Cut(text, None)
    return Cut(" ".join(words[:most]), f"{what} here takes at most {most} words: the first {most} are shown "
                                         f"(of {len(words)}). A shorter sentence is shown whole.")


def beam_bound(text: str, beam: int, page: str = "Beam search") -> Cut:
    """Beam search (Translate, Compare, the Beam search tree) takes at most ``settings.beam_words()``
    words; greedy decoding (k = 1) takes the whole box."""
    if beam <= 1:
        return Cut(text, None)
    return first_words(text, settings.beam_words(), page)


def compare_bound(text: str, models: int, beam: int = 1) -> Cut:
    """Compare decodes the sentence once per model: ``settings.compare_words()`` words in all,
    shared out among the models picked (at least the beam bound's worth each), and at most the
    beam bound with beam search."""
    most = max(settings.beam_words(), settings.compare_words() // max(1, models))
    if beam > 1:
        most = settings.beam_words()
    elif models <= 1:
        return Cut(text, None)
    return first_words(text, most, f"Compare with {models} models" + (f" at k = {beam}" if beam > 1 else ""))


def attribution_bound(text: str) -> Cut:
    """Attention or attribution? takes at most ``settings.attribution_words()`` words."""
    return first_words(text, settings.attribution_words(), "Attribution")


__all__ = ["COSTLY_FROM", "Cut", "attribution_bound", "attribution_cost", "beam_bound", "compare_bound", "costly",
           "decoding_cost", "first_words"]
