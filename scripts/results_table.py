"""Print the README's results table from the shipped checkpoints' metrics.json and config.json,
or, with --runs, its status table of the broad zoo's training runs (runs/NAME-8k).

    python scripts/results_table.py [--runs]

Every number comes from a file written by model.train / model.evaluate / model.align.
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from model.checkpoint import read_metrics  # noqa: E402
from model.zoo import DISPLAY_NAMES, ZOO  # noqa: E402


def cell(d, *keys, fmt="{:.1f}"):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return "–"
        d = d[k]
    return fmt.format(d) if isinstance(d, (int, float)) else str(d)


def decoding(metrics: dict, set_name: str) -> str:
    """' (greedy)' where a set was decoded otherwise than the table's beam."""
    beam = metrics.get(set_name, {}).get("beam")
    test_beam = metrics.get("test", {}).get("beam")
    return "" if beam is None or beam == test_beam else (" (greedy)" if beam == 1 else f" (beam {beam})")


def warm_start(training: dict) -> str:
    """' after NAME' for a model warm-started from another (config.json training.initialised_from)."""
    init = training.get("initialised_from")
    return f" after `{Path(init['checkpoint']).name}`" if init else ""


def main():
    head = ("| model | test BLEU | Multi30k 2016 | Multi30k 2017 | Tatoeba | stress BLEU | newstest2014 | AER (Hansards) "
            "| AER, tokens as given | perplexity | params | training data | training (CPU) | epochs | best dev BLEU |")
    print(head)
    print("|" + "|".join([" --- "] * (head.count("|") - 1)) + "|")
    beam = None
    for name in ZOO:
        folder = ROOT / "checkpoints" / name
        if not (folder / "config.json").exists():
            print(f"| {DISPLAY_NAMES[name]} | not trained yet |" + " |" * (head.count("|") - 3))
            continue
        cfg = json.loads((folder / "config.json").read_text())
        m = read_metrics(folder) or {}
        t = cfg.get("training", {})
        po = m.get("test", {}).get("per_origin", {})
        beam = m.get("test", {}).get("beam", beam)
        print(f"| {DISPLAY_NAMES[name]} | {cell(m, 'test', 'bleu')} "
              f"| {cell(po, 'multi30k-test_2016_flickr', 'bleu')} | {cell(po, 'multi30k-test_2017_flickr', 'bleu')} "
              f"| {cell(po, 'tatoeba', 'bleu')} | {cell(m, 'stress', 'bleu')} "
              f"| {cell(m, 'newstest2014', 'bleu')}{decoding(m, 'newstest2014')} "
              f"| {cell(m, 'alignment', 'aer', fmt='{:.3f}')} | {cell(m, 'alignment', 'as_given', 'aer', fmt='{:.3f}')} "
              f"| {cell(m, 'test', 'perplexity', fmt='{:.2f}')} "
              f"| {cell(m, 'parameters', fmt='{:,}')} | `{Path(t.get('data', '–')).name}` "
              f"| {t.get('total_minutes_run', t.get('wall_time_minutes', '–'))} min"
              f"{warm_start(t)} "
              f"| {t.get('epochs', '–')} | {cell(t, 'best_dev_bleu')} |")
    sig = None
    for name in ZOO:
        p = ROOT / "checkpoints" / name / "metrics.json"
        if p.exists():
            sig = json.loads(p.read_text()).get("test", {}).get("signature")
            if sig:
                break
    print(f"\nBeam {beam}; cased sacreBLEU, signature `{sig}`; Tatoeba scored with all its references. "
          "AER: the Hansards gold tokens written back as ordinary text before force-decoding "
          "(`model.hansards`); *tokens as given*: force-decoded as the gold set spells them (`--as-given`).")


def scored(metrics: dict, set_name: str) -> str:
    """'14.3 (greedy) at step 9,143': a run is scored at its own step, greedy or with a beam."""
    s = metrics.get(set_name, {})
    if not s.get("steps"):
        return "–"
    decoding = "greedy" if s.get("beam") == 1 else f"beam {s.get('beam')}"
    return f"{s['bleu']:.1f} ({decoding}) at step {s['steps']:,}"


def runs_table(root: Path = ROOT / "runs") -> None:
    """Where each broad-zoo run stands: the training facts of its config.json, and the
    newstest2014 and `enfr` test scores and the AER that `model.evaluate` / `model.align
    --write-metrics` last stored, each at the step of the weights it scored."""
    print("| run | steps | minutes | best dev BLEU | newstest2014 | `enfr` test | AER / as given |")
    print("| --- | --- | --- | --- | --- | --- | --- |")

    for name in ZOO:
        folder = root / f"{name}-8k"
        if not (folder / "config.json").exists():
            print(f"| `runs/{name}-8k` | not started | | | | | |")
            continue
        t = json.loads((folder / "config.json").read_text()).get("training", {})
        m = read_metrics(folder) or {}
        minutes = t.get("total_minutes_run", t.get("wall_time_minutes", 0))  # the first while it trains
        print(f"| `runs/{name}-8k` | {t.get('total_steps_run', t.get('steps', 0)):,} "
              f"| {minutes:.0f} | {cell(t, 'best_dev_bleu')} "
              f"| {scored(m, 'newstest2014')} | {scored(m, 'test')} | {cell(m, 'alignment', 'aer', fmt='{:.3f}')} / "
              f"{cell(m, 'alignment', 'as_given', 'aer', fmt='{:.3f}')} |")


if __name__ == "__main__":
    runs_table() if "--runs" in sys.argv[1:] else main()
