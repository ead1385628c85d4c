"""Item analysis of a class's check (classical test theory): per half and item, how hard it was and
whether it tells the students who know from those who do not.

- **difficulty** p: the share of the students who took the half that got the item right;
- **discrimination**: the point-biserial correlation of the item (1 right, 0 wrong) with the
  student's score on the *rest* of the half (the item itself left out, so that it does not
  correlate with itself): r = (M₁ − M₀) / s · √(p(1 − p)), M₁ and M₀ the mean rest score of those
  right and wrong, s its standard deviation over all (population). None when everyone got it
  right, or wrong, or everyone has the same rest score (no spread to correlate);
- **flagged**: negative discrimination, the students strongest on the rest of the check missing
  the item more than the others: a key to look at (ambiguous, or a misleading distractor).

Every number comes with the count it rests on; below :data:`MIN_STUDENTS` the page says "too few to
say" instead of a discrimination (a point-biserial on a handful of students is mostly noise).
No UI here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teaching.check import HALVES

MIN_STUDENTS = 10  # the fewest students of a half from which its items' discrimination is reported


@dataclass(frozen=True)
class ItemStats:
    half: str
    slug: str
    answered: int                 # the students it rests on
    difficulty: float             # share right
    discrimination: float | None  # point-biserial with the rest of the half; None: no spread

    @property
    def enough(self) -> bool:
        return self.answered >= MIN_STUDENTS

    @property
    def flagged(self) -> bool:
        """The strongest students on the rest of the check miss it more than the others."""
        return self.enough and self.discrimination is not None and self.discrimination < 0


def point_biserial(item: np.ndarray, rest: np.ndarray) -> float | None:
    """The correlation of a 0/1 item with the rest score; None without spread in either."""
    p = float(item.mean())
    s = float(rest.std())
    if p in (0.0, 1.0) or s == 0:
        return None
    return (float(rest[item == 1].mean()) - float(rest[item == 0].mean())) / s * np.sqrt(p * (1 - p))


def item_analysis(halves: dict[str, dict[str, dict[str, bool]]]) -> list[ItemStats]:
    """Per half (in :data:`HALVES` order) and item (in the order first answered), the item's
    difficulty and discrimination over the students who took that half (``ClassCheck.halves``)."""
    out = []
    for half in HALVES:
        students = halves.get(half, {})
        slugs = list(dict.fromkeys(slug for answers in students.values() for slug in answers))
        for slug in slugs:
            took = [s for s, answers in students.items() if slug in answers]
            if not took:
                continue
            item = np.array([int(students[s][slug]) for s in took])
            rest = np.array([sum(int(ok) for other, ok in students[s].items() if other != slug) for s in took],
                            dtype=float)
            out.append(ItemStats(half, slug, len(took), float(item.mean()), point_biserial(item, rest)))
    return out
