"""Does the model use what its attention shows? The knock-out test with fair controls, per model.

    python -m model.faithfulness [--checkpoint checkpoints/rnnsearch …] [--data ../shared/data/enfr-broad/test.tsv.gz] \\
        [--origin newstest2014] [--limit 40] [--json] [--out FILE]

Without ``--checkpoint``, every attention model of the zoo found under checkpoints/; without
``--data``, the first 40 newstest2014 sentences of the broad test split.

Each sentence is translated greedily. Then, at every target step i, with the steps before it as
decoded, every source position j is removed in turn, two ways:

- **attention knock-out**: j removed from step i's attention (α_ij = 0, the row renormalised,
  :class:`~model.attention.Reweigh`; a Transformer's every cross-attention layer and head), the
  step run again: does the step use what its attention reads from position j?
- **input occlusion**: x_j's token embedding zeroed (:data:`~model.attribution.INPUT_BASELINE`),
  the encoder run again and the step teacher-forced on the same prefix: does the step use the word?

A step's word *changes* when the argmax of the edited step is not y_i. Which j to remove is the
question (Serrano & Smith 2019): removing the most-attended piece (argmax_j α_ij) is compared
with controls that remove comparable weight, each drawn among the other positions (j ≠ argmax):

- ``second``: the second-most attended piece;
- ``proportional``: one drawn with probability ∝ α_ij (seeded);
- ``threshold``: one drawn uniformly among those with α_ij ≥ ``threshold`` (steps with none are
  left out and counted);
- ``uniform``: one drawn uniformly (EOS included): mostly a piece of α ≈ 0, close to removing
  nothing; reported with its median α removed so that it is read as such, not as the control.

and a curve: the change rate of every (i, j) binned by the α_ij removed, for the most-attended
pieces and the others apart, so removals of equal weight compare directly.
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

from .attribution import INPUT_BASELINE, decode_states, input_occluded_steps, knocked_out_steps
from .data import read_split
from .search import greedy, prepare_source
from .zoo import load_for_cli, ZOO

DATA = "../shared/data/enfr-broad/test.tsv.gz"
BINS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0)
THRESHOLD = 0.05
CONTROLS = {
    "most": "the most-attended source piece (argmax_j α_ij)",
    "second": "the second-most attended piece",
    "proportional": "a piece drawn in proportion to α_ij among the others (j ≠ argmax)",
    "threshold": "a piece drawn uniformly among the others with α_ij ≥ {threshold}",
    "uniform": "a piece drawn uniformly among the others (mostly α ≈ 0: close to removing nothing)",
}
LEVELS = {
    "knock_out": "attention knock-out: the position removed from step i's attention (α_ij = 0, the row "
                 "renormalised; a Transformer's every cross-attention layer and head), earlier steps as decoded",
    "input_occlusion": f"input occlusion: {INPUT_BASELINE}; teacher-forced on the greedy translation",
}


def removal_matrices(model, vocab, text: str) -> dict | None:
    """Every (step i, source position j) removed both ways, for one sentence: α (T x S) and, per
    level, whether the word changes and the drop in log p(y_i) (T x S each). None when the
    translation is empty or the source one piece long."""
    src = prepare_source(vocab, text)
    record = greedy(model, vocab, src)
    S, target = len(src.ids) + 1, record.target_ids
    if not target or S < 2:
        return None
    ids = torch.tensor(target)
    decoded = decode_states(model, src.ids, target)
    own = decoded[2].gather(1, ids.unsqueeze(1))  # T x 1
    without, argmax = knocked_out_steps(model, decoded, [list(range(S))] * len(target), ids)  # T x S each
    own_in, without_in, argmax_in = input_occluded_steps(model, src.ids, target)
    return {"alpha": np.asarray(record.weights, dtype=float),
            "knock_out": {"changed": (argmax != ids.unsqueeze(1)).numpy(), "drop": (own - without).numpy()},
            "input_occlusion": {"changed": (argmax_in != ids.unsqueeze(1)).numpy(),
                                "drop": (own_in.unsqueeze(1) - without_in).numpy()}}


def draw_controls(alpha: np.ndarray, rng: random.Random, threshold: float) -> dict[str, np.ndarray]:
    """Per step, the position each control removes (T; −1 where a control has no candidate)."""
    T, S = alpha.shape
    order = np.argsort(-alpha, axis=1, kind="stable")
    picks = {name: np.full(T, -1) for name in CONTROLS}
    for i in range(T):
        most = int(order[i, 0])
        others = [j for j in range(S) if j != most]
        picks["most"][i], picks["second"][i] = most, int(order[i, 1])
        weights = alpha[i, others]
        if weights.sum() > 0:
            picks["proportional"][i] = rng.choices(others, weights=weights.tolist())[0]
        heavy = [j for j in others if alpha[i, j] >= threshold]
        if heavy:
            picks["threshold"][i] = rng.choice(heavy)
        picks["uniform"][i] = rng.choice(others)
    return picks


def control_rows(sentences: list[dict], picks: list[dict], level: str) -> dict:
    """Per control: steps, word-change rate, mean drop in log p(y_i), median and mean α removed."""
    out = {}
    for name in CONTROLS:
        changed, drop, alpha = [], [], []
        for s, p in zip(sentences, picks):
            rows = np.flatnonzero(p[name] >= 0)
            cols = p[name][rows]
            changed.append(s[level]["changed"][rows, cols])
            drop.append(s[level]["drop"][rows, cols])
            alpha.append(s["alpha"][rows, cols])
        changed, drop, alpha = (np.concatenate(x) for x in (changed, drop, alpha))
        out[name] = {"steps": int(changed.size), "changed": round(float(changed.mean()), 4) if changed.size else None,
                     "drop": round(float(drop.mean()), 4) if drop.size else None,
                     "median_alpha": round(float(np.median(alpha)), 4) if alpha.size else None,
                     "mean_alpha": round(float(alpha.mean()), 4) if alpha.size else None}
    return out


def change_curve(sentences: list[dict], level: str) -> list[dict]:
    """The change rate against the α_ij removed, every (i, j) binned by α (:data:`BINS`), for the
    most-attended pieces and the others apart."""
    alpha = np.concatenate([s["alpha"].ravel() for s in sentences])
    changed = np.concatenate([s[level]["changed"].ravel() for s in sentences])
    top = np.concatenate([(s["alpha"] == s["alpha"].max(1, keepdims=True)).ravel() for s in sentences])
    rows = []
    for low, high in zip(BINS[:-1], BINS[1:]):
        inside = (alpha >= low) & ((alpha < high) if high < 1.0 else (alpha <= high))
        row = {"alpha_from": low, "alpha_to": high, "pairs": int(inside.sum()),
               "changed": round(float(changed[inside].mean()), 4) if inside.any() else None}
        for label, part in (("most", top), ("others", ~top)):
            sel = inside & part
            row[f"pairs_{label}"] = int(sel.sum())
            row[f"changed_{label}"] = round(float(changed[sel].mean()), 4) if sel.any() else None
        rows.append(row)
    return rows


def knock_out_test(model, vocab, texts: list[str], seed: int = 0, threshold: float = THRESHOLD) -> dict:
    """The test over sentences: per level (attention knock-out, input occlusion), the controls and the curve."""
    rng = random.Random(seed)
    start = time.time()
    sentences = [r for r in (removal_matrices(model, vocab, t) for t in texts) if r is not None]
    picks = [draw_controls(s["alpha"], rng, threshold) for s in sentences]  # the same draws for both levels
    result = {"sentences": len(sentences), "steps": int(sum(len(s["alpha"]) for s in sentences))}
    for level in LEVELS:
        result[level] = {"controls": control_rows(sentences, picks, level), "curve": change_curve(sentences, level)}
    result["seconds"] = round(time.time() - start, 1)
    return result


def source_sentences(data: str, origin: str | None, limit: int | None) -> list[str]:
    df = read_split(data)
    if origin:
        df = df[df["origin"] == origin]
        if df.empty:
            raise SystemExit(f"error: no rows of origin {origin!r} in {data}")
    return df["en"].tolist()[:limit]


def describe(args) -> dict:
    """What the numbers are of: the sample, the seed, the controls and the two levels, in words."""
    return {"sample": {"data": args.data, "origin": args.origin, "first": args.limit, "seed": args.seed,
                       "decoding": "greedy"},
            "threshold": args.threshold, "bins": list(BINS),
            "controls": {k: v.format(threshold=args.threshold) for k, v in CONTROLS.items()},
            "levels": LEVELS, "changed": "the argmax of the edited step is not the greedy word y_i",
            "drop": "log p(y_i) − log p(y_i | edited), mean over steps"}


def summary_line(r: dict) -> str:
    def rates(level):
        return " / ".join("–" if c["changed"] is None else f"{c['changed']:.1%}" for c in r[level]["controls"].values())
    return (f"{r['model']}: word changes with the most-attended / second / ∝α / α≥thr / uniform piece removed: "
            f"knock-out {rates('knock_out')}; input occlusion {rates('input_occlusion')} "
            f"({r['sentences']} sentences, {r['steps']} steps, {r['seconds']} s)")


def write_out(path: Path, head: dict, results: list[dict]) -> None:
    """Merge into ``path``: a model run again replaces its entry; a different sample starts the file anew."""
    old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    models = {r["model"]: r for r in old["models"]} if old and old.get("sample") == head["sample"] else {}
    models.update({r["model"]: r for r in results})
    path.write_text(json.dumps({**head, "models": list(models.values())}, indent=1) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Remove the most-attended source piece against fair controls.")
    p.add_argument("--checkpoint", action="append", default=None,
                   help="a checkpoint folder or hf:NAME; repeatable (default: every zoo model in checkpoints/)")
    p.add_argument("--data", default=DATA, help=f"a split (.tsv or .tsv.gz with en, fr, origin columns; default {DATA})")
    p.add_argument("--origin", default="newstest2014", help="only rows of this origin ('' for all)")
    p.add_argument("--limit", type=int, default=40, help="the first N sentences (of that origin)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threshold", type=float, default=THRESHOLD, help="the threshold control's least α")
    p.add_argument("--out", default=None, help="merge the results into this JSON file (one entry per model)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    args = p.parse_args(argv)
    if not args.checkpoint:
        args.checkpoint = [f"checkpoints/{name}" for name in ZOO if Path("checkpoints", name, "config.json").exists()]
    torch.set_num_threads(1)
    texts = source_sentences(args.data, args.origin or None, args.limit)
    head, results = describe(args), []
    for spec in args.checkpoint:
        model, vocab, cfg = load_for_cli(spec)
        if not model.cfg.has_attention:
            print(f"{spec}: no attention (RNNenc): nothing to knock out", file=sys.stderr)
            continue
        r = {"model": cfg.get("name", Path(spec).name), **knock_out_test(model, vocab, texts, args.seed, args.threshold)}
        results.append(r)
        if not args.json:
            print(summary_line(r), flush=True)
    if args.out:
        write_out(Path(args.out), head, results)
    if args.json:
        print(json.dumps({**head, "models": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())


# ----------------------------------------------------------------------------------------------
# the results in words (the Models page; docs/attribution.md says the same of the shipped run)
# ----------------------------------------------------------------------------------------------
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


def span(values: list[float], percent: bool = True) -> str:
    """The range over the models: 45–63 % (or, for weights, 0.47–0.92)."""
    low, high = min(values), max(values)
    if not percent:
        return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{high:.2f}"
    return f"{100 * low:.0f} %" if round(100 * low) == round(100 * high) else f"{100 * low:.0f}–{100 * high:.0f} %"


def findings(result: dict, least_pairs: int = 50) -> list[str]:
    """What the numbers say, in sentences made from them: the controls' ranges over the models at
    each level, and the curve where most-attended pieces and others of equal α both occur."""
    models = result["models"]
    lines = []
    for level, (what, where) in (("knock_out", ("Removing", "from the step's attention")),
                                 ("input_occlusion", ("Zeroing the input word of", ""))):
        rate = {c: [m[level]["controls"][c]["changed"] for m in models if m[level]["controls"][c]["changed"] is not None]
                for c in ("most", "second", "proportional", "threshold")}
        alpha = {c: [m[level]["controls"][c]["median_alpha"] for m in models] for c in ("most", "second")}
        lines.append(f"{what} the most-attended piece {where} changes the word at {span(rate['most'])} of the steps "
                     f"(median α removed {span(alpha['most'], False)}); the second-most attended, {span(rate['second'])} "
                     f"(median α {span(alpha['second'], False)}); a piece drawn in proportion to α, "
                     f"{span(rate['proportional'])}; one drawn among α ≥ {result['threshold']}, {span(rate['threshold'])}."
                     .replace("  ", " "))
        equal = [r for r in pooled_curve(models, level)
                 if r["pairs_most"] >= least_pairs and r["pairs_others"] >= least_pairs]
        if equal:
            lines.append("At equal weight, " + "; ".join(
                f"α {r['alpha_from']}–{r['alpha_to']}: most-attended {100 * r['changed_most']:.0f} %, others "
                f"{100 * r['changed_others']:.0f} % ({r['pairs_most']} and {r['pairs_others']} removals)" for r in equal)
                + f" ({'attention knock-out' if level == 'knock_out' else 'input occlusion'}, every model pooled).")
    return lines
