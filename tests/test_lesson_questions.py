"""Every lesson question, walked as plain data (``teaching/lesson_questions.py``) on the shipped
checkpoints (the weights every host shares) and at least 20 sentences: the app's examples and
WMT newstest2014 sentences from ``../shared/data``. At every step of every stop:

- a choice question's options are told apart at the precision the view shows them, or every
  option tied with the right one at that precision is accepted (and no other);
- no stop's text states its own answer (the choice as the text would write it, or the number);
- no two stops ask the same fact of the sentence;
- a number question says its tolerance ("±…", or "exactly"), and its answer is checked right;
- the text's small slips stay fixed: no doubled full stop, stop 4's exp(Δ) computed from the
  Δ it prints.
"""
from __future__ import annotations

import gzip
import re
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT
from teaching import lesson_questions as lq
from model.internals import annotation_values
from model.search import forced, greedy, prepare_source
from model.zoo import load_entry

CHECKPOINTS = ROOT / "checkpoints"
NEWSTEST = ROOT.parent / "shared" / "data" / "wmt-news" / "newstest2014.en.gz"
LUONG = ("luong-dot", "luong-general", "luong-concat")


def sentences() -> list[str]:
    """The app's example sentences and the first newstest2014 sentences of 6 to 30 words: 26 in all."""
    from ui.examples import EXAMPLES
    news = []
    if NEWSTEST.exists():
        with gzip.open(NEWSTEST, "rt", encoding="utf-8") as f:
            for line in f:
                if 6 <= len(line.split()) <= 30:
                    news.append(line.strip())
                if len(news) == 10:
                    break
    return list(EXAMPLES) + news


@pytest.fixture(scope="module")
def zoo():
    names = ("rnnsearch", "luong-local", *LUONG)
    if not all((CHECKPOINTS / n).is_dir() for n in names):
        pytest.skip("the shipped checkpoints are missing")
    return {n: load_entry(CHECKPOINTS / n) for n in names}


def records(zoo, text: str) -> dict:
    """What the lesson's stops read for one sentence, decoded as the app's caches decode it."""
    def run(name, fn):
        entry = zoo[name]
        return fn(entry.model, entry.vocab, prepare_source(entry.vocab, text))
    r = run("rnnsearch", lambda m, v, src: greedy(m, v, src, topk=5))
    out = {"record": r, "values": run("rnnsearch", lambda m, v, src: annotation_values(m, src.ids)),
           "forced": {n.split("-")[1]: run(n, lambda m, v, src: forced(m, v, src, v.encode_target(r.translation)))
                      for n in LUONG},
           "dot_values": run("luong-dot", lambda m, v, src: annotation_values(m, src.ids))}
    D = zoo["luong-local"].model.cfg.local_window
    from ui.examples import EXAMPLES
    local_text = text if len(r.source_tokens) > 2 * D + 1 else max(EXAMPLES, key=len)
    entry = zoo["luong-local"]
    out["local"] = (greedy(entry.model, entry.vocab, prepare_source(entry.vocab, local_text)), D, local_text == text,
                    local_text)
    return out


def contents(data: dict, bleu: pd.DataFrame, text: str, i: int) -> dict[int, lq.StopText]:
    """Every stop's words at target step i (1-based), its actions at their first state."""
    r, h = data["record"], data["values"]
    local, D, own, local_text = data["local"]
    words = lq.words_of(r)
    out = {1: lq.heatmap_text(r, lq.first_row(r)), 2: lq.encoder_text(r, h, 0), 3: lq.score_text(r, i), 4: lq.softmax_text(r, i),
           5: lq.context_text(r, h, i), 7: lq.luong_text(r, data["forced"], i),
           8: lq.local_text(local, D, min(i, len(local.target_tokens)), own, local_text),
           10: lq.transformer_text(r, lq.qkv_step(data["forced"]["dot"], data["dot_values"], i), i)}
    if words[2]:
        out[6] = lq.reordering_text(words, 0)
        out[11] = lq.your_turn_text(r, words)
    for n, chosen in ((9, "test"), (12, "stress")):  # stop 9 on each test set
        rows = bleu[(bleu["set"] == chosen) & bleu["model"].isin(["rnnsearch", "rnnenc"])]
        said = lq.bleu_text(rows, chosen, len(text.split()))
        if said is not None:
            out[n] = said
    return out


def states_answer(content: lq.StopText, french: tuple[str, ...] = ()) -> list[str]:
    """The ways the stop's text could state its answer that it does; a French piece the text names
    as such (``french``: the output, at the stops that ask for an English piece) is not an answer."""
    q, text = content.question, content.text
    for t in french:
        text = text.replace(lq.code(t), "")
    found = []
    if q.choices:
        for choice in q.right:
            name = re.sub(r"^\d+\. ", "", choice)
            said = [f"`{name}`", f"**{lq.plain(name)}**", f"*{lq.plain(name)}*"]
            if name in ("Yes", "No"):
                said = ["does not leave the diagonal", "translated in order", "leaves the diagonal"]
            found += [s for s in said if s in text]
    elif not q.digits:  # a count: said as a count (a bare integer is also a step's number)
        n = int(q.right[0])
        found += [s for s in (f"{n} pieces", f"{n} annotations", f"({n}, with", f"your {n} ", f"{n} source")
                  if s in text or s in content.described]
    else:
        number = lq.num(q.right[0], q.digits)
        for where in (text, content.described):
            found += [number for m in re.finditer(r"(?<![\d.])-?\d+(?:\.\d+)?(?![\d.])", where) if m.group() == number]
    return found


def check_question(stop: int, content: lq.StopText, french: tuple[str, ...] = ()) -> None:
    q = content.question
    where = f"stop {stop}: {q.prompt}"
    assert len(content.text.split()) <= 80, where
    assert not re.search(r"(?<!\.)\.\*{0,2}\.(?!\.)", content.text.replace("\\.", ".")), (where, content.text)
    found = states_answer(content, french if stop in (1, 5) else ())
    assert not found, (where, found, content.text)
    if q.choices:
        assert len(set(q.choices)) == len(q.choices) and set(q.right) <= set(q.choices), where
        if q.values:
            tied = {q.choices[j] for j in lq.ties(q.values, q.digits)}
            assert set(q.right) == tied, (where, q.right, tied)  # exactly the options the view can call largest
        assert all(q.check(c) == (c in q.right) for c in q.choices), where
    else:
        said = f"±{q.tolerance:g}" if q.tolerance else "exactly"
        assert said in q.prompt, (where, "tolerance not stated")
        assert q.check(q.right[0]) and not q.check(q.right[0] + q.tolerance + 10.0 ** -(q.digits or 0)), where


@pytest.mark.slow
def test_every_stop_on_every_sentence_at_every_step(zoo):
    bleu = pd.read_csv(ROOT / "results" / "bleu_by_length.csv")
    walked = sentences()
    assert len(walked) >= 20
    asked = 0
    for text in walked:
        data = records(zoo, text)
        T = len(data["record"].target_tokens)
        # stop 1 frames another row first: the view's text names the framed row's brightest cell
        assert T == 1 or lq.first_row(data["record"]) != lq.confident_row(data["record"])
        french = tuple(data["record"].target_tokens) + tuple(t for top in data["record"].topk_tokens for t in top)
        for i in range(1, T + 1):
            said = contents(data, bleu, text, i)
            for stop, content in said.items():
                check_question(stop, content, french)
                asked += 1
            facts = {stop: set(c.question.facts) for stop, c in said.items() if stop != 12}
            for (a, fa), (b, fb) in combinations(facts.items(), 2):
                assert not fa & fb, (text, i, a, b, fa & fb)
    assert asked > 20 * 11


def test_stop_4_prints_exp_of_the_difference_it_prints(zoo):
    data = records(zoo, "The European Parliament adopted the new economic policy.")
    for i in range(1, len(data["record"].target_tokens) + 1):
        text = lq.softmax_text(data["record"], i).text
        gap, value = re.search(r"exp\((-?\d+\.\d+)\) = (\d+\.\d+)", text).groups()
        assert f"{np.exp(float(gap)):.2f}" == value, text


def test_the_landing_sentence_reads_as_the_issue_asks(zoo):
    """Stop 6 asks for the first word that goes back (one answer) and does not say it; stop 11
    asks another word; stop 7's options differ at the digits its bars show."""
    text = "The European Parliament adopted the new economic policy."
    data = records(zoo, text)
    r = data["record"]
    words = lq.words_of(r)
    six = lq.reordering_text(words, 0)
    assert len(six.question.right) == 1 and "européen" in six.question.right[0]
    assert "européen" not in six.text and "économique" not in six.text.replace("politique économique", "")
    eleven = lq.your_turn_text(r, words).question
    assert not set(eleven.facts) & set(six.question.facts)
    for i in range(1, len(r.target_tokens) + 1):
        seven = lq.luong_text(r, data["forced"], i).question
        shown = [round(v, seven.digits) for v in seven.values]
        assert len(seven.right) == 1 or len(set(shown)) < len(shown)
        assert "0.998" not in lq.luong_text(r, data["forced"], i).text


def test_stop_7s_bars_are_valid_and_fit_a_phone():
    """Stop 7's view (``viz.teaching_figures.weight_rows``): valid Plotly, the weights written to the question's
    digits on the asked piece only, and nothing in it needs a page wider than a phone's."""
    import plotly.graph_objects as go
    from viz.narrow import min_width
    from viz.teaching_figures import weight_rows
    fig = weight_rows({"a": np.array([0.9984, 0.0016]), "b": np.array([0.9981, 0.0019])}, ["The", "</s>"], 4, 0)
    go.Figure(fig.to_dict())
    assert [t["text"] for t in fig.to_dict()["data"]] == [["0.9984", ""], ["0.9981", ""]]
    assert min_width(fig) == 0
