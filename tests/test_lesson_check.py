"""The Lesson page's check before stop 1 and after the last stop (``ui/lesson_check.py``): AppTest
on the tiny checkpoints. A student alone takes the check before (answers set here, some right),
walks to the end, takes the check after (every item right) and reads their own gain per concept
and the stops to look at again; the answers are computed here from the same checkpoints, not read
from the page."""
from __future__ import annotations

import pandas as pd
import pytest

from conftest import ROOT
from helpers.lesson import N, open_lesson, stop_title
from teaching import check as ch

DIGITS = "1 2 3 4 5"


@pytest.fixture(scope="module")
def sources(tiny_zoo):
    from model.internals import annotation_values
    from model.search import greedy, prepare_source
    from model.zoo import load_entry
    entry = load_entry(tiny_zoo / "rnnsearch")
    return (lambda t: greedy(entry.model, entry.vocab, prepare_source(entry.vocab, t)),
            lambda t: annotation_values(entry.model, prepare_source(entry.vocab, t).ids),
            pd.read_csv(ROOT / "results" / "bleu_by_length.csv"))


def indexed(table):
    """A table as drawn, by its first column (concept or kind) whether or not the page made it the index."""
    return table.set_index(table.columns[0]) if table.columns[0] in ("concept", "kind") else table


def items_of(sources, seed: int, half: str) -> tuple[ch.Item, ...]:
    return ch.check_pair(seed, *sources)[ch.HALVES.index(half)].items


def wrong_answer(q):
    if q.choices:
        return next(c for c in q.choices if c not in q.right)
    return float(q.right[0]) + 10 * q.tolerance + 1


def fill(at, half: str, items, right: set[str]) -> None:
    """Each item answered, right where its slug is in ``right``, else wrong; then *Hand in*."""
    from ui.lesson_check import widget_key
    for item in items:
        q = item.question
        value = q.right[0] if item.slug in right else wrong_answer(q)
        kind = "radio" if q.choices and len(q.choices) <= 6 else ("selectbox" if q.choices else "number_input")
        widget = getattr(at, kind)(key=widget_key(half, item))
        assert widget.label.endswith(q.prompt)  # the page asks the very item computed here
        widget.set_value(value)
    next(b for b in at.button if b.label == "Hand in").click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_a_context_item_never_asks_the_other_halfs_question(sources):
    """Two sentences can round to the same three α and h (the tiny zoo's seed 1077 did): the after
    half's context item skips the before half's very question."""
    import numpy as np
    record_of, values_of, _ = sources
    record, values = record_of(DIGITS), values_of(DIGITS)
    first = ch.context_item(record, values, np.random.default_rng(7))
    other = ch.context_item(record, values, np.random.default_rng(7), avoid={first.question.prompt})
    assert other.question.prompt != first.question.prompt
    assert ch.context_item(record, values, np.random.default_rng(7), avoid=()).question == first.question


def test_a_student_alone_sees_their_gain_per_concept(tiny_zoo, sources):
    at = open_lesson(text=DIGITS)
    assert stop_title(at).startswith("1. ")
    at.button(key="lesson_prepost_start_before").click().run()
    seed = at.session_state["lesson_prepost_seed"]
    before = items_of(sources, seed, "before")
    assert len(before) == len(ch.SLOTS) and 5 <= len(before) <= 8
    fill(at, "before", before, {"weights-recall", "length-transfer"})  # right before: these two
    assert stop_title(at).startswith("1. ")  # back at the stop, the offer gone
    assert not any((b.key or "") == "lesson_prepost_start_before" for b in at.button)
    at.selectbox(key="lesson_jump").set_value(N + 1).run()
    assert stop_title(at).startswith("The end")
    at.button(key="lesson_prepost_start_after").click().run()
    after = items_of(sources, seed, "after")
    assert [i.slug for i in after] == [i.slug for i in before]
    assert all(a.question.prompt != b.question.prompt for a, b in zip(after, before))
    fill(at, "after", after, {i.slug for i in after} - {"context-transfer"})  # all but one right after
    table = indexed(at.table[0].value)
    weights, length, context = (table.loc[ch.CONCEPT[c].name] for c in ("weights", "length", "context"))
    assert (weights["before"], weights["after"], weights["gain"]) == ("50%", "100%", "g = +1.00")
    assert (length["before"], length["gain"]) == ("100%", "at the top before, and after")
    assert (context["before"], context["after"], context["gain"]) == ("0%", "0%", "g = +0.00")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Right in the check after the lesson"] == f"{len(after) - 1} of {len(after)}"
    said = " ".join(c.value for c in at.caption)
    assert "recall 25% → 100% (g = +1.00)" in said and "transfer 25% → 75% (g = +0.67)" in said
    assert "Look again at *The context vector, a weighted sum*: stop 5" in said
    at.button(key="lesson_prepost_revisit_context_5").click().run()
    assert stop_title(at).startswith("5. ")


def test_the_check_is_optional_and_can_be_put_off(tiny_zoo):
    at = open_lesson(text=DIGITS)
    at.button(key="lesson_prepost_start_before").click().run()
    assert any(b.label == "Hand in" for b in at.button)
    at.button(key="lesson_prepost_skip_before").click().run()
    assert stop_title(at).startswith("1. ") and not at.exception
    at.selectbox(key="lesson_jump").set_value(N + 1).run()
    said = " ".join(c.value for c in at.caption)
    assert "no gain to show" in said and any((b.key or "") == "lesson_prepost_start_after" for b in at.button)
