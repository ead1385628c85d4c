"""Does the model use what its attention shows? The knock-out test, matched for the weight removed.

    python -m model.faithfulness [--checkpoint checkpoints/rnnsearch …] [--data ../shared/data/enfr-broad/test.tsv.gz] \\
        [--origin newstest2014] [--limit 40] [--gold ../shared/data/hansards-align --min-words 6] [--json] [--out FILE]
    python -m model.faithfulness --report results/attribution/faithfulness.json   # its tables and findings

Without ``--checkpoint``, every attention model of the zoo found under checkpoints/; without
``--data``, the first 40 newstest2014 sentences of the broad test split; with ``--gold``, the English
side of the Hansards gold pairs (written as ordinary text) instead.

Each sentence is translated greedily. Then, at every target step i, with the steps before it as
decoded, every source position j is removed in turn, in these ways (*levels*):

- ``knock_out``: j removed from step i's attention (α_ij = 0, the row renormalised,
  :class:`~model.attention.Reweigh`), the step run again. A Transformer loses j in every
  cross-attention layer and head, so the weight removed is the **mean α over its layers and heads**,
  not the shown layer's head average (both are reported);
- ``knock_out_shown`` (Transformer only): j removed from the shown layer's heads only, whose head
  average is the α the page shows: there the weight removed is the shown α;
- ``input_occlusion``: one piece's token embedding replaced by the zero vector
  (:data:`~model.attribution.INPUT_BASELINE`), the encoder run again, the step teacher-forced;
- ``input_random``: the same with the embedding of a piece drawn from the vocabulary
  (:data:`~model.attribution.INPUT_RANDOM_BASELINE`), a replacement that stays in distribution,
  beside the zero vector that may not.

A step's word *changes* when the argmax of the edited step is not y_i; its *drop* is
log p(y_i) − log p(y_i | edited). Removing the most-attended piece (argmax_j α_ij) is compared with
controls drawn among the other positions (:data:`CONTROLS`), and, the headline, with **every other
removal of the same weight**: the change rate in α bins :data:`MATCH_WIDTH` wide, the argmax pieces
against the others inside each bin (:func:`matched_effect`). Every rate, mean and median comes with a
95 % interval from a bootstrap over sentences (the steps of one sentence are not independent).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

from .attribution import (INPUT_BASELINE, INPUT_RANDOM_BASELINE, decode_states, input_occluded_steps,
                          knocked_out_steps, random_piece_embeddings)
from .data import read_split
from .search import greedy, prepare_source
from .zoo import load_for_cli, ZOO

DATA = "../shared/data/enfr-broad/test.tsv.gz"
BINS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0)
MATCH_WIDTH = 0.01  # the matched comparison's α bins: inside one, argmax and other pieces differ by < 0.01 in α
BOOTSTRAP = 1000
THRESHOLD = 0.05
CONTROLS = {
    "most": "the most-attended source piece (argmax_j α_ij)",
    "second": "the second-most attended piece",
    "second_apart": "the most attended piece at least 2 positions from the argmax (not its neighbour)",
    "proportional": "a piece drawn in proportion to α_ij among the others (j ≠ argmax)",
    "threshold": "a piece drawn uniformly among the others with α_ij ≥ {threshold}",
    "position": "a piece that is another step's argmax (position-matched: the pieces the argmax removals remove, "
                "at a step that attends them less)",
    "uniform": "a piece drawn uniformly among the others (mostly α ≈ 0: close to removing nothing)",
}
LEVELS = {
    "knock_out": "attention knock-out: the position removed from step i's attention (α_ij = 0, the row "
                 "renormalised; a Transformer: from every cross-attention layer and head, so the weight removed is "
                 "the mean α over layers and heads), earlier steps as decoded",
    "knock_out_shown": "attention knock-out in the shown layer only (Transformer): the position removed from the "
                       "heads whose average the page shows; the weight removed is the shown α",
    "input_occlusion": f"input occlusion, zero vector: {INPUT_BASELINE}; teacher-forced on the greedy translation",
    "input_random": f"input occlusion, a random piece: {INPUT_RANDOM_BASELINE}; teacher-forced on the greedy translation",
}
RENORMALISED = ("a knock-out renormalises the row: the weight of the piece removed goes to the other pieces in "
                "proportion, most of it to the argmax, so removing a piece of small α can raise log p(y_i)")


# ----------------------------------------------------------------------------------------------
# the removals, one sentence at a time
# ----------------------------------------------------------------------------------------------
def level_of(changed: torch.Tensor, drop: torch.Tensor) -> dict:
    return {"changed": changed.numpy(), "drop": drop.numpy()}


def removal_matrices(model, vocab, text: str, rng: torch.Generator | None = None) -> dict | None:
    """Every (step i, source position j) removed at every level, for one sentence: α (T x S, the
    shown weights), the weight each knock-out removes, and per level whether the word changes and the
    drop in log p(y_i) (T x S each). ``rng`` draws the random pieces (seed 0 if None). None when the
    translation is empty or the source one piece long."""
    src = prepare_source(vocab, text)
    record = greedy(model, vocab, src)
    S, target = len(src.ids) + 1, record.target_ids
    if not target or S < 2:
        return None
    ids = torch.tensor(target)
    decoded = decode_states(model, src.ids, target)
    own = decoded[2].gather(1, ids.unsqueeze(1))  # T x 1
    every = [list(range(S))] * len(target)
    alpha = np.asarray(record.weights, dtype=float)
    out = {"alpha": alpha, "removed": {}}
    without, argmax = knocked_out_steps(model, decoded, every, ids)  # T x S each
    out["knock_out"] = level_of(argmax != ids.unsqueeze(1), own - without)
    if record.head_weights is not None:  # a Transformer: T x L x h x S
        heads = np.asarray(record.head_weights, dtype=float)
        out["layers"] = heads.mean(2)  # T x L x S, each layer's head average
        out["removed"]["knock_out"] = heads.mean((1, 2))  # what the every-layer knock-out removes
        without, argmax = knocked_out_steps(model, decoded, every, ids, every_layer=False)
        out["knock_out_shown"] = level_of(argmax != ids.unsqueeze(1), own - without)
    pieces = random_piece_embeddings(model, S, rng if rng is not None else torch.Generator().manual_seed(0))
    for level, baseline in (("input_occlusion", None), ("input_random", pieces)):
        own_in, without_in, argmax_in = input_occluded_steps(model, src.ids, target, baseline=baseline)
        out[level] = level_of(argmax_in != ids.unsqueeze(1), own_in.unsqueeze(1) - without_in)
    return out


def draw_controls(alpha: np.ndarray, rng: random.Random, threshold: float) -> dict[str, np.ndarray]:
    """Per step, the position each control removes (T; −1 where a control has no candidate)."""
    T, S = alpha.shape
    order = np.argsort(-alpha, axis=1, kind="stable")
    picks = {name: np.full(T, -1) for name in CONTROLS}
    tops = order[:, 0]
    for i in range(T):
        most = int(tops[i])
        others = [j for j in range(S) if j != most]
        picks["most"][i], picks["second"][i] = most, int(order[i, 1])
        apart = [int(j) for j in order[i, 1:] if abs(int(j) - most) >= 2]
        if apart:
            picks["second_apart"][i] = apart[0]
        weights = alpha[i, others]
        if weights.sum() > 0:
            picks["proportional"][i] = rng.choices(others, weights=weights.tolist())[0]
        heavy = [j for j in others if alpha[i, j] >= threshold]
        if heavy:
            picks["threshold"][i] = rng.choice(heavy)
        elsewhere = sorted({int(tops[k]) for k in range(T) if k != i} - {most})
        if elsewhere:
            picks["position"][i] = rng.choice(elsewhere)
        picks["uniform"][i] = rng.choice(others)
    return picks


# ----------------------------------------------------------------------------------------------
# intervals: a bootstrap over sentences
# ----------------------------------------------------------------------------------------------
class Clusters:
    """B resamples of the n sentences with replacement (seeded): ``counts`` (B x n) how often each
    sentence is drawn, ``draws`` (B x n) which. A statistic's 95 % interval is the 2.5th and 97.5th
    percentile of its value over the resamples."""

    def __init__(self, n: int, resamples: int = BOOTSTRAP, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.draws = rng.integers(0, n, size=(resamples, n))
        self.counts = np.stack([np.bincount(d, minlength=n) for d in self.draws]).astype(float)

    @staticmethod
    def interval(values: np.ndarray) -> list[float] | None:
        values = values[np.isfinite(values)]
        if not values.size:
            return None
        return [round(float(v), 4) for v in np.percentile(values, [2.5, 97.5])]

    def mean(self, parts: list[np.ndarray]) -> tuple[float | None, list[float] | None]:
        """The mean over every value of every sentence (a ratio of sums), and its interval."""
        sums = np.array([p.sum() for p in parts], dtype=float)
        sizes = np.array([p.size for p in parts], dtype=float)
        if not sizes.sum():
            return None, None
        with np.errstate(invalid="ignore", divide="ignore"):
            return round(float(sums.sum() / sizes.sum()), 4), self.interval((self.counts @ sums) / (self.counts @ sizes))

    def median(self, parts: list[np.ndarray]) -> tuple[float | None, list[float] | None]:
        if not sum(p.size for p in parts):
            return None, None
        boot = np.array([np.median(np.concatenate([parts[k] for k in d])) if any(parts[k].size for k in d) else np.nan
                         for d in self.draws])
        return round(float(np.median(np.concatenate(parts))), 4), self.interval(boot)


def estimate(clusters: Clusters, parts: list[np.ndarray], how: str = "mean") -> dict:
    point, ci = (clusters.mean if how == "mean" else clusters.median)(parts)
    return {"value": point, "ci": ci}


# ----------------------------------------------------------------------------------------------
# the controls, at each level
# ----------------------------------------------------------------------------------------------
def weight_removed(s: dict, level: str) -> np.ndarray:
    """The α a level removes: the shown α, or, for a Transformer's every-layer knock-out, the mean α
    over every layer and head."""
    return s["removed"].get(level, s["alpha"])


def picked(sentences: list[dict], picks: list[dict], name: str, values) -> list[np.ndarray]:
    """Per sentence, ``values(sentence)`` (T x S) at the steps and pieces control ``name`` removes."""
    out = []
    for s, p in zip(sentences, picks):
        rows = np.flatnonzero(p[name] >= 0)
        out.append(np.asarray(values(s), dtype=float)[rows, p[name][rows]])
    return out


def top_share(drops: np.ndarray, share: float = 0.05) -> float | None:
    """The share of the total positive drop held by the ``share`` of steps with the largest drops."""
    positive = np.sort(drops[drops > 0])[::-1]
    if not positive.size:
        return None
    return round(float(positive[:max(1, int(np.ceil(share * drops.size)))].sum() / positive.sum()), 4)


def control_row(clusters: Clusters, sentences: list[dict], picks: list[dict], name: str, level: str) -> dict:
    """One control at one level: steps, the word-change rate, the mean and median drop, the share of
    steps where log p(y_i) rises, each with its interval; the α removed."""
    changed = picked(sentences, picks, name, lambda s: s[level]["changed"])
    drop = picked(sentences, picks, name, lambda s: s[level]["drop"])
    alpha = picked(sentences, picks, name, lambda s: weight_removed(s, level))
    every_drop = np.concatenate(drop)
    row = {"steps": int(every_drop.size)}
    for key, parts, how in (("changed", changed, "mean"), ("drop", drop, "mean"), ("drop_median", drop, "median"),
                            ("rises", [(d < 0).astype(float) for d in drop], "mean")):
        e = estimate(clusters, parts, how)
        row[key], row[f"{key}_ci"] = e["value"], e["ci"]
    every_alpha = np.concatenate(alpha)
    row["top5_share"] = top_share(every_drop)
    row["median_alpha"] = round(float(np.median(every_alpha)), 4) if every_alpha.size else None
    row["mean_alpha"] = round(float(every_alpha.mean()), 4) if every_alpha.size else None
    return row


def paired_row(clusters: Clusters, sentences: list[dict], picks: list[dict], name: str, level: str) -> dict:
    """The most-attended piece against control ``name`` on the same steps (those where the control
    has a piece): both change rates and their difference, with intervals."""
    most, other = [], []
    for s, p in zip(sentences, picks):
        rows = np.flatnonzero(p[name] >= 0)
        most.append(s[level]["changed"][rows, p["most"][rows]].astype(float))
        other.append(s[level]["changed"][rows, p[name][rows]].astype(float))
    difference = estimate(clusters, [a - b for a, b in zip(most, other)])
    return {"steps": int(sum(m.size for m in most)), "most": clusters.mean(most)[0], "control": clusters.mean(other)[0],
            "difference": difference["value"], "difference_ci": difference["ci"]}


def control_geometry(sentences: list[dict], picks: list[dict]) -> dict:
    """Per control, where its pieces lie: the median distance to the argmax and the share adjacent to it."""
    out = {}
    for name in CONTROLS:
        if name == "most":
            continue
        distance = np.concatenate([np.abs(p[name][p[name] >= 0] - p["most"][p[name] >= 0]) for p in picks])
        out[name] = {"steps": int(distance.size),
                     "share_of_steps": round(distance.size / max(1, sum(len(p["most"]) for p in picks)), 4),
                     "median_distance": float(np.median(distance)) if distance.size else None,
                     "adjacent": round(float((distance == 1).mean()), 4) if distance.size else None,
                     "median_alpha": round(float(np.median(np.concatenate(
                         picked(sentences, picks, name, lambda s: s["alpha"])))), 4) if distance.size else None}
    return out


# ----------------------------------------------------------------------------------------------
# the headline: the argmax against every other piece of the same weight
# ----------------------------------------------------------------------------------------------
def is_top(alpha: np.ndarray) -> np.ndarray:
    """T x S: whether (i, j) is step i's argmax (the first, on a tie), as the controls read it."""
    top = np.zeros(alpha.shape, dtype=bool)
    top[np.arange(len(alpha)), alpha.argmax(1)] = True
    return top


def bin_sums(sentences: list[dict], level: str, width: float = MATCH_WIDTH) -> np.ndarray:
    """n x 6 x K: per sentence and α bin (K bins of ``width``), for the argmax pieces and the others:
    removals, words changed, Σ α removed."""
    K = int(round(1 / width))
    out = np.zeros((len(sentences), 6, K))
    for k, s in enumerate(sentences):
        alpha, changed, top = weight_removed(s, level).ravel(), s[level]["changed"].ravel(), is_top(s["alpha"]).ravel()
        b = np.minimum((alpha / width).astype(int), K - 1)
        for part, sel in ((0, top), (3, ~top)):
            out[k, part] = np.bincount(b[sel], minlength=K)
            out[k, part + 1] = np.bincount(b[sel], weights=changed[sel].astype(float), minlength=K)
            out[k, part + 2] = np.bincount(b[sel], weights=alpha[sel], minlength=K)
    return out


def matched(sums: np.ndarray) -> dict[str, np.ndarray]:
    """From bin sums (… x 6 x K): in every bin with both kinds of removal, the change rate of the
    argmax pieces minus that of the others, averaged over the bins with weights n_top n_other /
    (n_top + n_other) (the inverse variance of a difference of two rates); the same average of
    each rate and each mean α."""
    n_top, c_top, a_top, n_oth, c_oth, a_oth = (sums[..., k, :] for k in range(6))
    both = (n_top > 0) & (n_oth > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(both, n_top * n_oth / (n_top + n_oth), 0.0)
        total = w.sum(-1)

        def average(x):
            return (np.where(both, x, 0.0) * w).sum(-1) / total
        rate_top, rate_oth = c_top / n_top, c_oth / n_oth
        return {"effect": average(rate_top - rate_oth), "changed_most": average(rate_top),
                "changed_others": average(rate_oth), "alpha_most": average(a_top / n_top),
                "alpha_others": average(a_oth / n_oth)}


def matched_effect(clusters: Clusters, sentences: list[dict], level: str, width: float = MATCH_WIDTH) -> dict:
    """Being the argmax at matched α: the weighted within-bin difference of change rates
    (:func:`matched`) with its interval, the removals it rests on and how close the α are."""
    sums = bin_sums(sentences, level, width)
    total = sums.sum(0)
    point = matched(total)
    boot = matched(np.einsum("bn,nkw->bkw", clusters.counts, sums))
    n_top, a_top, n_oth, a_oth = total[0], total[2], total[3], total[5]
    both = (n_top > 0) & (n_oth > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.abs(a_top / n_top - a_oth / n_oth)[both]
    row = {"width": width, "bins": int(both.sum()), "pairs_most": int(n_top[both].sum()),
           "pairs_others": int(n_oth[both].sum()),
           "largest_alpha_gap": round(float(gap.max()), 4) if gap.size else None}
    for key in point:
        row[key] = None if not both.any() else round(float(point[key]), 4)
        if key in ("effect", "changed_most", "changed_others"):
            row[f"{key}_ci"] = Clusters.interval(boot[key])
    return row


def change_curve(sentences: list[dict], level: str) -> list[dict]:
    """The change rate against the α removed (:data:`BINS`), the argmax pieces and the others apart,
    each with its removals and mean α, so the bins' α can be compared too."""
    alpha = np.concatenate([weight_removed(s, level).ravel() for s in sentences])
    changed = np.concatenate([s[level]["changed"].ravel() for s in sentences])
    top = np.concatenate([is_top(s["alpha"]).ravel() for s in sentences])
    rows = []
    for low, high in zip(BINS[:-1], BINS[1:]):
        inside = (alpha >= low) & ((alpha < high) if high < 1.0 else (alpha <= high))
        row = {"alpha_from": low, "alpha_to": high, "pairs": int(inside.sum()),
               "changed": round(float(changed[inside].mean()), 4) if inside.any() else None}
        for label, part in (("most", top), ("others", ~top)):
            sel = inside & part
            row[f"pairs_{label}"] = int(sel.sum())
            row[f"changed_{label}"] = round(float(changed[sel].mean()), 4) if sel.any() else None
            row[f"alpha_{label}"] = round(float(alpha[sel].mean()), 4) if sel.any() else None
        rows.append(row)
    return rows


def layer_agreement(sentences: list[dict]) -> list[dict] | None:
    """A Transformer: per decoder layer, its head-average α at the shown argmax piece (median) and how
    often its own argmax is the shown layer's."""
    if "layers" not in sentences[0]:
        return None
    rows = []
    for n in range(sentences[0]["layers"].shape[1]):
        at_top, agree = [], []
        for s in sentences:
            top = s["alpha"].argmax(1)
            layer = s["layers"][:, n]
            at_top.append(layer[np.arange(len(top)), top])
            agree.append(layer.argmax(1) == top)
        rows.append({"layer": n, "median_alpha_at_shown_argmax": round(float(np.median(np.concatenate(at_top))), 4),
                     "argmax_agrees": round(float(np.concatenate(agree).mean()), 4)})
    every = np.concatenate([s["removed"]["knock_out"][np.arange(len(s["alpha"])), s["alpha"].argmax(1)]
                            for s in sentences])
    rows.append({"layer": "all (mean of every layer and head)", "median_alpha_at_shown_argmax":
                 round(float(np.median(every)), 4)})
    return rows


def level_result(clusters: Clusters, sentences: list[dict], picks: list[dict], level: str) -> dict:
    return {"controls": {name: control_row(clusters, sentences, picks, name, level) for name in CONTROLS},
            "paired": {name: paired_row(clusters, sentences, picks, name, level) for name in CONTROLS if name != "most"},
            "matched": matched_effect(clusters, sentences, level), "curve": change_curve(sentences, level)}


def removals(model, vocab, texts: list[str], seed: int = 0) -> list[dict]:
    """:func:`removal_matrices` of every sentence that has one (the random pieces drawn from ``seed``)."""
    pieces = torch.Generator().manual_seed(seed)
    return [r for r in (removal_matrices(model, vocab, t, pieces) for t in texts) if r is not None]


def analyse(sentences: list[dict], seed: int = 0, threshold: float = THRESHOLD, resamples: int = BOOTSTRAP) -> dict:
    """Per level, the controls, the paired differences, the matched effect and the curve; where the
    controls lie; for a Transformer, its layers."""
    rng = random.Random(seed)
    picks = [draw_controls(s["alpha"], rng, threshold) for s in sentences]  # the same draws at every level
    clusters = Clusters(len(sentences), resamples, seed)
    result = {"sentences": len(sentences), "steps": int(sum(len(s["alpha"]) for s in sentences)),
              "placement": control_geometry(sentences, picks)}
    for level in LEVELS:
        if level in sentences[0]:
            result[level] = level_result(clusters, sentences, picks, level)
    result["layers"] = layer_agreement(sentences)
    return result


def knock_out_test(model, vocab, texts: list[str], seed: int = 0, threshold: float = THRESHOLD,
                   resamples: int = BOOTSTRAP) -> dict:
    """The test over sentences: :func:`removals`, then :func:`analyse`, and the seconds it took."""
    start = time.time()
    result = analyse(removals(model, vocab, texts, seed), seed, threshold, resamples)
    result["seconds"] = round(time.time() - start, 1)
    return result


# ----------------------------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------------------------
def source_sentences(data: str, origin: str | None, limit: int | None, gold: str | None = None,
                     min_words: int = 1, max_words: int | None = None) -> list[str]:
    """The English sentences: of a split (rows of ``origin``), or of the Hansards gold pairs written as
    ordinary text (``gold``); those of ``min_words``–``max_words`` words, the first ``limit``."""
    if gold:
        from .align import read_gold
        from .hansards import written_english
        texts = [written_english(p.english).text for p in read_gold(gold)]
    else:
        df = read_split(data)
        if origin:
            df = df[df["origin"] == origin]
            if df.empty:
                raise SystemExit(f"error: no rows of origin {origin!r} in {data}")
        texts = df["en"].tolist()
    texts = [t for t in texts if min_words <= len(t.split()) <= (max_words or 10 ** 9)]
    return texts[:limit]


def describe(args) -> dict:
    """What the numbers are of: the sample, the seed, the controls and the levels, in words."""
    sample = ({"gold": args.gold} if args.gold else {"data": args.data, "origin": args.origin})
    return {"sample": {**sample, "first": args.limit, "min_words": args.min_words, "max_words": args.max_words,
                       "seed": args.seed, "decoding": "greedy"},
            "threshold": args.threshold, "bins": list(BINS), "match_width": MATCH_WIDTH,
            "bootstrap": f"{args.resamples} resamples of the sentences; 95 % percentile intervals",
            "controls": {k: v.format(threshold=args.threshold) for k, v in CONTROLS.items()},
            "levels": LEVELS, "changed": "the argmax of the edited step is not the greedy word y_i",
            "drop": "log p(y_i) − log p(y_i | edited): mean and median over steps",
            "rises": "the share of steps where log p(y_i) rises (drop < 0); " + RENORMALISED,
            "matched": "within α bins match_width wide, the change rate of argmax pieces minus that of the others, "
                       "averaged over the bins with both (weights n_most n_others / (n_most + n_others))"}


def summary_line(r: dict) -> str:
    def pct(x):
        return "–" if x is None else f"{100 * x:.1f}"
    lines = [f"{r['model']} ({r['sentences']} sentences, {r['steps']} steps, {r['seconds']} s)"]
    for level in LEVELS:
        if level not in r:
            continue
        c, m = r[level]["controls"], r[level]["matched"]
        ci = m["effect_ci"] or [None, None]
        lines.append(f"  {level}: most {pct(c['most']['changed'])} % " + ", ".join(
            f"{k} {pct(c[k]['changed'])} %" for k in CONTROLS if k != "most")
            + f"; at matched α the argmax adds {pct(m['effect'])} points [{pct(ci[0])}, {pct(ci[1])}]"
            + f" ({m['pairs_most']} / {m['pairs_others']} removals)")
    return "\n".join(lines)


def write_out(path: Path, head: dict, results: list[dict]) -> None:
    """Merge into ``path``: a model run again replaces its entry; a different sample starts the file anew;
    the models in the zoo's order."""
    old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    models = {r["model"]: r for r in old["models"]} if old and old.get("sample") == head["sample"] else {}
    models.update({r["model"]: r for r in results})
    order = list(ZOO)  # the zoo's order, whichever ran first; others after
    ranked = sorted(models.values(), key=lambda r: order.index(r["model"]) if r["model"] in order else len(order))
    path.write_text(json.dumps({**head, "models": ranked}, indent=1) + "\n", encoding="utf-8")


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Remove the most-attended source piece, against controls and at matched α.")
    p.add_argument("--checkpoint", action="append", default=None,
                   help="a checkpoint folder or hf:NAME; repeatable (default: every zoo model in checkpoints/)")
    p.add_argument("--data", default=DATA, help=f"a split (.tsv or .tsv.gz with en, fr, origin columns; default {DATA})")
    p.add_argument("--origin", default="newstest2014", help="only rows of this origin ('' for all)")
    p.add_argument("--gold", default=None, help="a gold-alignment folder (enfr.src-tgt): its English sentences instead")
    p.add_argument("--limit", type=int, default=40, help="the first N sentences (of that origin)")
    p.add_argument("--min-words", type=int, default=1, help="only sentences of at least this many words")
    p.add_argument("--max-words", type=int, default=None, help="only sentences of at most this many words")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resamples", type=int, default=BOOTSTRAP, help="bootstrap resamples of the sentences")
    p.add_argument("--threshold", type=float, default=THRESHOLD, help="the threshold control's least α")
    p.add_argument("--out", default=None, help="merge the results into this JSON file (one entry per model)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--report", default=None, metavar="FILE",
                   help="print the tables and findings of a results file in Markdown (docs/attribution.md) and stop")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    if args.report:
        print(report(json.loads(Path(args.report).read_text(encoding="utf-8"))))
        return 0
    if not args.checkpoint:
        args.checkpoint = [f"checkpoints/{name}" for name in ZOO if Path("checkpoints", name, "config.json").exists()]
    torch.set_num_threads(1)
    texts = source_sentences(args.data, args.origin or None, args.limit, args.gold, args.min_words, args.max_words)
    head, results = describe(args), []
    for spec in args.checkpoint:
        model, vocab, cfg = load_for_cli(spec)
        if not model.cfg.has_attention:
            print(f"{spec}: no attention (RNNenc): nothing to knock out", file=sys.stderr)
            continue
        r = {"model": cfg.get("name", Path(spec).name),
             **knock_out_test(model, vocab, texts, args.seed, args.threshold, args.resamples)}
        results.append(r)
        if not args.json:
            print(summary_line(r), flush=True)
    if args.out:
        write_out(Path(args.out), head, results)
    if args.json:
        print(json.dumps({**head, "models": results}))
    return 0



# ----------------------------------------------------------------------------------------------
# the results in words and tables (the Models page and docs/attribution.md print these; a test
# checks that the doc holds them as the shipped results make them)
# ----------------------------------------------------------------------------------------------
NAMES = {"most": "most-attended", "second": "second-most attended", "second_apart": "second, not adjacent",
         "proportional": "drawn ∝ α", "threshold": "drawn among α ≥ {threshold}", "position": "another step's argmax",
         "uniform": "uniform"}
LEVEL_NAMES = {"knock_out": "attention knock-out", "knock_out_shown": "knock-out in the shown layer",
               "input_occlusion": "input, zero vector", "input_random": "input, random piece"}


def num(x: float, digits: int) -> str:
    """x to ``digits`` decimals, never "-0.0"."""
    return f"{round(x, digits) + 0.0:.{digits}f}"


def pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{num(100 * x, digits)} %"


def with_ci(x: float | None, ci: list[float] | None, scale: float = 100, digits: int = 1) -> str:
    """45.3 [42.0, 48.1]: a value and its interval (percent points by default)."""
    if x is None:
        return "–"
    if ci is None:
        return num(scale * x, digits)
    return f"{num(scale * x, digits)} [{num(scale * ci[0], digits)}, {num(scale * ci[1], digits)}]"


def span(values: list[float], scale: float = 100, digits: int = 0, unit: str = " %") -> str:
    """The range over the models: 45–63 % (scale 1, no unit: 0.47–0.92)."""
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    low, high = (num(scale * v, digits) for v in (min(values), max(values)))
    dash = " to " if low.startswith("-") or high.startswith("-") else "–"
    return f"{low}{unit}" if low == high else f"{low}{dash}{high}{unit}"


def control_table(result: dict, level: str) -> list[dict]:
    """Per model: the word-change rate of each control with its interval (percent), and the median α removed."""
    rows = []
    for m in result["models"]:
        if level not in m:
            continue
        c = m[level]["controls"]
        row = {"model": m["model"], "steps": m["steps"]}
        for key, label in NAMES.items():
            label = label.format(threshold=result["threshold"])
            row[label] = f"{with_ci(c[key]['changed'], c[key]['changed_ci'])} (α {c[key]['median_alpha']:.2f})" \
                if c[key]["changed"] is not None else "–"
        rows.append(row)
    return rows


def drop_table(result: dict, level: str = "knock_out") -> list[dict]:
    """Per model and control: mean and median drop in log p(y_i) with intervals, the share of steps where
    log p rises, and the share of the positive drop held by the top 5 % of steps."""
    rows = []
    for m in result["models"]:
        for key in ("most", "second", "proportional", "threshold"):
            c = m[level]["controls"][key]
            rows.append({"model": m["model"], "piece": NAMES[key].format(threshold=result["threshold"]),
                         "mean drop": with_ci(c["drop"], c["drop_ci"], 1, 3),
                         "median drop": with_ci(c["drop_median"], c["drop_median_ci"], 1, 3),
                         "log p rises": with_ci(c["rises"], c["rises_ci"]) + " %",
                         "top 5 % of steps hold": pct(c["top5_share"], 0)})
    return rows


def matched_table(result: dict) -> list[dict]:
    """Per model and level: being the argmax at matched α, with the removals and α it rests on."""
    rows = []
    for m in result["models"]:
        for level in LEVELS:
            if level not in m:
                continue
            x = m[level]["matched"]
            rows.append({"model": m["model"], "level": LEVEL_NAMES[level],
                         "argmax − others (points)": with_ci(x["effect"], x["effect_ci"]),
                         "argmax / others changed": f"{pct(x['changed_most'])} / {pct(x['changed_others'])}",
                         "mean α argmax / others": "–" if x["alpha_most"] is None
                         else f"{x['alpha_most']:.3f} / {x['alpha_others']:.3f}",
                         "removals": f"{x['pairs_most']:,} / {x['pairs_others']:,} in {x['bins']} bins"})
    return rows


def markdown(rows: list[dict]) -> str:
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    return "\n".join(lines + ["| " + " | ".join(str(r[k]) for k in head) + " |" for r in rows])


def effect_words(x: dict) -> str:
    """+5.6 points [0.0, 9.3], whether its interval excludes 0, and the removals (argmax / others) it rests on."""
    if x["effect"] is None:
        return "no removals of equal α to compare"
    lo, hi = x["effect_ci"]
    sign = "excludes 0" if lo > 0 or hi < 0 else "includes 0"
    return (f"{100 * x['effect']:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}], {sign} "
            f"({x['pairs_most']:,} / {x['pairs_others']:,} removals)")


def values(models: list[dict], level: str, control: str, key: str) -> list:
    return [m[level]["controls"][control][key] for m in models if level in m]


def headline(result: dict) -> list[str]:
    """The matched comparison and the raw rates, in sentences."""
    models = result["models"]
    lines = ["At matched α (bins of 0.01, the argmax pieces against every other removal in the same bin), the "
             "most-attended pieces' change rate minus the others', attention knock-out: "
             + "; ".join(f"{m['model']} {effect_words(m['knock_out']['matched'])}" for m in models) + "."]
    most, second = (values(models, "knock_out", c, "median_alpha") for c in ("most", "second"))
    less = "far less" if max(second) < min(most) / 2 else "less"
    lines.append(f"Unmatched, removing the most-attended piece from the step's attention changes the word at "
                 f"{span(values(models, 'knock_out', 'most', 'changed'))} of the steps (median α removed "
                 f"{span(values(models, 'knock_out', 'most', 'median_alpha'), 1, 2, '')}); the second-most attended "
                 f"piece {span(values(models, 'knock_out', 'second', 'changed'))} (median α "
                 f"{span(values(models, 'knock_out', 'second', 'median_alpha'), 1, 2, '')}), a piece drawn in "
                 f"proportion to α {span(values(models, 'knock_out', 'proportional', 'changed'))}: the controls remove "
                 f"{less} weight, so these rates do not compare pieces of comparable weight.")
    adjacent = [m["placement"]["second"]["adjacent"] for m in models]
    apart = values(models, "knock_out", "second_apart", "changed")
    lines.append(f"The second-most attended piece is the argmax's neighbour in {span(adjacent)} of the steps; the "
                 f"most attended piece at least two positions away changes the word at "
                 f"{span(apart)} (median α {span(values(models, 'knock_out', 'second_apart', 'median_alpha'), 1, 2, '')}).")
    shares = [m["placement"]["threshold"]["share_of_steps"] for m in models]
    same = [m["knock_out"]["paired"]["threshold"] for m in models]
    lines.append(f"A piece of α ≥ {result['threshold']} other than the argmax exists on {span(shares)} of the steps; "
                 f"on those steps alone the most-attended piece changes the word at {span([p['most'] for p in same])} "
                 f"and that piece at {span([p['control'] for p in same])}.")
    position = values(models, "knock_out", "position", "changed")
    lines.append(f"Removing a piece that is another step's argmax (the same positions as the argmax removals, at a "
                 f"step that attends them less: median α "
                 f"{span(values(models, 'knock_out', 'position', 'median_alpha'), 1, 2, '')}) changes the word at "
                 f"{span(position)}.")
    return lines


def drop_words(result: dict) -> list[str]:
    """Means against medians, and the share of steps where a knock-out raises log p."""
    models = result["models"]
    controls = ("second", "proportional", "threshold")
    medians = [v for c in controls for v in values(models, "knock_out", c, "drop_median")]
    rises = [v for c in controls for v in values(models, "knock_out", c, "rises")]
    top = [v for c in controls for v in values(models, "knock_out", c, "top5_share")]
    most = values(models, "knock_out", "most", "drop_median")
    return [f"The mean drop in log p(y_i) is not the typical one: for the three weighted controls (second-most "
            f"attended, ∝ α, α ≥ {result['threshold']}) the median drop is {span(medians, 1, 3, '')} and log p(y_i) "
            f"rises in {span(rises)} of the steps, while the 5 % of steps with the largest drops hold "
            f"{span(top)} of the positive drop; for the most-attended piece the median drop is "
            f"{span(most, 1, 2, '')}. A rise is possible because " + RENORMALISED + "."]


def transformer_words(result: dict) -> list[str]:
    """What the Transformer's knock-out removes, per layer, and its shown-layer knock-out."""
    lines = []
    for m in result["models"]:
        if not m.get("layers"):
            continue
        layers, every, shown = m["layers"][:-1], m["layers"][-1], m["knock_out_shown"]
        lines.append(
            f"{m['model']}: the knock-out removes the piece from all {len(layers)} layers and every head. At the shown "
            f"argmax piece the median α is " + ", ".join(
                f"{r['median_alpha_at_shown_argmax']:.2f} in layer {r['layer']}" for r in layers)
            + f" (head averages) and {every['median_alpha_at_shown_argmax']:.2f} over every layer and head, the weight "
            f"the tables count as removed; the layers' own argmax is the shown layer's in "
            + ", ".join(f"{pct(r['argmax_agrees'], 0)} (layer {r['layer']})" for r in layers)
            + f" of the steps. Removed from the shown layer only, the most-attended piece changes the word at "
            f"{with_ci(shown['controls']['most']['changed'], shown['controls']['most']['changed_ci'])} % of the steps, "
            f"against {with_ci(m['knock_out']['controls']['most']['changed'], m['knock_out']['controls']['most']['changed_ci'])} "
            f"% from every layer; at matched α in the shown layer, {effect_words(shown['matched'])}.")
    return lines


def input_words(result: dict) -> list[str]:
    """The input level: one piece's embedding replaced, by zero and by a random piece."""
    models = result["models"]
    out = []
    for level, how in (("input_occlusion", "by the zero vector"), ("input_random", "by a random piece's embedding")):
        out.append(f"Replacing one piece's token embedding {how} (the encoder run again; a word of several pieces "
                   f"keeps the others) changes the word at {span(values(models, level, 'most', 'changed'))} of the "
                   f"steps for the most-attended piece, {span(values(models, level, 'proportional', 'changed'))} for one "
                   f"drawn ∝ α and {span(values(models, level, 'uniform', 'changed'))} for one drawn uniformly; at "
                   f"matched α, " + "; ".join(f"{m['model']} {effect_words(m[level]['matched'])}" for m in models) + ".")
    return out


def findings(result: dict) -> list[str]:
    """What the numbers say, in sentences made from them."""
    return headline(result) + drop_words(result) + transformer_words(result) + input_words(result)


def pooled_curve(models: list[dict], level: str) -> list[dict]:
    """The change curve of every model pooled: per α bin, pairs and change rate, most-attended and others."""
    rows = []
    for bins in zip(*[m[level]["curve"] for m in models]):
        row = {"alpha_from": bins[0]["alpha_from"], "alpha_to": bins[0]["alpha_to"]}
        for label in ("most", "others"):
            n = sum(x[f"pairs_{label}"] for x in bins)
            changed = sum(x[f"pairs_{label}"] * (x[f"changed_{label}"] or 0.0) for x in bins)
            row[f"pairs_{label}"], row[f"changed_{label}"] = n, (changed / n if n else None)
        rows.append(row)
    return rows


def report(result: dict) -> str:
    """The doc's section for one results file: the tables and the findings, in Markdown."""
    parts = ["**Being the argmax at matched α** (word changes, argmax minus others, in points, 95 % interval)",
             markdown(matched_table(result)),
             "**Word changes per control** (percent, 95 % interval; in brackets the median α of the pieces removed: "
             "for the knock-outs the weight removed, for the input levels the shown α)"]
    for level in LEVELS:
        if any(level in m for m in result["models"]):
            parts += [f"*{LEVEL_NAMES[level]}*", markdown(control_table(result, level))]
    parts += ["**The drop in log p(y_i), attention knock-out** (mean and median with 95 % intervals)",
              markdown(drop_table(result)), "\n".join(f"- {line}" for line in findings(result))]
    return "\n\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
