"""Print the README's results table from the shipped checkpoints' metrics.json and config.json.

    python scripts/results_table.py [CHECKPOINTS]            (default: checkpoints)
    python scripts/results_table.py --stages [CHECKPOINTS]   each model's training stages (docs/results.md)

Every number comes from a file written by model.train / model.evaluate / model.align
(``bash scripts/evaluate_zoo.sh`` writes them all). The per-corpus columns are the broad
test split's origins (``metrics.json`` → ``broad-test.per_origin``: the `enfr` test split's
Multi30k and Tatoeba rows plus newstest2014), read from ``test.per_origin`` where a model
has no broad-test entry.
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from model.checkpoint import read_metrics, stage_kind, stage_minutes, stage_on_gpu, training_minutes, training_stages  # noqa: E402
from model.zoo import DISPLAY_NAMES, ZOO  # noqa: E402

HEAD = ("| model | `enfr` test | broad test | Multi30k 2016 | Multi30k 2017 | Tatoeba | newstest2014 | stress "
        "| AER (Hansards) | AER, tokens as given | params | training data | steps | training time | best dev BLEU |")
BLEU_SETS = ("test", "broad-test", "newstest2014", "stress")


def cell(d, *keys, fmt="{:.1f}"):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return "–"
        d = d[k]
    return fmt.format(d) if isinstance(d, (int, float)) else str(d)


def history(training: dict) -> str:
    """How the CPU minutes split over training stages (config.json ``training.stages``, written by
    scripts/promote_finetuned.py), e.g. ' (277 + 95 mixed)'; or ' after NAME' for a model
    warm-started from another (``training.initialised_from``). GPU stages are left out here: the
    minutes cell adds them apart (:func:`minutes`)."""
    stages = [s for s in training.get("stages") or [] if not stage_on_gpu(s)]
    if len(stages) > 1:
        return " (" + " + ".join(f"{stage_minutes(s) or 0:.0f}" + (" mixed" if stage_kind(s) == "mixed fine-tuning" else "")
                                 for s in stages) + ")"
    init = training.get("initialised_from")
    return f" after `{Path(init['checkpoint']).name}`" if init else ""


def minutes(cfg: dict) -> str:
    """The training-time cell: '277 min', or '402 CPU min (277 + 125 mixed) + 7 GPU min' where a
    stage ran on a GPU, whose minutes are not CPU minutes and are not added to them."""
    cpu, gpu = training_minutes(cfg)
    training = cfg.get("training", {})
    if cpu is None and not gpu:
        return "–"
    if not gpu:
        return f"{cpu:.0f} min{history(training)}"
    return f"{cpu or 0:.0f} CPU min{history(training)} + {gpu:.0f} GPU min"


def row(name: str, cfg: dict, m: dict) -> str:
    t = cfg.get("training", {})
    po = m.get("broad-test", {}).get("per_origin") or m.get("test", {}).get("per_origin", {})
    done = {"steps": t.get("total_steps_run", t.get("steps"))}  # every call's steps, not only the best's
    return (f"| {DISPLAY_NAMES.get(name, name)} | {cell(m, 'test', 'bleu')} | {cell(m, 'broad-test', 'bleu')} "
            f"| {cell(po, 'multi30k-test_2016_flickr', 'bleu')} | {cell(po, 'multi30k-test_2017_flickr', 'bleu')} "
            f"| {cell(po, 'tatoeba', 'bleu')} | {cell(m, 'newstest2014', 'bleu')} | {cell(m, 'stress', 'bleu')} "
            f"| {cell(m, 'alignment', 'aer', fmt='{:.3f}')} | {cell(m, 'alignment', 'as_given', 'aer', fmt='{:.3f}')} "
            f"| {cell(m, 'parameters', fmt='{:,}')} | `{Path(t.get('data', '–')).name}` "
            f"| {cell(done, 'steps', fmt='{:,}')} | {minutes(cfg)} "
            f"| {cell(t, 'best_dev_bleu')} |")


def decodings(all_metrics: list[dict]) -> str:
    """'Greedy' or 'Beam 5' when every set was decoded alike, else each set's own decodings."""
    word = {1: "greedy"}
    beams = {s: sorted({m[s]["beam"] for m in all_metrics if "beam" in m.get(s, {})}) for s in BLEU_SETS}
    used = {b for bs in beams.values() for b in bs} or {1}
    if len(used) == 1:
        (b,) = used
        return word.get(b, f"beam {b}").capitalize()
    return "; ".join(f"{s}: " + ", ".join(word.get(b, f"beam {b}") for b in bs) for s, bs in beams.items() if bs)


def main(root: Path = ROOT / "checkpoints") -> None:
    print(HEAD)
    print("|" + "|".join([" --- "] * (HEAD.count("|") - 1)) + "|")
    shipped = []
    for name in ZOO:
        folder = root / name
        if not (folder / "config.json").exists():
            print(f"| {DISPLAY_NAMES[name]} | not trained yet |" + " |" * (HEAD.count("|") - 3))
            continue
        m = read_metrics(folder) or {}
        shipped.append(m)
        print(row(name, json.loads((folder / "config.json").read_text()), m))
    sig = next((m["test"]["signature"] for m in shipped if m.get("test", {}).get("signature")), None)
    print(f"\n{decodings(shipped)}; cased sacreBLEU, signature `{sig}`; Tatoeba scored with all its references. "
          "AER: the Hansards gold tokens written back as ordinary text before force-decoding "
          "(`model.hansards`); *tokens as given*: force-decoded as the gold set spells them (`--as-given`).")


def copies(oversample: dict | None) -> str:
    """'tatoeba, multi30k-train ×3; 6 corpora ×2': a stage's oversampling, grouped by factor."""
    by_k: dict[int, list[str]] = {}
    for origin, k in (oversample or {}).items():
        by_k.setdefault(k, []).append(origin)
    return "; ".join((", ".join(o) if len(o) <= 2 else f"{len(o)} corpora") + f" ×{k}"
                     for k, o in sorted(by_k.items(), reverse=True)) or "–"


def stages(root: Path = ROOT / "checkpoints") -> None:
    """One row per model and training stage (config.json ``training.stages``): steps and epochs
    to the shipped weights, minutes the stage spent (on a GPU where its name says so; in bf16
    autocast where it says so), best dev BLEU."""
    print("| model | stage | learning rate | oversampled | steps / epochs to the best weights | minutes "
          "| best dev BLEU |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in ZOO:
        path = root / name / "config.json"
        if path.exists():
            for i, s in enumerate(training_stages(json.loads(path.read_text())), 1):
                bf16 = ", bf16" if s["train"].get("precision") == "bfloat16" else ""
                print(f"| `{name}` | {i}, {stage_kind(s)}{bf16} | {s['train'].get('lr', '–')} "
                      f"| {copies(s['train'].get('oversample'))} "
                      f"| {cell(s, 'steps', fmt='{:,}')} / {cell(s, 'epochs', fmt='{:.2f}')} "
                      f"| {cell({'m': stage_minutes(s)}, 'm', fmt='{:.0f}')} | {cell(s, 'best_dev_bleu')} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    show = stages if "--stages" in args else main
    rest = [a for a in args if a != "--stages"]
    show(Path(rest[0]) if rest else ROOT / "checkpoints")
