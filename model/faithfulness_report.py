"""The knock-out test's results in tables and sentences made from the numbers (model/faithfulness.py
writes the results, docs/attribution.md and the Models page print these; a test checks that the doc
holds them as the shipped results make them). Every figure comes with its 95 % interval or is a
range of figures whose intervals stand in the tables; a matched figure comes with its coverage.
"""
from __future__ import annotations

import re

from .faithfulness_stats import CORRECTED, MIN_PAIRS

NAMES = {"most": "most-attended", "second": "second-most attended", "second_apart": "second, not adjacent",
         "proportional": "drawn ∝ α", "threshold": "drawn among α ≥ {threshold}", "uniform": "uniform"}
LEVEL_NAMES = {"knock_out": "attention knock-out", "input_occlusion": "input, zero vector",
               "input_random": "input, random piece"}
KNOCK_OUTS = ("knock_out", "knock_out_layer0", "knock_out_layer1", "knock_out_layer2", "knock_out_layer3",
              "knock_out_layer4", "knock_out_layer5")


def level_name(level: str, m: dict | None = None) -> str:
    """A level's name in the tables; a Transformer's knock-outs say which layers they remove the piece from."""
    layers = (m or {}).get("layers")
    if level.startswith("knock_out_layer"):
        n = int(level[len("knock_out_layer"):])
        shown = layers and layers[n].get("shown")
        return f"knock-out in layer {n} alone" + (" (the shown layer)" if shown else "")
    if level == "knock_out" and layers:
        return f"knock-out in all {len(layers)} layers at once (α: mean of every head)"
    return LEVEL_NAMES[level]


def levels_of(m: dict) -> list[str]:
    return [k for k in m if isinstance(m[k], dict) and "controls" in m[k]]


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


def est(row: dict, key: str, scale: float = 100, digits: int = 1) -> str:
    return with_ci(row.get(key), row.get(f"{key}_ci"), scale, digits)


def span(values: list[float], scale: float = 100, digits: int = 0, unit: str = " %") -> str:
    """The range over the models: 45–63 % (scale 1, no unit: 0.47–0.92)."""
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    low, high = (num(scale * v, digits) for v in (min(values), max(values)))
    dash = " to " if low.startswith("-") or high.startswith("-") else "–"
    return f"{low}{unit}" if low == high else f"{low}{dash}{high}{unit}"


def markdown(rows: list[dict]) -> str:
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    return "\n".join(lines + ["| " + " | ".join(str(r[k]) for k in head) + " |" for r in rows])


def not_estimable(x: dict) -> str:
    return f"not estimable ({x['pairs']} pairs < {MIN_PAIRS})"


def matched_table(result: dict) -> list[dict]:
    """Per model and level: the coverage, being the argmax against its matched partner (points), the
    balance of the pairs, and the argmax removals left unmatched."""
    rows = []
    for m in result["models"]:
        for level in levels_of(m):
            x = m[level]["matched"]
            row = {"model": m["model"], "level": level_name(level, m),
                   "coverage (pairs / argmax removals)": f"{est(x, 'coverage', digits=0)} % "
                                                          f"({x['pairs']:,} / {x['argmax_removals']:,})"}
            if x["estimable"]:
                row["argmax − partner, word changes (points)"] = est(x, "effect")
                if x.get("effect_ci_corrected"):
                    lo, hi = x["effect_ci_corrected"]
                    row["argmax − partner, word changes (points)"] += \
                        f"; {100 * CORRECTED:.1f} %: [{num(100 * lo, 1)}, {num(100 * hi, 1)}]"
                row["argmax / partner changed (%)"] = f"{est(x, 'changed_most')} / {est(x, 'changed_partner')}"
            else:
                row["argmax − partner, word changes (points)"] = not_estimable(x)
                row["argmax / partner changed (%)"] = "–"
            row["unmatched: changed (median α)"] = (f"{est(x, 'unmatched_changed')} % "
                                                    f"({est(x, 'unmatched_alpha_median', 1, 2)})")
            rows.append(row)
    return rows


def balance_table(result: dict) -> list[dict]:
    """Per model and level with a matched effect: how alike the pairs are, argmax against partner (means)."""
    rows = []
    for m in result["models"]:
        for level in levels_of(m):
            x = m[level]["matched"]
            if not x["estimable"] or level.startswith("input"):
                continue  # the input levels share the shown α's pairs with the knock-out (RNNs) or a layer's
            rows.append({"model": m["model"], "level": level_name(level, m),
                         **{label: f"{est(x, f'{key}_most', 1, 2)} / {est(x, f'{key}_partner', 1, 2)}"
                            for key, label in (("alpha", "α removed"), ("largest", "largest α left"),
                                               ("entropy", "entropy left (nats)"))}})
    return rows


def placement_table(result: dict, level: str = "knock_out") -> list[dict]:
    """Per model: where the controls lie, and the argmax against a piece of α ≥ threshold on the steps that have one."""
    rows = []
    for m in result["models"]:
        p, same = m[level]["placement"], m[level]["paired"]["threshold"]
        rows.append({"model": m["model"], "second-most is the argmax's neighbour (%)": est(p, "second_adjacent"),
                     f"steps with a piece of α ≥ {result['threshold']} besides the argmax (%)":
                         est(p, "threshold_available"),
                     "on those steps, argmax / that piece change the word (%)":
                         f"{est(same, 'most')} / {est(same, 'control')}"})
    return rows


def control_table(result: dict, level: str) -> list[dict]:
    """Per model: the word-change rate of each control (percent) and the median weight it removes, each with its interval."""
    rows = []
    for m in result["models"]:
        if level not in m:
            continue
        c = m[level]["controls"]
        row = {"model": m["model"], "steps": m["steps"]}
        for key, label in NAMES.items():
            label = label.format(threshold=result["threshold"])
            row[label] = "–" if c[key]["changed"] is None else \
                f"{est(c[key], 'changed')} (α {est(c[key], 'median_alpha', 1, 2)})"
        rows.append(row)
    return rows


def drop_table(result: dict, level: str = "knock_out") -> list[dict]:
    """Per model and control: mean and median drop in log p(y_i), the share of steps where log p rises
    and the share of the positive drop held by the top 5 % of steps, each with its interval."""
    rows = []
    for m in result["models"]:
        for key in ("most", "second", "proportional", "threshold"):
            c = m[level]["controls"][key]
            rows.append({"model": m["model"], "piece": NAMES[key].format(threshold=result["threshold"]),
                         "mean drop": est(c, "drop", 1, 3), "median drop": est(c, "drop_median", 1, 3),
                         "log p rises (%)": est(c, "rises"), "top 5 % of steps hold (%)": est(c, "top5_share", 100, 0)})
    return rows


def layer_table(result: dict) -> list[dict]:
    """A Transformer's layers: the median α of each layer at the shown argmax piece, and how often the
    layer's own argmax is the shown layer's."""
    rows = []
    for m in result["models"]:
        for r in m.get("layers") or []:
            rows.append({"model": m["model"], "layer": f"{r['layer']}{' (shown)' if r['shown'] else ''}",
                         "median α at the shown argmax": est(r, "median_alpha_at_shown_argmax", 1, 2),
                         "own argmax = the shown argmax (%)": "– (the shown layer itself)" if r["shown"]
                         else est(r, "argmax_agrees")})
    return rows


def effect_words(x: dict) -> str:
    """+5.6 points [0.0, 9.3], whether its interval excludes 0, on what coverage."""
    if not x["estimable"]:
        return f"{not_estimable(x)}, coverage {pct(x['coverage'], 0)}"
    lo, hi = x["effect_ci"]
    sign = "excludes 0" if lo > 0 or hi < 0 else "includes 0"
    return (f"{100 * x['effect']:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}], {sign}, on "
            f"{pct(x['coverage'], 0)} of the argmax removals ({x['pairs']:,})")


def values(models: list[dict], level: str, control: str, key: str) -> list:
    return [m[level]["controls"][control][key] for m in models if level in m]


def findings(result: dict) -> list[str]:
    """What the numbers say, in sentences made from them (ranges over the models; each model's figure
    with its interval is in the tables)."""
    models = result["models"]
    ko = "knock_out"
    covered = [m[ko]["matched"]["coverage"] for m in models]
    lines = [f"Matched on what the removal leaves (α removed within {result['calipers']['alpha']}, largest α left "
             f"within {result['calipers']['largest_left']}, entropy left within {result['calipers']['entropy_left']} "
             f"nats), {span(covered)} of the argmax knock-outs find a partner in their sentence; on those, the "
             f"argmax's change rate minus its partner's: "
             + "; ".join(f"{m['model']} {effect_words(m[ko]['matched'])}" for m in models)
             + f". The argmax removals left unmatched (median α removed "
               f"{span([m[ko]['matched']['unmatched_alpha_median'] for m in models], 1, 2, '')}) change the word at "
               f"{span([m[ko]['matched']['unmatched_changed'] for m in models])}; no removal of another piece in "
               f"their sentence takes and leaves about as much, so there the test has no comparison."]
    lines.append(f"Unmatched, removing the most-attended piece from the step's attention changes the word at "
                 f"{span(values(models, ko, 'most', 'changed'))} of the steps (median α removed "
                 f"{span(values(models, ko, 'most', 'median_alpha'), 1, 2, '')}); the second-most attended "
                 f"piece {span(values(models, ko, 'second', 'changed'))} (median α "
                 f"{span(values(models, ko, 'second', 'median_alpha'), 1, 2, '')}), a piece drawn in proportion to α "
                 f"{span(values(models, ko, 'proportional', 'changed'))}, a uniform draw "
                 f"{span(values(models, ko, 'uniform', 'changed'))}: the controls remove less weight, so these "
                 f"rates do not compare like with like.")
    adjacent = [m[ko]["placement"]["second_adjacent"] for m in models]
    same = [m[ko]["paired"]["threshold"] for m in models]
    lines.append(f"The second-most attended piece is the argmax's neighbour on {span(adjacent)} of the steps; the "
                 f"most attended piece at least two positions away changes the word at "
                 f"{span(values(models, ko, 'second_apart', 'changed'))}. On the steps with a piece of "
                 f"α ≥ {result['threshold']} besides the argmax, the argmax changes the word at "
                 f"{span([p['most'] for p in same])} and that piece at {span([p['control'] for p in same])}.")
    controls = ("second", "proportional", "threshold")
    lines.append(f"The mean drop in log p(y_i) is not the typical one: for the three weighted controls the median "
                 f"drop is {span([v for c in controls for v in values(models, ko, c, 'drop_median')], 1, 3, '')} and "
                 f"log p(y_i) rises on {span([v for c in controls for v in values(models, ko, c, 'rises')])} of the "
                 f"steps; for the most-attended piece the median drop is "
                 f"{span(values(models, ko, 'most', 'drop_median'), 1, 2, '')}. A rise is possible because "
                 "a knock-out renormalises the row: the weight of the piece removed goes to the other pieces in "
                 "proportion, most of it to the argmax, so removing a piece of small α can raise log p(y_i).")
    for m in models:
        layers = [lv for lv in levels_of(m) if lv.startswith("knock_out_layer")]
        if layers:
            lines.append(f"{m['model']}, one layer at a time (argmax and α of that layer's head average): "
                         + "; ".join(f"{level_name(lv, m)} {effect_words(m[lv]['matched'])}" for lv in layers)
                         + f"; all layers at once (argmax and α of the mean over every head) "
                           f"{effect_words(m[ko]['matched'])}.")
    for level, how in (("input_occlusion", "the zero vector"), ("input_random", "a random piece's embedding")):
        lines.append(f"Replacing one piece's token embedding by {how} (the encoder run again) changes the word at "
                     f"{span(values(models, level, 'most', 'changed'))} of the steps for the most-attended piece and "
                     f"{span(values(models, level, 'uniform', 'changed'))} for a uniform draw; matched on the shown "
                     f"α: " + "; ".join(f"{m['model']} {effect_words(m[level]['matched'])}" for m in models) + ".")
    return lines


def intervals_note(text: str, resamples: int) -> str:
    """How many intervals a report holds and how to read them (declared exploratory)."""
    n = len(re.findall(r"\[-?\d", text))
    effects = text.count(f"{100 * CORRECTED:.1f} %: [")
    note = (f"*How to read the intervals.* This section holds {n} intervals, 95 % each ({resamples:,} bootstrap "
            f"resamples of the sentences, the controls drawn again in every resample), none corrected for multiple "
            f"comparisons: the analysis is exploratory, and where nothing differs about {max(1, round(n / 20))} of "
            f"them would exclude the value compared by chance.")
    if effects:
        note += (f" The {effects} matched knock-out effects (every model's, every Transformer layer's: the headline "
                 f"family) also carry a {100 * CORRECTED:.1f} % interval, Bonferroni-corrected for up to "
                 f"{round((1 - 0.95) / (1 - CORRECTED))} such effects; its ends rest on the "
                 f"{resamples * (1 - CORRECTED) / 2:.1f} most extreme resamples at each end.")
    return note


def section(result: dict) -> str:
    """The doc's section for one results file: the tables and the findings, in Markdown."""
    s = result["sample"]
    parts = [f"Sample: {s['sampling']}; seed {s['seed']}; {result['models'][0]['sentences']} sentences translated "
             f"(greedy). A matched figure needs {MIN_PAIRS} pairs or more, else it reads \"not estimable\".",
             "**Being the argmax, matched on what the removal leaves** (word changes, argmax minus partner, in "
             "points, 95 % interval; coverage: the argmax removals with a partner)", markdown(matched_table(result)),
             "**Word changes per control** (percent, 95 % interval; in brackets the median weight removed, "
             "with its interval)"]
    levels = []
    for m in result["models"]:
        levels += [lv for lv in levels_of(m) if lv not in levels]
    for level in levels:
        parts += [f"*{level_name(level, next(m for m in result['models'] if level in m))}*",
                  markdown(control_table(result, level))]
    if balance_table(result):
        parts += ["**How alike the matched pairs are** (means, argmax / partner, 95 % intervals)",
                  markdown(balance_table(result))]
    parts += ["**Where the controls lie, attention knock-out** (95 % intervals)", markdown(placement_table(result)),
              "**The drop in log p(y_i), attention knock-out** (mean and median with 95 % intervals)",
              markdown(drop_table(result))]
    if layer_table(result):
        parts += ["**The Transformer's layers** (head averages, 95 % intervals)", markdown(layer_table(result))]
    parts.append("\n".join(f"- {line}" for line in findings(result)))
    body = "\n\n".join(parts)
    return body + "\n\n" + intervals_note(body, result["resamples"])


def difference(a: dict, b: dict, key: str) -> tuple[float, float, float] | None:
    """The difference of two independent estimates and its 95 % interval, from each one's interval read as
    ±1.96 standard errors (a normal approximation)."""
    if a.get(key) is None or b.get(key) is None or not a.get(f"{key}_ci") or not b.get(f"{key}_ci"):
        return None
    se = [(x[f"{key}_ci"][1] - x[f"{key}_ci"][0]) / 3.92 for x in (a, b)]
    d = a[key] - b[key]
    half = 1.96 * (se[0] ** 2 + se[1] ** 2) ** 0.5
    return d, d - half, d + half


def verdict(a: dict, b: dict, key: str, effect: bool, scale: float = 100, digits: int = 1) -> str:
    """Whether a finding holds on both corpora, and whether they differ by more than their intervals."""
    if effect and not (a["estimable"] and b["estimable"]):
        return "not estimable on " + ("both" if not (a["estimable"] or b["estimable"]) else "one")
    words = []
    if effect:
        signs = [0 if x["effect_ci"][0] <= 0 <= x["effect_ci"][1] else (1 if x["effect"] > 0 else -1) for x in (a, b)]
        words.append("includes 0 on both" if signs == [0, 0] else
                     ("excludes 0 on both, " + ("> 0" if signs[0] > 0 else "< 0")) if signs[0] == signs[1]
                     else "excludes 0 on one only" if 0 in signs else "opposite signs")
    d = difference(a, b, key)
    if d is not None:
        differs = d[1] > 0 or d[2] < 0
        words.append(f"corpora differ by {num(scale * d[0], digits)} [{num(scale * d[1], digits)}, "
                     f"{num(scale * d[2], digits)}]"
                     if differs else "no difference beyond the intervals")
    return "; ".join(words)


def replication_rows(news: dict, hansards: dict) -> list[dict]:
    """newstest2014 beside the Hansards: per model the matched knock-out effect (and per Transformer layer),
    the argmax's and the second's change rates, the argmax's median drop and the matched input effects."""
    rows = []
    other = {m["model"]: m for m in hansards["models"]}
    for m in news["models"]:
        h = other.get(m["model"])
        if h is None:
            continue
        for level in levels_of(m):
            if level not in h:
                continue
            a, b = m[level]["matched"], h[level]["matched"]
            rows.append({"model": m["model"], "finding": f"matched effect (points), {level_name(level, m)}",
                         "newstest2014": f"{est(a, 'effect') if a['estimable'] else not_estimable(a)}; "
                                         f"coverage {pct(a['coverage'], 0)}",
                         "Hansards": f"{est(b, 'effect') if b['estimable'] else not_estimable(b)}; "
                                     f"coverage {pct(b['coverage'], 0)}",
                         "on both": verdict(a, b, "effect", True)})
        for control, key, label, scale, digits in (("most", "changed", "argmax changes the word (%)", 100, 1),
                                                   ("second", "changed", "second-most changes the word (%)", 100, 1),
                                                   ("most", "drop_median", "argmax median drop (nats)", 1, 2)):
            a, b = m["knock_out"]["controls"][control], h["knock_out"]["controls"][control]
            v = verdict(a, b, key, False, scale, digits)
            rows.append({"model": m["model"], "finding": f"{label}, attention knock-out",
                         "newstest2014": est(a, key, scale, digits), "Hansards": est(b, key, scale, digits),
                         "on both": v})
    return rows


def replication(news: dict, hansards: dict) -> str:
    """The replication table and the findings that hold on both corpora."""
    rows = replication_rows(news, hansards)
    both = [f"{r['model']}: {r['finding'].replace('matched effect (points), ', '')}" for r in rows
            if r["on both"].startswith("excludes 0 on both")]
    none = [f"{r['model']}: {r['finding'].replace('matched effect (points), ', '')}" for r in rows
            if r["on both"].startswith("includes 0 on both")]
    differ = [f"{r['model']}: {r['finding']}" for r in rows if "corpora differ" in r["on both"]]
    apart = []  # the unmatched contrast: the argmax's change rate above the second's, intervals apart, on both
    other = {m["model"]: m for m in hansards["models"]}
    for m in news["models"]:
        if m["model"] in other and all(
                x["knock_out"]["controls"]["most"]["changed_ci"][0] > x["knock_out"]["controls"]["second"]["changed_ci"][1]
                for x in (m, other[m["model"]])):
            apart.append(m["model"])
    lines = [f"- Unmatched, removing the argmax changes the word more often than removing the second-most attended "
             f"piece, the two intervals apart, on both corpora: {', '.join(apart) or 'no model'} (a contrast of "
             f"pieces of different weight, not of attention against weight).",
             f"- A matched effect that excludes 0 on both corpora, the same sign: {'; '.join(both) or 'none'}.",
             f"- Including 0 on both (no effect shown on either, on the coverage given): {'; '.join(none) or 'none'}.",
             f"- Where the corpora differ by more than their intervals (the difference's 95 % interval, from the "
             f"two intervals read as normal): {'; '.join(differ) or 'nowhere'}."]
    body = ("**Replication: newstest2014 beside the Hansards** (two random samples; 95 % intervals)\n\n"
            + markdown(rows) + "\n\n" + "\n".join(lines))
    return body + "\n\n" + intervals_note(body, news["resamples"])


def report(*results: dict) -> str:
    """One results file: its section; two (newstest2014, then the Hansards): the replication table."""
    if len(results) == 2:
        return replication(*results)
    return section(results[0])


def pooled_curve(models: list[dict], level: str) -> list[dict]:
    """The change curve of every model pooled: per α bin, pairs and change rate, most-attended and others."""
    rows = []
    for bins in zip(*[m[level]["curve"] for m in models if level in m]):
        row = {"alpha_from": bins[0]["alpha_from"], "alpha_to": bins[0]["alpha_to"]}
        for label in ("most", "others"):
            n = sum(x[f"pairs_{label}"] for x in bins)
            changed = sum(x[f"pairs_{label}"] * (x[f"changed_{label}"] or 0.0) for x in bins)
            row[f"pairs_{label}"], row[f"changed_{label}"] = n, (changed / n if n else None)
        rows.append(row)
    return rows


def summary_line(r: dict) -> str:
    """One model's result in a few lines, for the terminal."""
    lines = [f"{r['model']} ({r['sentences']} sentences, {r['steps']} steps, {r.get('seconds', '?')} s)"]
    for level in levels_of(r):
        c = r[level]["controls"]
        lines.append(f"  {level}: most {pct(c['most']['changed'])}, second {pct(c['second']['changed'])}, uniform "
                     f"{pct(c['uniform']['changed'])}; matched: {effect_words(r[level]['matched'])}")
    return "\n".join(lines)
