"""Evaluation measures: cased sacreBLEU (13a), BLEU by source length, bootstrap
intervals, and the Alignment Error Rate of attention against gold word links."""
from __future__ import annotations

import numpy as np
import pandas as pd
from sacrebleu.metrics import BLEU, CHRF

LENGTH_BUCKETS = [(lo, lo + 4) for lo in range(1, 50, 5)] + [(51, 10_000)]


def bucket_label(lo: int, hi: int) -> str:
    return f"{lo}+" if hi >= 10_000 else f"{lo}-{hi}"


def bucket_of(n_words: int) -> str:
    for lo, hi in LENGTH_BUCKETS:
        if lo <= n_words <= hi:
            return bucket_label(lo, hi)
    return bucket_label(*LENGTH_BUCKETS[0])  # 0 words counts with the shortest


def _metric() -> BLEU:
    return BLEU()  # defaults: 13a tokenisation, cased, exp smoothing: the standard signature


def sentence_chrf(hypothesis: str, reference: str) -> float:
    """chrF (sacreBLEU's defaults) of one sentence: a character n-gram F-score, steadier
    than sentence-level BLEU on one short sentence."""
    return CHRF().sentence_score(hypothesis, [reference]).score


def reference_streams(references: list[list[str]]) -> list[list[str | None]]:
    """Per-segment reference lists -> sacreBLEU's streams; None where a segment has fewer."""
    n = max(len(r) for r in references)
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(n)]


def corpus_bleu(hypotheses: list[str], references: list[list[str]]):
    """Cased sacreBLEU with several references per segment. Returns (BLEUScore, signature)."""
    metric = _metric()
    score = metric.corpus_score(hypotheses, reference_streams(references))
    return score, str(metric.get_signature())


def bootstrap_interval(hypotheses, references, samples: int = 1000, seed: int = 12345) -> tuple[float, float]:
    """95% bootstrap interval of corpus BLEU (Koehn 2004): resample segments with replacement.

    Uses sacreBLEU's own per-segment sufficient statistics, so each resample is a sum, not
    a re-tokenisation.
    """
    if not hypotheses:
        return float("nan"), float("nan")
    metric = _metric()
    stats = np.array(metric._extract_corpus_statistics(hypotheses, reference_streams(references)))  # N x 2+4·2
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(stats), size=(samples, len(stats)))
    scores = [metric._compute_score_from_stats(stats[row].sum(0).tolist()).score for row in idx]
    return float(np.percentile(scores, 2.5)), float(np.percentile(scores, 97.5))


def bleu_by_length(sources: list[str], hypotheses: list[str], references: list[list[str]],
                   bootstrap: int = 0) -> pd.DataFrame:
    """BLEU per source-length bucket (words: 1–5, 6–10, …, 46–50, 51+), as in Bahdanau Fig. 2."""
    buckets = [bucket_of(len(s.split())) for s in sources]
    rows = []
    for lo, hi in LENGTH_BUCKETS:
        label = bucket_label(lo, hi)
        sel = [i for i, b in enumerate(buckets) if b == label]
        if not sel:
            continue
        hyps = [hypotheses[i] for i in sel]
        refs = [references[i] for i in sel]
        score, _ = corpus_bleu(hyps, refs)
        row = {"bucket": label, "min_words": lo, "segments": len(sel), "bleu": round(score.score, 2)}
        if bootstrap:
            low, high = bootstrap_interval(hyps, refs, bootstrap)
            row.update(ci_low=round(low, 2), ci_high=round(high, 2))
        rows.append(row)
    return pd.DataFrame(rows)


# -- word alignment -------------------------------------------------------------------------
def parse_links(line: str) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """A gold line of 1-indexed ``i-j`` (sure) and ``ipj`` (possible) links, i English, j French.

    Returns (sure, possible) as 0-indexed pairs; possible includes sure (S ⊆ P).
    """
    sure, possible = set(), set()
    for tok in line.split():
        if "p" in tok:
            i, j = tok.split("p")
            possible.add((int(i) - 1, int(j) - 1))
        else:
            i, j = tok.split("-")
            sure.add((int(i) - 1, int(j) - 1))
    return sure, possible | sure


def alignment_error_rate(predicted: list[set], sure: list[set], possible: list[set]) -> dict:
    """AER = 1 − (|A∩S| + |A∩P|) / (|A| + |S|) over the corpus (Och & Ney 2003), with
    precision |A∩P|/|A| and recall |A∩S|/|S|."""
    a = sum(len(x) for x in predicted)
    s = sum(len(x) for x in sure)
    a_s = sum(len(x & y) for x, y in zip(predicted, sure))
    a_p = sum(len(x & y) for x, y in zip(predicted, possible))
    return {"aer": 1 - (a_s + a_p) / max(1, a + s), "precision": a_p / max(1, a), "recall": a_s / max(1, s),
            "links": a, "sure": s}
