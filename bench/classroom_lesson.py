"""The lesson ``bench/classroom.py`` plays: its sentences, models, faults and each student's steps.

A ``Lesson`` is one student's plan: open a shared link to Translate, change the sentence,
open Compare with four models, Step through with two of its sections shown (then move its
step slider five times), the Beam search tree, and, in a class the bench opened, answer a
"which mechanism" exercise, follow the teacher through three sends (SENDS), reload the page
and answer the last sent exercise; then the teacher's MOVES: the same page sent with another
number (the tab's widgets checked against the link), a reveal to tabs that did not answer, a
removal (the removed tab says so, the others do not) and its undo. ``make_lessons`` deals the plans to N sessions (10 % of them
faulty: an empty, a 5,000-character or a markup sentence, or a tab closed mid-rerun);
``news_sentences`` gives the soak fresh WMT news sentences.
"""
from __future__ import annotations

import gzip
import random
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

from model.zoo import zoo_names  # the caller puts the repository on sys.path (bench/classroom.py, the tests)

ROOT = Path(__file__).resolve().parent.parent

# 8-20 words each; none is among the app's examples, so nothing is translated before it is asked
SENTENCES = [
    "The children walked to school together every morning before the sun came up.",
    "My grandmother still writes letters by hand to all of her old friends.",
    "The committee will publish its final report on the new energy policy next week.",
    "We missed the last train home, so we spent the night in a small hotel.",
    "The government has promised to reduce taxes for small businesses in rural areas.",
    "Could you tell me where I can buy tickets for the concert tonight?",
    "The old library near the river was closed for repairs during the whole summer.",
    "Scientists believe that the ice in the north is melting faster than expected.",
    "He forgot his umbrella at the office and arrived home completely wet.",
    "The minister said that the agreement would protect workers and their families.",
]
MODELS = zoo_names(recurrent=True)  # a lesson's models: the zoo's RNNs (Step through's sections are theirs)
COMPARED = "rnnsearch,luong-dot,luong-general,luong-concat"
SHOWN_SECTIONS = "weights,output"  # Step through's sections the lesson's link opens (each model has these two, or one)
BAD_TEXT = {"empty": "", "long": ("The committee met again today to discuss the budget. " * 100)[:5000],
            "markup": "<script>alert(1)</script> **bold** [x](javascript:y)"}
FAULTS = ["empty", "long", "markup", "disconnect"]
# what the teacher sends while the class follows, one after another: a step by hand, the worked
# example, then the "which mechanism" exercise every student answers once more after a reload
SENDS = (("exercises", {"ex": "step", "seed": "4"}), ("worked-example", {}), ("exercises", {"ex": "which", "seed": "0"}))
# then, with the room on that exercise after its reload and answer: the same page with another number
# (each tab's exercise selector and number box checked), a reveal of it to tabs that did not answer
# it, the first student on the roster removed (their tab told, the others not), and the removal undone
SAME_PAGE = ("exercises", {"ex": "which", "seed": "3"})
SAME_PAGE_WIDGETS = {"ex_kind": "Which mechanism drew this?", "ex_seed": "3"}
MOVES = (("send", *SAME_PAGE), ("reveal", "which:3", None), ("remove", None, None), ("readmit", None, None))
NOT_ANSWERED = "You did not answer this exercise"


def mechanism_choice(seed: int) -> str:
    """The radio's label the lesson picks: Luong global at levels 1–2 (the family), dot at level 3
    (teaching/exercises.py FAMILIES, MECHANISMS)."""
    return "dot (Luong)" if seed % 3 == 2 else "Luong global (dot, general or concat)"


def sent_link(page: str, params: dict, code: str) -> tuple[str, str]:
    """The (path, query) a follower opens for a send (ui/class_follow.py ``sent_link``)."""
    return page, urlencode({**params, "class": code, "sent": "1"})


@dataclass(frozen=True)
class Lesson:
    first: str
    second: str
    model: str
    fault: str | None = None
    class_code: str = ""
    exercise: int = 0  # the seed of the "which mechanism" exercise this student answers

    def steps(self) -> list[tuple[str, tuple]]:
        """(kind, action): action is ("open", url path, query), ("goto", url path, query),
        ("set", widget key, value) or ("drop", ...): set, then close the socket at once."""
        text = BAD_TEXT.get(self.fault, self.second)

        def link(**query) -> str:
            return urlencode({k: v for k, v in query.items() if v}, quote_via=quote, safe=",")

        steps = [("open", ("open", "", link(text=self.first, model=self.model))),
                 ("edit", ("drop" if self.fault == "disconnect" else "set", "translate_text", text))]
        if self.fault == "disconnect":  # the tab is gone: the student opens the link again
            steps.append(("open", ("open", "", link(text=text, model=self.model))))
        steps += [("compare", ("goto", "compare", link(text=text, models=COMPARED))),
                  ("step", ("goto", "step-through", link(text=text, model=self.model, sections=SHOWN_SECTIONS)))]
        steps += [("slide", ("set", "step_i", i)) for i in range(2, 7)]
        steps.append(("beam", ("goto", "beam-tree", link(text=text, model=self.model))))
        if self.class_code:
            seed = self.exercise
            steps += [("exercise", ("goto", "exercises", link(ex="which", seed=seed, **{"class": self.class_code}))),
                      ("choose", ("set", f"ex_which_{seed}", mechanism_choice(seed))),
                      ("answer", ("click", f"ex_check_which:{seed}", True))]
            # following the teacher through three sends (each opened inside the tab's session), a reload, and the
            # last sent exercise answered: the same student id all along (server/identity.py)
            steps += [("follow", ("follow", k, sent_link(page, params, self.class_code)))
                      for k, (page, params) in enumerate(SENDS)]
            last = int(SENDS[-1][1]["seed"])
            steps += [("reload", ("reload", "", "")), ("choose", ("set", f"ex_which_{last}", mechanism_choice(last))),
                      ("answer", ("click", f"ex_check_which:{last}", True))]
            steps += self.teacher_moves()
        return steps

    def teacher_moves(self) -> list[tuple[str, tuple]]:
        """MOVES, each followed (``follow``: the teacher's k-th move, then what the page's listener
        does) and checked (``check``: the tab's widgets, the reveal's words, whether it says it was
        removed)."""
        k = len(SENDS)
        same = sent_link(*SAME_PAGE, self.class_code)
        return [("follow", ("follow", k, same)), ("check", ("check", "widgets", SAME_PAGE_WIDGETS)),
                ("follow", ("follow", k + 1, (same[0], None))), ("check", ("check", "text", NOT_ANSWERED)),
                ("follow", ("follow", k + 2, (same[0], None))), ("check", ("check", "removed", k + 2)),
                ("follow", ("follow", k + 3, (same[0], None))), ("check", ("check", "removed", k + 3))]


def make_lessons(n: int, seed: int, sentences: list[str], faulty: int | None = None, fresh: bool = False,
                 class_code: str = "") -> list[Lesson]:
    """n sessions' lessons, 10 % of them faulty. Session i translates sentences i and i + 1 (the
    default lesson: sessions share sentences, as a class following one link does), or with
    ``fresh`` sentences 2i and 2i + 1 (no two sessions share one); with ``class_code``, each then
    answers "which mechanism" exercise i mod 5 in that class."""
    faulty = faulty if faulty is not None else max(int(n >= 5), round(n / 10))
    faulty_at = sorted(random.Random(seed).sample(range(n), min(faulty, n)))
    k = len(sentences)
    first, second = (lambda i: 2 * i, lambda i: 2 * i + 1) if fresh else (lambda i: i, lambda i: i + 1)
    return [Lesson(sentences[first(i) % k], sentences[second(i) % k], MODELS[i % len(MODELS)],
                   FAULTS[faulty_at.index(i) % len(FAULTS)] if i in faulty_at else None, class_code, i % 5)
            for i in range(n)]


def news_sentences(seed: int) -> list[str]:
    """Fresh sentences for ``--soak``: WMT news (newstest2009–2013, the English side), 8–20
    words, in a seeded order; none is among the app's examples or this lesson's SENTENCES."""
    lines = []
    for year in range(2009, 2014):
        path = ROOT.parent / "shared" / "data" / "wmt-news" / f"newstest{year}.en.gz"
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines += [line.strip() for line in f if 8 <= len(line.split()) <= 20 and "<" not in line]
    lines = list(dict.fromkeys(lines))
    random.Random(seed).shuffle(lines)
    return lines
