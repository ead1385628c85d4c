"""Does the model use what its attention shows? The knock-out test, matched on what the removal leaves.

    python -m model.faithfulness [--checkpoint checkpoints/rnnsearch …] [--data ../shared/data/enfr-broad/test.tsv.gz] \\
        [--origin newstest2014] [--sample 40] [--min-words 6] [--max-words 30] [--gold ../shared/data/hansards-align] \\
        [--seed 0] [--cache DIR] [--json] [--out FILE]
    python -m model.faithfulness --report results/attribution/faithfulness.json [faithfulness_hansards.json]

Without ``--checkpoint``, every attention model of the zoo found under checkpoints/; without
``--data``, newstest2014 of the broad test split; with ``--gold``, the English side of the Hansards
gold pairs (written as ordinary text) instead. ``--sample N`` sentences are drawn at random (seeded)
from those of ``--min-words``–``--max-words`` words, never the first N of a corpus.

Each sentence is translated greedily. Then, at every target step i, with the steps before it as
decoded, every source position j is removed in turn, in these ways (*levels*, :data:`LEVELS`):

- ``knock_out``: j removed from step i's attention (α_ij = 0, the row renormalised,
  :class:`~model.attention.Reweigh`), the step run again. A Transformer loses j in all its
  cross-attention layers and heads at once: there the argmax and the weight removed are read on the
  mean α over those L·h heads;
- ``knock_out_layer<n>`` (Transformer only): j removed from decoder layer n's heads alone; the argmax
  and the weight removed are that layer's head average (1/h) Σ_k α^(k)_ij (for the shown layer, the α
  the page shows);
- ``input_occlusion``: one piece's token embedding replaced by the zero vector
  (:data:`~model.attribution.INPUT_BASELINE`), the encoder run again, the step teacher-forced;
- ``input_random``: the same with the embedding of a piece drawn from the vocabulary
  (:data:`~model.attribution.INPUT_RANDOM_BASELINE`), a replacement that stays in distribution.

A step's word *changes* when the argmax of the edited step is not y_i; its *drop* is
log p(y_i) − log p(y_i | edited). Removing the most-attended piece is compared with removals of other
pieces of the same sentence that take about the same weight **and leave about the same distribution**
(largest weight and entropy after renormalisation; :func:`~model.faithfulness_stats.match_sentence`),
on the share of argmax removals that find such a partner (the coverage, stated with every matched
figure), and with controls drawn per step. The statistics and their intervals (a bootstrap over
sentences, the controls drawn again in each resample) are in :mod:`model.faithfulness_stats`; the
tables and sentences in :mod:`model.faithfulness_report`.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import torch

from .attribution import (INPUT_BASELINE, INPUT_RANDOM_BASELINE, decode_states, input_occluded_steps,
                          knocked_out_steps, random_piece_embeddings)
from .data import read_split
from .faithfulness_report import report, summary_line
from .faithfulness_stats import (BOOTSTRAP, CALIPERS, CONTROLS, MATCHING, MIN_PAIRS, THRESHOLD, BINS, analyse)
from .search import greedy, prepare_source
from .zoo import load_for_cli, ZOO

DATA = "../shared/data/enfr-broad/test.tsv.gz"
LEVELS = {
    "knock_out": "attention knock-out: the position removed from step i's attention (α_ij = 0, the row "
                 "renormalised; a Transformer: from every cross-attention layer and head at once, the argmax and the "
                 "weight removed read on the mean α over those heads), earlier steps as decoded",
    "knock_out_layer": "attention knock-out in one decoder layer of a Transformer (knock_out_layer<n>): the position "
                       "removed from that layer's heads alone; the argmax and the weight removed read on its head "
                       "average",
    "input_occlusion": f"input occlusion, zero vector: {INPUT_BASELINE}; teacher-forced on the greedy translation",
    "input_random": f"input occlusion, a random piece: {INPUT_RANDOM_BASELINE}; teacher-forced on the greedy translation",
}
RENORMALISED = ("a knock-out renormalises the row: the weight of the piece removed goes to the other pieces in "
                "proportion, most of it to the argmax, so removing a piece of small α can raise log p(y_i)")


# ----------------------------------------------------------------------------------------------
# the removals, one sentence at a time
# ----------------------------------------------------------------------------------------------
def level_of(changed: torch.Tensor, drop: torch.Tensor) -> dict:
    return {"changed": changed.cpu().numpy(), "drop": drop.cpu().numpy()}


def layer_level(n: int) -> str:
    """The level of a Transformer's knock-out in decoder layer n alone (0-based)."""
    return f"knock_out_layer{n}"


def removal_matrices(model, vocab, text: str, rng: torch.Generator | None = None) -> dict | None:
    """Every (step i, source position j) removed at every level, for one sentence: α (T x S, the
    shown weights), per level the weights it removes from (``weights``, T x S: the argmax and the α
    of a removal are read there) and whether the word changes and the drop in log p(y_i) (T x S each).
    A Transformer (record.head_weights T x L x h x S) is knocked out from every layer at once
    (weights: the mean over the L·h heads) and from each layer n alone (weights: that layer's head
    average (1/h) Σ_k α^(k)_ij, the α the page shows for the shown layer). ``rng`` draws the random
    pieces (seed 0 if None). None when the translation is empty or the source one piece long."""
    src = prepare_source(vocab, text)
    record = greedy(model, vocab, src)
    S, target = len(src.ids) + 1, record.target_ids
    if not target or S < 2:
        return None
    decoded = decode_states(model, src.ids, target)
    ids = torch.tensor(target, device=decoded[2].device)
    own = decoded[2].gather(1, ids.unsqueeze(1))  # T x 1
    every = [list(range(S))] * len(target)
    alpha = np.asarray(record.weights, dtype=float)
    out = {"text": text, "alpha": alpha, "weights": {}}
    without, argmax = knocked_out_steps(model, decoded, every, ids)  # T x S each
    out["knock_out"] = level_of(argmax != ids.unsqueeze(1), own - without)
    if record.head_weights is not None:  # a Transformer: T x L x h x S
        heads = np.asarray(record.head_weights, dtype=float)
        out["heads"] = heads
        out["weights"]["knock_out"] = heads.mean((1, 2))  # what the every-layer knock-out removes
        for n in range(heads.shape[1]):
            without, argmax = knocked_out_steps(model, decoded, every, ids, layer=n)
            out[layer_level(n)] = level_of(argmax != ids.unsqueeze(1), own - without)
            out["weights"][layer_level(n)] = heads[:, n].mean(1)
    pieces = random_piece_embeddings(model, S, rng if rng is not None else torch.Generator().manual_seed(0))
    for level, baseline in (("input_occlusion", None), ("input_random", pieces)):
        own_in, without_in, argmax_in = input_occluded_steps(model, src.ids, target, baseline=baseline)
        out[level] = level_of(argmax_in.cpu() != ids.cpu().unsqueeze(1), (own_in.unsqueeze(1) - without_in).cpu())
    return out


def save_removals(path: Path, sentences: list[dict], requested: list[str], seconds: float = 0.0) -> None:
    """The removal matrices of one model on one sample, as a compressed .npz (keys ``k/name`` and
    ``k/level/field``; ``texts``; ``requested``, the sentences asked for), so that the analysis can run
    again without the removals."""
    arrays = {"texts": np.array([s["text"] for s in sentences]), "requested": np.array(requested),
              "seconds": np.array(seconds)}
    for k, s in enumerate(sentences):
        for name in ("alpha", "heads"):
            if name in s:
                arrays[f"{k}/{name}"] = s[name].astype(np.float32)
        for level in s["weights"]:
            arrays[f"{k}/weights/{level}"] = s["weights"][level].astype(np.float32)
        for level in s:
            if isinstance(s[level], dict) and "changed" in s[level]:
                arrays[f"{k}/{level}/changed"] = s[level]["changed"]
                arrays[f"{k}/{level}/drop"] = s[level]["drop"].astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)


def load_removals(path: Path) -> tuple[list[dict], list[str], float]:
    """:func:`save_removals` read back: the sentences' matrices, the sentences asked for, the seconds they took."""
    data = np.load(path)
    sentences = [{"text": str(t), "weights": {}} for t in data["texts"]]
    for key in data.files:
        if key in ("texts", "requested", "seconds"):
            continue
        k, *rest = key.split("/")
        s, value = sentences[int(k)], data[key]
        if len(rest) == 1:
            s[rest[0]] = value.astype(float)
        elif rest[0] == "weights":
            s["weights"][rest[1]] = value.astype(float)
        else:
            s.setdefault(rest[0], {})[rest[1]] = value.astype(float) if rest[1] == "drop" else value
    return sentences, [str(t) for t in data["requested"]], float(data["seconds"]) if "seconds" in data.files else 0.0


def removals(model, vocab, texts: list[str], seed: int = 0) -> list[dict]:
    """:func:`removal_matrices` of every sentence that has one; each sentence's random pieces drawn from
    ``seed`` and the sentence itself, so that they do not depend on which sentences run with it."""
    out = []
    for t in texts:
        pieces = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(t.encode("utf-8")))
        r = removal_matrices(model, vocab, t, pieces)
        if r is not None:
            out.append(r)
    return out


def knock_out_test(model, vocab, texts: list[str], seed: int = 0, threshold: float = THRESHOLD,
                   resamples: int = BOOTSTRAP) -> dict:
    """The test over sentences: :func:`removals`, then :func:`~model.faithfulness_stats.analyse`, and the
    seconds it took."""
    start = time.time()
    result = analyse(removals(model, vocab, texts, seed), seed, threshold, resamples,
                     shown=getattr(model.cfg, "shown_layer", None))
    result["seconds"] = round(time.time() - start, 1)
    return result


# ----------------------------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------------------------
def source_sentences(data: str, origin: str | None, sample: int | None, gold: str | None = None,
                     min_words: int = 1, max_words: int | None = None, seed: int = 0) -> tuple[list[str], int]:
    """The English sentences of a split (rows of ``origin``) or of the Hansards gold pairs written as
    ordinary text (``gold``), of ``min_words``–``max_words`` words; of those, ``sample`` drawn at random
    without replacement (numpy's default_rng(seed)), in the corpus's order, so that no run of
    neighbouring sentences of one document stands for the corpus. Also how many there were to draw from."""
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
        texts = list(dict.fromkeys(df["en"].tolist()))  # one English sentence once, whatever its references
    texts = [t for t in texts if min_words <= len(t.split()) <= (max_words or 10 ** 9)]
    if sample is None or sample >= len(texts):
        return texts, len(texts)
    # the first N of one seeded permutation: a larger sample holds the smaller one (and its cached removals)
    chosen = np.sort(np.random.default_rng(seed).permutation(len(texts))[:sample])
    return [texts[k] for k in chosen], len(texts)


def describe(args, drawn: int, population: int) -> dict:
    """What the numbers are of: the sample (random, its seed, how many of how many), the bootstrap,
    the matching, the controls and the levels, in words."""
    sample = ({"gold": args.gold} if args.gold else {"data": args.data, "origin": args.origin})
    words = f"{args.min_words}–{args.max_words}" if args.max_words else f"{args.min_words} or more"
    return {"sample": {**sample, "sentences": drawn, "population": population, "min_words": args.min_words,
                       "max_words": args.max_words, "seed": args.seed, "decoding": "greedy",
                       "sampling": f"random: {drawn} of the {population:,} sentences of {words} words (the first "
                                   f"{drawn} of numpy.random.default_rng({args.seed}).permutation)"},
            "threshold": args.threshold, "bins": list(BINS), "resamples": args.resamples,
            "bootstrap": f"{args.resamples} resamples of the sentences, the controls drawn again in each; 95 % "
                         "percentile intervals",
            "matching": MATCHING, "calipers": CALIPERS, "min_pairs": MIN_PAIRS,
            "controls": {k: v.format(threshold=args.threshold) for k, v in CONTROLS.items()},
            "levels": LEVELS, "changed": "the argmax of the edited step is not the greedy word y_i",
            "drop": "log p(y_i) − log p(y_i | edited): mean and median over steps",
            "rises": "the share of steps where log p(y_i) rises (drop < 0); " + RENORMALISED}


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
    p = argparse.ArgumentParser(description="Remove the most-attended source piece, against matched removals and controls.")
    p.add_argument("--checkpoint", action="append", default=None,
                   help="a checkpoint folder or hf:NAME; repeatable (default: every zoo model in checkpoints/)")
    p.add_argument("--data", default=DATA, help=f"a split (.tsv or .tsv.gz with en, fr, origin columns; default {DATA})")
    p.add_argument("--origin", default="newstest2014", help="only rows of this origin ('' for all)")
    p.add_argument("--gold", default=None, help="a gold-alignment folder (enfr.src-tgt): its English sentences instead")
    p.add_argument("--sample", type=int, default=40, help="N sentences drawn at random (seeded) from the corpus")
    p.add_argument("--min-words", type=int, default=1, help="only sentences of at least this many words")
    p.add_argument("--max-words", type=int, default=None, help="only sentences of at most this many words")
    p.add_argument("--seed", type=int, default=0, help="the sample, the random pieces, the control draws, the bootstrap")
    p.add_argument("--resamples", type=int, default=BOOTSTRAP, help="bootstrap resamples of the sentences")
    p.add_argument("--threshold", type=float, default=THRESHOLD, help="the threshold control's least α")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="keep each model's removal matrices in DIR/<model>.npz and read them from there when the "
                        "sentences are the same (the analysis again without the removals)")
    p.add_argument("--out", default=None, help="merge the results into this JSON file (one entry per model)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--report", default=None, metavar="FILE", nargs="+",
                   help="print the tables and findings of results files in Markdown (docs/attribution.md) and stop; "
                        "two files (newstest2014, Hansards): the replication table")
    return p.parse_args(argv)


def model_removals(spec: str, model, vocab, name: str, texts: list[str], seed: int,
                   cache: str | None) -> tuple[list[dict], float]:
    """:func:`removals` of ``texts`` and the seconds they took; with ``cache``, those of the sentences
    already in DIR/<model>.npz read from there (with the seconds they took then), the others computed and
    added."""
    path = Path(cache, f"{name}.npz") if cache else None
    known, tried, seconds = {}, set(), 0.0
    if path is not None and path.exists():
        sentences, requested, seconds = load_removals(path)
        known, tried = {s["text"]: s for s in sentences}, set(requested)
    new = [t for t in texts if t not in tried]
    if known:
        print(f"{spec}: {len(texts) - len(new)} sentences' removals read from {path}, {len(new)} to compute",
              file=sys.stderr)
    start = time.time()
    known.update({s["text"]: s for s in removals(model, vocab, new, seed)})
    seconds += time.time() - start
    if path is not None and new:
        save_removals(path, list(known.values()), sorted(tried | set(new)), seconds)
    return [known[t] for t in texts if t in known], round(seconds, 1)


def main(argv=None) -> int:
    args = parse(argv)
    if args.report:
        print(report(*[json.loads(Path(f).read_text(encoding="utf-8")) for f in args.report]))
        return 0
    if not args.checkpoint:
        args.checkpoint = [f"checkpoints/{name}" for name in ZOO if Path("checkpoints", name, "config.json").exists()]
    torch.set_num_threads(1)
    texts, population = source_sentences(args.data, args.origin or None, args.sample, args.gold, args.min_words,
                                         args.max_words, args.seed)
    head, results = describe(args, len(texts), population), []
    for spec in args.checkpoint:
        model, vocab, cfg = load_for_cli(spec)
        if not model.cfg.has_attention:
            print(f"{spec}: no attention (RNNenc): nothing to knock out", file=sys.stderr)
            continue
        name = cfg.get("name", Path(spec).name)
        sentences, seconds = model_removals(spec, model, vocab, name, texts, args.seed, args.cache)
        r = {"model": name, **analyse(sentences, args.seed, args.threshold, args.resamples,
                                      shown=getattr(model.cfg, "shown_layer", None))}
        r["seconds"] = seconds
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
