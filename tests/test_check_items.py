"""The check before and after the lesson (``teaching/check.py``), walked on the shipped RNNsearch
over 24 seeds and every unseen sentence, as ``tests/test_lesson_questions.py`` walks the stops:

- each half asks the same slots (concept, kind), four of each kind, 5 to 8 items; the two halves
  of a seed differ in every instance;
- every item is answerable from what it shows: a choice's right answers are among its options
  and are exactly the options tied at the shown precision; a number is recomputed here from the
  numbers its prompt prints and matches within the tolerance the prompt states;
- no item gives its answer away: a number's answer is not printed in its prompt, nor is it what a
  reader without the lesson computes instead; a recall item's key shares no content word with its
  stem (every member and phrasing of the bank); an alignment item does not name the English word
  it asks, and asks a word that is neither spelt like its English word nor on the diagonal;
- no rule of a reader who never saw the lesson beats chance (``teaching/check_audit.py``, the
  command ``scripts/check_audit.py``): on a few seeds here within a binomial margin, on 100 seeds
  (slow) within ALLOWED;
- the unseen sentences are none of the lesson's examples;
- the gain is (post − pre) / (max − pre), undefined at pre = max.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT
from teaching import check as ch
from teaching.check_bank import content_words
from teaching.lesson_questions import num, ties, words_of

CHECKPOINTS = ROOT / "checkpoints"
NUMBER = r"-?\d+\.\d+"


@pytest.fixture(scope="module")
def sources():
    from model.internals import annotation_values
    from model.search import greedy, prepare_source
    from model.zoo import load_entry
    if not (CHECKPOINTS / "rnnsearch").is_dir():
        pytest.skip("the shipped checkpoints are missing")
    entry = load_entry(CHECKPOINTS / "rnnsearch")
    records, values = {}, {}

    def record_of(text):
        if text not in records:
            records[text] = greedy(entry.model, entry.vocab, prepare_source(entry.vocab, text))
        return records[text]

    def values_of(text):
        if text not in values:
            values[text] = annotation_values(entry.model, prepare_source(entry.vocab, text).ids)
        return values[text]
    return record_of, values_of, pd.read_csv(ROOT / "results" / "bleu_by_length.csv")


def recomputed(item: ch.Item) -> float | None:
    """The number item's answer computed again from the numbers its prompt prints."""
    p = item.question.prompt
    if item.concept == "weights":
        e = np.array([float(x) for x in re.findall(r"e = (" + NUMBER + ")", p)])
        asked = re.search(r"α of “(\d+)\.", p).group(1)
        names = re.findall(r"(\d+)\. [^:]+: e = ", p)
        a = np.exp(e - e.max()) / np.exp(e - e.max()).sum()
        return float(a[names.index(asked)])
    if item.concept == "context":
        pairs = re.findall(r"α = (" + NUMBER + "), h = (" + NUMBER + ")", p)
        assert abs(sum(float(a) for a, _ in pairs) - 1) < 1e-9, p  # the shown weights sum to 1
        return sum(float(a) * float(h) for a, h in pairs)
    return None


def check_item(item: ch.Item) -> None:
    q, where = item.question, f"{item.slug}: {item.question.prompt}"
    if q.choices:
        assert len(set(q.choices)) == len(q.choices) >= 2 and set(q.right) <= set(q.choices), where
        if q.values:
            assert set(q.right) == {q.choices[j] for j in ties(q.values, q.digits)}, where
        assert all(q.check(c) == (c in q.right) for c in q.choices), where
        for right in q.right:
            name = re.sub(r"^\d+\. ", "", right)
            if item.kind == "recall":
                assert name not in q.prompt and not content_words(name) & content_words(q.prompt), where
            else:  # the sentence is shown, but the asked word is never marked
                assert f"“{name}”" not in q.prompt and f"**{name}**" not in q.prompt, where
        if q.values:
            assert not ch.shows(q.prompt, num(max(q.values), q.digits)) or item.concept != "length", where
    else:
        assert f"±{q.tolerance:g}" in q.prompt, where
        assert not ch.shows(q.prompt, num(q.right[0], q.digits)), where
        assert not ch.guessable(item), (where, item.guesses)
        again = recomputed(item)
        assert again is not None and abs(again - q.right[0]) <= 0.005 + 1e-9, (where, again)
        assert q.check(q.right[0]) and q.check(q.right[0] + q.tolerance)
        assert not q.check(q.right[0] + q.tolerance + 10.0 ** -q.digits), where


def test_the_unseen_sentences_are_not_the_lessons():
    from ui.examples import EXAMPLES
    assert len(ch.SENTENCES) >= 20 and not set(ch.SENTENCES) & set(EXAMPLES)
    assert len(ch.SLOTS) == len(set(ch.SLOTS)) and 5 <= len(ch.SLOTS) <= 8
    assert {k for _, k in ch.SLOTS} == set(ch.KINDS) and {c for c, _ in ch.SLOTS} == set(ch.CONCEPT)
    for concept in (c for c, k in ch.SLOTS if k == "recall"):  # a bank, not a few fixed questions
        assert len(ch.members(concept)) >= 6 and all(len(p.stems) >= 2 for p in ch.RECALL[concept])
        for pool in ch.RECALL[concept]:
            assert len(pool.cues) == len(pool.answers) == len(set(pool.answers)) >= ch.OPTIONS + 1
            for cue, answer in zip(pool.cues, pool.answers):
                for stem in pool.stems:
                    assert not content_words(answer) & content_words(stem.format(cue=cue)), (stem, cue, answer)


def test_every_item_on_many_seeds(sources):
    record_of, values_of, bleu = sources
    walked = 0
    for seed in range(24):
        before, after = ch.check_pair(seed, record_of, values_of, bleu)
        assert [(i.concept, i.kind) for i in before.items] == [(i.concept, i.kind) for i in after.items]
        assert [i.slug for i in before.items] == [f"{c}-{k}" for c, k in ch.SLOTS]
        for a, b in zip(before.items, after.items):
            assert a.question.prompt != b.question.prompt, (seed, a.slug)  # matched in slot, not in instance
            check_item(a)
            check_item(b)
            walked += 2
        again = ch.check_pair(seed, record_of, values_of, bleu)[1]
        assert [i.question for i in again.items] == [i.question for i in after.items]  # seeded: one class, one check
    assert walked == 24 * 2 * len(ch.SLOTS)


def test_every_unseen_sentence(sources):
    """Each sentence's transfer items, on every step: answerable, no give-away; the alignment
    item exists for most sentences (the rest are skipped by the check)."""
    record_of, values_of, _ = sources
    asked = 0
    for n, text in enumerate(ch.SENTENCES):
        rng = np.random.default_rng(n)
        r = record_of(text)
        check_item(ch.weights_item(r, rng))
        check_item(ch.context_item(r, values_of(text), rng))
        item = ch.alignment_item(r, rng)
        if item is not None:
            check_item(item)
            assert max(item.question.values) >= ch.CLEAR
            weights, english, french = words_of(r)
            k = dict(item.question.facts)["reads-most"]  # the French word asked
            assert f"“{french[k].strip(ch.PUNCTUATION)}”" in item.question.prompt
            j = int(weights[k].argmax())
            assert not ch.cognate(french[k], english[j]) and j not in ch.diagonal(k, len(french), len(english))
            assert len(item.question.choices) == ch.OPTIONS  # k options, the key among them
            asked += 1
    assert asked >= 8  # the sentences with a reordered, unlike-spelt word to ask


def test_the_alignment_item_asks_every_offset_class(sources):
    """Over a few seeds, the alignment item's key sits one place before the diagonal, one after it,
    and two or more on either side, each class asked; and for a set of options where one rule of
    place names the key alone, :func:`exposure` is larger than for the set the item shows."""
    from teaching.check_alignment import exposure, offset, offset_class, View
    from teaching.check_audit import view
    record_of, values_of, bleu = sources
    classes = []
    for seed in range(12):
        for check in ch.check_pair(seed, record_of, values_of, bleu):
            item = next(i for i in check.items if i.slug == "alignment-transfer")
            v = view(item)
            key = item.question.right[0]
            d = offset(v.places[key], v.k, v.n_french, v.n_english)
            assert d != 0, item.question.prompt
            classes.append(offset_class(d))
            # the same item with its key alone next to the diagonal and three far words: more telling
            near = View(v.asked, v.k, v.n_french, v.n_english, {"9. x": 90, "8. y": 80, "7. z": 70, key: v.places[key]})
            if abs(d) == 1:
                assert exposure(near, key) > exposure(v, key)
    assert set(classes) == set(ch.CLASSES), classes


def test_the_bleu_item_on_every_set():
    bleu = pd.read_csv(ROOT / "results" / "bleu_by_length.csv")
    for seed in range(20):
        for chosen in ch.SETS:
            check_item(ch.length_item(bleu, chosen, np.random.default_rng(seed)))


def test_normalised_gain():
    assert ch.normalised_gain(0.5, 0.75) == pytest.approx(0.5)
    assert ch.normalised_gain(0.5, 0.25) == pytest.approx(-0.5)
    assert ch.normalised_gain(1.0, 1.0) is None and ch.normalised_gain(1.0, 0.5) is None
    before = {"weights-recall": True, "weights-transfer": False, "length-transfer": True}
    after = {"weights-recall": True, "weights-transfer": True, "length-transfer": False}
    by_concept = {g.name: g for g in ch.gains(before, after)}
    assert by_concept["weights"].gain == pytest.approx(1.0)
    assert by_concept["length"].gain is None and by_concept["length"].said() == "at the top before; 0% after"
    by_kind = {g.name: g for g in ch.gains(before, after, by="kind")}
    assert by_kind["transfer"].pre == 0.5 and by_kind["transfer"].post == 0.5 and by_kind["transfer"].gain == 0
    assert [c.slug for c, _ in ch.to_revisit(after)] == ["length"]
    assert ch.parse_exercise(ch.exercise_id("after", "length-transfer")) == ("after", "length", "transfer")
    assert ch.parse_exercise("lesson:01-heatmap") is None and ch.parse_exercise("check:during:length-recall") is None


def test_no_rule_without_the_lesson_beats_chance_on_a_few_seeds(sources):
    """The check on the check on 6 seeds (12 items a slot): every rule within ALLOWED of chance
    plus twice the binomial standard error of 12 items at that bound (the slow test below holds
    100 seeds to ALLOWED alone); no stem echoes its key, no key answers another item; a rule that
    games an item (the longest option when the key is always the longest) would fail here."""
    from teaching.check_audit import ALLOWED, audit
    result = audit(range(6), *sources)
    rows = result.table()
    assert {r["slot"] for r in rows} == {f"{c}-{k}" for c, k in ch.SLOTS}
    for r in rows:
        bound = r["chance"] + ALLOWED
        margin = 2 * np.sqrt(bound * (1 - bound) / r["items"])
        assert r["score"] <= bound + margin, r
    for slug, f in result.features.items():
        if "key longest" in f:
            bound = 1 / ch.OPTIONS + ALLOWED
            assert f["key longest"] <= bound + 2 * np.sqrt(bound * (1 - bound) / 12), (slug, f)
    assert result.features["check"]["stems echoing their key"] == 0
    assert result.features["check"]["cross-item cues"] == 0


@pytest.mark.slow
def test_the_check_on_the_check_command_over_100_seeds(sources):
    """``scripts/check_audit.py`` as docs/lesson.md runs it: 100 seeds, every rule within
    ALLOWED of chance on every slot, the recall keys the longest option at most 1/k + ALLOWED."""
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    from check_audit import failures
    from teaching.check_audit import audit
    assert failures(audit(range(100), *sources)) == []


def test_a_shared_length_table_draws_the_same_checks(sources):
    """A check drawn from the BLEU table's LengthTables (made once: the app's and the audit's way)
    is the check drawn from the table itself, seed for seed."""
    record_of, values_of, bleu = sources
    tables = ch.length_tables(bleu)
    assert ch.length_tables(tables) is tables and ch.length_tables(None) is None
    assert tables.sets() == ch.length_sets(bleu) and tables.sets()
    for seed in range(4):
        assert repr(ch.check_pair(seed, record_of, values_of, tables)) == repr(ch.check_pair(seed, record_of, values_of, bleu))
