"""The statistics of the knock-out test (model/faithfulness.py): the argmax removal matched with
another removal that leaves a comparable distribution, the controls drawn again in every bootstrap
resample, and a 95 % interval over sentences for every figure.

One sentence's removals come from :func:`model.faithfulness.removal_matrices`: per level, the
weights w (T x S) it removes from (the shown α; a Transformer's layer: its head average
(1/h) Σ_k α^(k)_ij; all its layers at once: the mean over the L·h heads), and per removal (i, j)
whether y_i changes and the drop in log p(y_i). Removing j renormalises the rest of row i
(Reweigh in model/attention.py, r = 0):

    q_ik = w_ik / (1 − w_ij)   (k ≠ j),   largest left = max_k q_ik,   entropy left = −Σ_k q_ik log q_ik

so a removal is described by what it takes (w_ij) and by what it leaves (those two), and the
matched comparison pairs removals alike in all three (:func:`match_sentence`).
"""
from __future__ import annotations

import zlib

import numpy as np

BINS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0)
BOOTSTRAP = 1000
THRESHOLD = 0.05
# the matched comparison: an argmax removal and a non-argmax removal of the same sentence are a pair when
# they remove about the same α and leave about the same distribution (renormalised over the rest)
CALIPERS = {"alpha": 0.05, "largest_left": 0.05, "entropy_left": 0.25}
MIN_PAIRS = 30  # fewer matched pairs than this: "not estimable", no figure
CORRECTED = 0.995  # the headline's corrected interval: Bonferroni over up to 10 matched knock-out effects a corpus
MATCHING = ("each argmax removal (i, argmax_j w_ij) paired with the nearest non-argmax removal (i', j') of the same "
            "sentence whose α removed, largest α left and entropy left (both after renormalisation, "
            "w_ik / (1 − w_ij)) are all within the calipers; a partner on the same step first, else the nearest in the "
            "sum of the three distances, each over its caliper; one non-argmax removal may serve several argmax "
            "removals")
CONTROLS = {
    "most": "the most-attended source piece (argmax_j w_ij)",
    "second": "the second-most attended piece",
    "second_apart": "the most attended piece at least 2 positions from the argmax (not its neighbour)",
    "proportional": "a piece drawn in proportion to w_ij among the others (j ≠ argmax), drawn again in every resample",
    "threshold": "a piece drawn uniformly among the others with w_ij ≥ {threshold}, drawn again in every resample",
    "uniform": "a piece drawn uniformly among the others (mostly w ≈ 0: close to removing nothing), drawn again in "
               "every resample",
}
DRAWN = ("proportional", "threshold", "uniform")


class Clusters:
    """B resamples of the n sentences with replacement (seeded): ``counts`` (B x n) how often each
    sentence is drawn, ``draws`` (B x n) which. A statistic's 95 % interval is the 2.5th and 97.5th
    percentile of its value over the resamples."""

    def __init__(self, n: int, resamples: int = BOOTSTRAP, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.draws = self.rng.integers(0, n, size=(resamples, n))
        self.counts = np.stack([np.bincount(d, minlength=n) for d in self.draws]).astype(float)

    @staticmethod
    def interval(values: np.ndarray, level: float = 0.95) -> list[float] | None:
        values = values[np.isfinite(values)]
        if not values.size:
            return None
        tail = 100 * (1 - level) / 2
        return [round(float(v), 4) for v in np.percentile(values, [tail, 100 - tail])]

    def mean(self, parts: list[np.ndarray]) -> dict:
        """The mean over every value of every sentence (a ratio of sums) and its interval. A part may be
        B x m (a control drawn again in each resample, row b for resample b; the value: the mean over
        the draws) or m."""
        B = len(self.counts)
        sums = np.stack([np.broadcast_to(np.atleast_2d(p).sum(-1), (B,)) if np.size(p) else np.zeros(B)
                         for p in parts], 1)  # B x n
        sizes = np.array([np.atleast_2d(p).shape[-1] if np.size(p) else 0 for p in parts], dtype=float)
        if not sizes.sum():
            return {"value": None, "ci": None}
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = (self.counts * sums).sum(1) / (self.counts @ sizes)
        return {"value": round(float(sums.sum(1).mean() / sizes.sum()), 4), "ci": self.interval(boot), "boot": boot}

    def statistic(self, parts: list[np.ndarray], f) -> dict:
        """Any statistic ``f`` of the pooled values (a median, a share), with its interval; parts as in :meth:`mean`."""
        B = len(self.counts)
        rows = [np.broadcast_to(np.atleast_2d(p), (B, np.atleast_2d(p).shape[-1])) if np.size(p) else np.zeros((B, 0))
                for p in parts]
        if not sum(r.shape[1] for r in rows):
            return {"value": None, "ci": None}
        drawn = any(np.ndim(p) == 2 and np.shape(p)[0] > 1 for p in parts)
        every = [f(np.concatenate([r[b] for r in rows])) for b in range(B if drawn else 1)]
        boot = np.array([f(np.concatenate([rows[k][b] for k in d])) if sum(rows[k].shape[1] for k in d) else np.nan
                         for b, d in enumerate(self.draws)], dtype=float)
        return {"value": round(float(np.mean(every)), 4), "ci": self.interval(boot)}


def median(x: np.ndarray) -> float:
    return float(np.median(x)) if x.size else np.nan


def top_share(drops: np.ndarray, share: float = 0.05) -> float:
    """The share of the total positive drop held by the ``share`` of steps with the largest drops."""
    positive = np.sort(drops[drops > 0])[::-1]
    if not positive.size:
        return np.nan
    return float(positive[:max(1, int(np.ceil(share * drops.size)))].sum() / positive.sum())


def put(row: dict, key: str, e: dict) -> None:
    row[key], row[f"{key}_ci"] = e["value"], e["ci"]


# ----------------------------------------------------------------------------------------------
# what a removal leaves, and the matched comparison
# ----------------------------------------------------------------------------------------------
def weights_of(s: dict, level: str) -> np.ndarray:
    """The weights a level removes from (T x S): its own (a Transformer's layers), else the shown α."""
    return s["weights"].get(level, s["alpha"])


def left_after(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every removal (i, j): the largest weight and the entropy (nats) of row i without j,
    renormalised, q_ik = w_ik / (1 − w_ij) (T x S each). A row all on j is spread evenly (Reweigh)."""
    T, S = w.shape
    rest = np.clip(1.0 - w, 0.0, None)[..., None]  # T x S x 1
    others = np.broadcast_to(w[:, None, :], (T, S, S)).copy()
    others[:, np.arange(S), np.arange(S)] = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(rest > 1e-9, others / np.maximum(rest, 1e-30), 1.0 / max(S - 1, 1))
    q[:, np.arange(S), np.arange(S)] = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        entropy = -np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0).sum(-1)
    return q.max(-1), entropy


def match_sentence(w: np.ndarray, calipers: dict = CALIPERS) -> np.ndarray:
    """For each step's argmax removal (i, argmax_j w_ij), its partner: the flat index i'·S + j' of a
    non-argmax removal of the same sentence within every caliper of α removed, largest α left and
    entropy left, on the same step when one is, else the nearest (the sum of the distances over
    their calipers); −1 where none is (T,)."""
    T, S = w.shape
    largest, entropy = left_after(w)
    features = np.stack([w, largest, entropy], -1).reshape(T * S, 3) / np.array(
        [calipers["alpha"], calipers["largest_left"], calipers["entropy_left"]])
    top = w.argmax(1)
    mine = np.arange(T) * S + top
    candidate = np.ones(T * S, dtype=bool)
    candidate[mine] = False
    step = np.repeat(np.arange(T), S)
    gap = np.abs(features[mine][:, None, :] - features[None, :, :])  # T x TS x 3, in calipers
    inside = (gap <= 1.0).all(-1) & candidate[None, :]
    distance = np.where(inside, gap.sum(-1) + 3.0 * (step[None, :] != np.arange(T)[:, None]), np.inf)
    partner = distance.argmin(1)
    return np.where(np.isfinite(distance.min(1)), partner, -1)


def matched_effect(clusters: Clusters, sentences: list[dict], level: str, min_pairs: int = MIN_PAIRS) -> dict:
    """Being the argmax, matched on what the removal leaves: over the matched pairs, the argmax's
    change rate minus its partner's (points) and the same for the mean drop, each with its interval;
    the coverage (matched argmax removals / all), the balance of the pairs (mean α removed, largest
    α left, entropy left, argmax and partner), and the unmatched remainder's change rate and α.
    Below ``min_pairs`` pairs the effect is not estimated (``estimable`` False)."""
    keys = ("changed", "drop", "alpha", "largest", "entropy")
    pairs = {f"{k}_{side}": [] for k in keys for side in ("most", "partner")}
    matched, rest_changed, rest_alpha = [], [], []
    for s in sentences:
        w = weights_of(s, level)
        T, S = w.shape
        largest, entropy = left_after(w)
        values = {"changed": s[level]["changed"].astype(float).ravel(), "drop": s[level]["drop"].ravel(),
                  "alpha": w.ravel(), "largest": largest.ravel(), "entropy": entropy.ravel()}
        mine = np.arange(T) * S + w.argmax(1)
        partner = match_sentence(w)
        ok = partner >= 0
        matched.append(ok.astype(float))
        for k in keys:
            pairs[f"{k}_most"].append(values[k][mine[ok]])
            pairs[f"{k}_partner"].append(values[k][partner[ok]])
        rest_changed.append(values["changed"][mine[~ok]])
        rest_alpha.append(values["alpha"][mine[~ok]])
    n_pairs = int(sum(p.size for p in pairs["changed_most"]))
    row = {"argmax_removals": int(sum(m.size for m in matched)), "pairs": n_pairs,
           "sentences_with_pairs": int(sum(p.size > 0 for p in pairs["changed_most"])),
           "estimable": n_pairs >= min_pairs,
           "status": "estimated" if n_pairs >= min_pairs else f"not estimable: {n_pairs} pairs < {min_pairs}"}
    put(row, "coverage", clusters.mean(matched))
    put(row, "unmatched_changed", clusters.mean(rest_changed))
    put(row, "unmatched_alpha_median", clusters.statistic(rest_alpha, median))
    if not row["estimable"]:
        return row
    for name, key in (("effect", "changed"), ("drop_effect", "drop")):
        e = clusters.mean([a - b for a, b in zip(pairs[f"{key}_most"], pairs[f"{key}_partner"])])
        put(row, name, e)
        if name == "effect" and level.startswith("knock_out"):  # the headline family: the knock-outs
            row["effect_ci_corrected"] = Clusters.interval(e["boot"], CORRECTED)
    for k in keys:
        for side in ("most", "partner"):
            put(row, f"{k}_{side}", clusters.mean(pairs[f"{k}_{side}"]))
    return row


# ----------------------------------------------------------------------------------------------
# the controls, drawn per step (the random ones again in every resample)
# ----------------------------------------------------------------------------------------------
def candidates(w: np.ndarray, name: str, threshold: float) -> np.ndarray:
    """T x S: the probability that control ``name`` removes (i, j) (rows of zeros: no candidate)."""
    T, S = w.shape
    top = w.argmax(1)
    p = np.ones_like(w) if name in ("uniform", "threshold") else w.copy()
    if name == "threshold":
        p = (w >= threshold).astype(float)
    p[np.arange(T), top] = 0.0
    total = p.sum(1, keepdims=True)
    return np.divide(p, total, out=np.zeros_like(p), where=total > 0)


def draw_controls(w: np.ndarray, rng: np.random.Generator, threshold: float = THRESHOLD, draws: int = 1) -> dict:
    """Per control, the position it removes at every step: ``draws`` x T for the drawn ones (one row a
    resample), T for the others; −1 where a control has no candidate."""
    T, S = w.shape
    order = np.argsort(-w, axis=1, kind="stable")
    top = order[:, 0]
    picks = {"most": top.copy(), "second": order[:, 1].copy(), "second_apart": np.full(T, -1)}
    for i in range(T):
        apart = [int(j) for j in order[i, 1:] if abs(int(j) - int(top[i])) >= 2]
        if apart:
            picks["second_apart"][i] = apart[0]
    for name in DRAWN:
        p = candidates(w, name, threshold)
        cumulative = np.cumsum(p, 1)
        u = rng.random((draws, T, 1)) * cumulative[None, :, -1:]
        picked = np.minimum((cumulative[None] <= u).sum(-1), S - 1)
        picks[name] = np.where(p.sum(1)[None] > 0, picked, -1)
    return picks


def at(values: np.ndarray, pick: np.ndarray) -> np.ndarray:
    """values (T x S) at the pieces ``pick`` removes: pick T -> m (the steps with a piece), pick D x T ->
    D x m (the steps with a piece in every draw: a control's candidates do not depend on the draw)."""
    pick = np.atleast_2d(pick)
    rows = np.flatnonzero((pick >= 0).all(0))
    out = values[rows[None, :], pick[:, rows]]
    return out if len(pick) > 1 else out[0]


def control_row(clusters: Clusters, parts: dict) -> dict:
    """One control at one level, from its per-sentence values: the steps, the word-change rate, the mean
    and median drop, the share of steps where log p(y_i) rises, the share of the positive drop held by
    the 5 % of steps with the largest drops, the median and mean weight removed, each with its interval."""
    row = {"steps": int(sum(np.atleast_2d(p).shape[-1] for p in parts["drop"] if np.size(p)))}
    put(row, "changed", clusters.mean(parts["changed"]))
    put(row, "drop", clusters.mean(parts["drop"]))
    put(row, "drop_median", clusters.statistic(parts["drop"], median))
    put(row, "rises", clusters.mean([(d < 0).astype(float) for d in parts["drop"]]))
    put(row, "top5_share", clusters.statistic(parts["drop"], top_share))
    put(row, "median_alpha", clusters.statistic(parts["alpha"], median))
    put(row, "mean_alpha", clusters.mean(parts["alpha"]))
    return row


def level_result(clusters: Clusters, sentences: list[dict], level: str, threshold: float, seed: int) -> dict:
    """One level: every control (the drawn ones drawn again in each resample), the argmax against the
    threshold control on the steps that have one (``paired``), where the controls lie (``placement``),
    the matched effect and the change curve."""
    rng = np.random.default_rng([seed, zlib.crc32(level.encode())])  # a stream per level, the same every run
    B = len(clusters.counts)
    parts = {name: {"changed": [], "drop": [], "alpha": []} for name in CONTROLS}
    paired, adjacent, available = {"most": [], "control": []}, [], []
    for s in sentences:
        w = weights_of(s, level)
        picks = draw_controls(w, rng, threshold, B)
        for name in CONTROLS:
            for key, values in (("changed", s[level]["changed"].astype(float)), ("drop", s[level]["drop"]),
                                ("alpha", w)):
                parts[name][key].append(at(values, picks[name]))
        has = picks["threshold"][0] >= 0
        available.append(has.astype(float))
        paired["most"].append(s[level]["changed"][np.flatnonzero(has), picks["most"][has]].astype(float))
        paired["control"].append(at(s[level]["changed"].astype(float), picks["threshold"]))
        adjacent.append((np.abs(picks["second"] - picks["most"]) == 1).astype(float))
    result = {"controls": {name: control_row(clusters, parts[name]) for name in CONTROLS}}
    row = {"steps": int(sum(m.size for m in paired["most"]))}
    put(row, "most", clusters.mean(paired["most"]))
    put(row, "control", clusters.mean(paired["control"]))
    put(row, "difference", clusters.mean([m[None, :] - c if m.size else m for m, c in zip(paired["most"],
                                                                                          paired["control"])]))
    result["paired"] = {"threshold": row}
    result["placement"] = {}
    put(result["placement"], "second_adjacent", clusters.mean(adjacent))
    put(result["placement"], "threshold_available", clusters.mean(available))
    result["matched"] = matched_effect(clusters, sentences, level)
    result["curve"] = change_curve(sentences, level)
    return result


def change_curve(sentences: list[dict], level: str) -> list[dict]:
    """The change rate against the weight removed (:data:`BINS`), the argmax pieces and the others
    apart, each with its removals and mean weight (the page's figure; no intervals: not a finding)."""
    w = np.concatenate([weights_of(s, level).ravel() for s in sentences])
    changed = np.concatenate([s[level]["changed"].ravel() for s in sentences])
    top = np.concatenate([is_top(weights_of(s, level)).ravel() for s in sentences])
    rows = []
    for low, high in zip(BINS[:-1], BINS[1:]):
        inside = (w >= low) & ((w < high) if high < 1.0 else (w <= high))
        row = {"alpha_from": low, "alpha_to": high, "pairs": int(inside.sum())}
        for label, part in (("most", top), ("others", ~top)):
            sel = inside & part
            row[f"pairs_{label}"] = int(sel.sum())
            row[f"changed_{label}"] = round(float(changed[sel].mean()), 4) if sel.any() else None
        rows.append(row)
    return rows


def is_top(w: np.ndarray) -> np.ndarray:
    """T x S: whether (i, j) is step i's argmax (the first, on a tie)."""
    top = np.zeros(w.shape, dtype=bool)
    top[np.arange(len(w)), w.argmax(1)] = True
    return top


def layer_agreement(clusters: Clusters, sentences: list[dict], shown: int | None) -> list[dict] | None:
    """A Transformer: per decoder layer, its head-average α at the shown argmax piece (median) and how
    often its own argmax is the shown layer's, with intervals."""
    if "heads" not in sentences[0]:
        return None
    rows = []
    L = sentences[0]["heads"].shape[1]
    for n in range(L):
        at_top, agree = [], []
        for s in sentences:
            top = s["alpha"].argmax(1)
            layer = s["heads"][:, n].mean(1)
            at_top.append(layer[np.arange(len(top)), top])
            agree.append((layer.argmax(1) == top).astype(float))
        row = {"layer": n, "shown": shown is not None and n == shown % L}
        put(row, "median_alpha_at_shown_argmax", clusters.statistic(at_top, median))
        put(row, "argmax_agrees", clusters.mean(agree))
        rows.append(row)
    return rows


def analyse(sentences: list[dict], seed: int = 0, threshold: float = THRESHOLD, resamples: int = BOOTSTRAP,
            shown: int | None = None) -> dict:
    """Per level, the controls, the matched effect and the curve; for a Transformer, its layers."""
    clusters = Clusters(len(sentences), resamples, seed)
    result = {"sentences": len(sentences), "steps": int(sum(len(s["alpha"]) for s in sentences))}
    levels = [lv for lv in sentences[0] if isinstance(sentences[0][lv], dict) and "changed" in sentences[0][lv]]
    for level in sorted(levels, key=level_order):
        result[level] = level_result(clusters, sentences, level, threshold, seed)
    result["layers"] = layer_agreement(clusters, sentences, shown)
    strip(result)
    return result


def level_order(level: str) -> tuple:
    order = ["knock_out", "knock_out_layer", "input_occlusion", "input_random"]
    return next(k for k, name in enumerate(order) if level.startswith(name)), level


def strip(x) -> None:
    """Drop the bootstrap replicates kept for the corrected interval before the result is written."""
    if isinstance(x, dict):
        x.pop("boot", None)
        for v in x.values():
            strip(v)
    elif isinstance(x, list):
        for v in x:
            strip(v)
