"""Models: one card per checkpoint folder, from what the folder says about itself.

``config.json`` gives the architecture and how the model was trained, ``metrics.json``
the evaluation (``python -m model.evaluate --write-metrics``, ``python -m model.align
--write-metrics``) and ``train_log.csv`` the training curves. A folder that cannot be
loaded gets a card too, with the reason.
"""
from pathlib import Path

import pandas as pd
import streamlit as st

from ui.figures import show_figure
from ui.widgets import plain
from ui.zoo_cache import zoo
from model.checkpoint import stage_kind, stage_minutes, TRAIN_LOG, training_minutes
from model.internals import memory_bridge, MemoryBridge
from viz.curves import training_curves_figure

st.title("Models")
st.caption("Every checkpoint the app found, with its architecture, training and scores. BLEU is cased "
           "sacreBLEU: on the `enfr` test split (Tatoeba and Multi30k), the broad test split (those and "
           "newstest2014), newstest2014 alone and the long-sentence stress set; AER scores attention against "
           "the Hansards gold word alignments (lower is better).")
entries = zoo()
OTHER_SETS = {"stress": "stress set", "newstest2014": "newstest2014 (the paper's test set)",
              "broad-test": "broad test split"}  # metrics.json keys (model.evaluate --set)


def get(d: dict | None, *keys, default=None):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


MISSING = "—"  # a figure the model's files do not hold (not evaluated, not recorded)


def fmt(x, digits: int = 2) -> str:
    return MISSING if x is None else f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def data_name(path: str | None) -> str | None:
    """The data set a model was trained on, by its folder's name (``enfr-broad``), not the path
    it had on the training machine (``../shared/data/enfr-broad``)."""
    return (Path(str(path)).name or str(path)) if path else None


def figures(table: pd.DataFrame, digits: dict[str, int] | None = None):
    """A table of figures as st.dataframe shows it: a missing one as MISSING, not "None";
    ``digits``: the decimals of a column. The numbers stay numbers (the columns sort as such)."""
    styler = table.style.format(na_rep=MISSING)
    for column, n in (digits or {}).items():
        styler = styler.format(f"{{:.{n}f}}", subset=[column], na_rep=MISSING)
    return styler


def stage_summary(stage: dict) -> str:
    """'2,400 steps, 95.0 min, lr 0.00025, dev BLEU 31.20; tatoeba ×3, …' for one training stage, and
    '; the mean of its last 4 evaluations' where its weights are averaged (scripts/average_checkpoints.py)."""
    copies = ", ".join(f"{o} ×{k}" for o, k in (stage.get("train", {}).get("oversample") or {}).items())
    averaged = len((stage.get("averaged") or {}).get("snapshots_at_steps") or [])
    return (f"{stage.get('steps', 0):,} steps, {fmt(stage_minutes(stage), 1)} min, lr {stage.get('train', {}).get('lr')}, "
            f"dev BLEU {fmt(stage.get('best_dev_bleu'))}" + (f"; {copies}" if copies else "")
            + (f"; the mean of its last {averaged} evaluations" if averaged > 1 else ""))


def minutes_columns(config: dict) -> dict:
    """The overview's training time: every stage's CPU and GPU minutes, apart (a GPU stage's
    minutes are not CPU minutes)."""
    cpu, gpu = training_minutes(config)
    return {"training, CPU (min)": cpu, "training, GPU (min)": gpu or None}


SCORES = {  # what each Luong score computes on the bridged annotations h̄_j = W_m h_j (model/attention.py)
    "dot": "dot scores e_ij = s_iᵀ h̄_j = s_iᵀ W_m h_j: a learned bilinear score, not a parameter-free one",
    "general": "general scores e_ij = s_iᵀ W_a h̄_j = s_iᵀ W_a W_m h_j: for the score the same function class as "
               "dot's s_iᵀ W_m h_j, with W_a's {extra:,} more parameters, which let the keys differ from the values",
    "concat": "concat scores e_ij = v_aᵀ tanh(W_a [s_i ; h̄_j] + b_a) ({extra:,} parameters): Bahdanau's additive "
              "score in form, with U_a's bias b_a, which neither paper writes",
}


def bridge_text(bridge: MemoryBridge) -> str:
    """The memory bridge of a Luong card, and what its score therefore computes."""
    return (f"**Memory bridge W_m**: h̄_j = W_m h_j, a learned {bridge.rows} × {bridge.cols} matrix "
            f"({bridge.parameters:,} parameters, no bias) that maps the {bridge.cols}-wide bidirectional annotations "
            f"to the decoder's {bridge.rows} and makes both the keys and the values. So "
            + SCORES[bridge.score].format(extra=bridge.score_parameters) + ".")


def tracking_text(tracking: dict) -> str:
    """Local-p's position tracking (``model.evaluate --positions``), each figure with what it measures."""
    where = (f"over {tracking.get('scored')} greedy translations of {tracking.get('set')} sources of "
             f"{'–'.join(map(str, tracking.get('pieces', [])))} pieces")
    if "spearman_align" not in tracking:  # metrics written before the alignment before the Gaussian was measured
        return (f"**Predicted position p_i against argmax_j α_ij**: mean Spearman ρ {fmt(tracking.get('spearman'), 3)} "
                f"{where}. Partly circular: α already holds the Gaussian centred on p_i and is zero outside the window.")
    share = tracking.get("window_share") or {}
    return (f"**Predicted position p_i against the alignment before the Gaussian** (argmax_j e_ij of the inner score): "
            f"mean Spearman ρ {fmt(tracking['spearman_align'], 3)}, against {fmt(tracking.get('chance_align'), 3)} with "
            f"p_i shuffled within each sentence (chance), {where}. Against argmax_j α_ij, the weights shown, ρ is "
            f"{fmt(tracking.get('spearman_weights'), 3)}, partly circular: α already holds the Gaussian centred on p_i "
            "and is zero outside the window. ρ = 1 would mean p_i rises and falls in the same order as the alignment's "
            "peak, not that the window sits on it." + (window_share_text(share) if "mean" in share else ""))


def window_share_text(share: dict) -> str:
    """How much of align's mass (softmax over the whole sentence) the window keeps: where all of
    it, the shipped form of local-p and Luong's eq. 10 (softmax over the window) coincide."""
    under = share.get("steps_under_0.9")
    return (f" The window keeps {100 * share['mean']:.1f}% of align's mass (softmax over the whole sentence) on "
            "average" + (f", under 90% on {100 * under:.1f}% of steps" if under is not None else "")
            + ": where it keeps all of it, the shipped form and Luong's eq. 10 (softmax over the window only) give "
            "the same context (the Step through page shows both for a step).")


def parameters(entry) -> int | None:
    return get(entry.metrics, "parameters") or (entry.model.num_parameters() if entry.available else None)


def made_elsewhere_facts(entry) -> dict:
    """A Hugging Face model's card: what its config and tokenizer say."""
    from model.hf import attention_layer_note, language_name
    cfg, hf = entry.model.cfg, entry.config.get("hf", {})
    return {"made by": f"Hugging Face transformers, {hf.get('model_type')} ({entry.spec})",
            "languages": f"{language_name(cfg.source_language)} → {language_name(cfg.target_language)}",
            "encoder": f"{cfg.encoder_layers} layers × {cfg.encoder_heads} heads",
            "decoder": f"{cfg.layers} layers × {cfg.heads} heads", "d_model": hf.get("d_model"),
            "vocabulary": f"{cfg.vocab_size:,} ids", "weights": hf.get("weights"), "folder": hf.get("folder"),
            "attention shown": attention_layer_note(cfg, entry.spec).replace("**", "")}


st.subheader("At a glance")
st.dataframe(figures(pd.DataFrame([{
    "model": e.display_name,
    "status": "available" if e.available else "unavailable",
    "parameters (M)": round(parameters(e) / 1e6, 2) if parameters(e) else None,
    "enfr test BLEU": get(e.metrics, "test", "bleu"),
    "broad test BLEU": get(e.metrics, "broad-test", "bleu"),
    "newstest2014 BLEU": get(e.metrics, "newstest2014", "bleu"),
    "stress BLEU": get(e.metrics, "stress", "bleu"),
    "AER": get(e.metrics, "alignment", "aer"),
    "AER, tokens as given": get(e.metrics, "alignment", "as_given", "aer"),
    "training data": data_name(get(e.config, "training", "data")),
    # every stage's minutes, CPU and GPU apart: a GPU minute trains about as much as an hour of one core
    **minutes_columns(e.config or {}),
} for e in entries.values()]), {"parameters (M)": 2, "enfr test BLEU": 2, "broad test BLEU": 2, "newstest2014 BLEU": 2,
                                 "stress BLEU": 2, "AER": 3, "AER, tokens as given": 3, "training, CPU (min)": 1,
                                 "training, GPU (min)": 1}), hide_index=True, width="stretch")

for name, entry in entries.items():
    with st.container(border=True):
        st.subheader(entry.display_name)
        if not entry.available:
            st.error(f"Unavailable: {entry.error}", icon=":material/error:")
            continue
        cfg, metrics = entry.config, entry.metrics
        if cfg.get("description"):
            st.markdown(plain(cfg["description"]))
        arch, train = cfg.get("model", {}), cfg.get("training", {})
        if entry.made_elsewhere:  # what its own config says (model/hf.py), and the layer the pages draw
            arch = made_elsewhere_facts(entry)
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("Parameters", f"{parameters(entry) / 1e6:.2f} M")
        c2.metric("BLEU, enfr test split", fmt(get(metrics, "test", "bleu")),
                  help=get(metrics, "test", "signature") or "not evaluated yet")
        c3.metric("Stress-set BLEU", fmt(get(metrics, "stress", "bleu")))
        c4.metric("AER (Hansards)", fmt(get(metrics, "alignment", "aer"), 3),
                  help="Alignment Error Rate of attention against gold links; lower is better"
                  if entry.has_attention else "RNNenc has no attention, so no alignment to score")

        bridge = memory_bridge(entry.model)
        if bridge:  # Luong: what W_m is, and so what the score computes
            st.markdown(bridge_text(bridge))
        tracking = get(metrics, "position_tracking")
        if tracking:  # local-p: does the window's centre p_i (Luong eq. 9) follow where the model attends?
            st.markdown(tracking_text(tracking))

        left, right = st.columns(2)
        with left:
            st.markdown("**Architecture**")
            st.dataframe(pd.DataFrame({"setting": list(arch), "value": [MISSING if v is None else str(v)
                                                                          for v in arch.values()]}),
                         hide_index=True, width="stretch", height="content")
        with right:
            st.markdown("**Training**")
            if entry.made_elsewhere:
                st.caption("Trained elsewhere: its own model card says on what. Scored here with our CLIs "
                           "(BLEU, AER) once its owner runs them.")
            else:
                cpu_minutes, gpu_minutes = training_minutes(cfg)
                facts = {
                    "data": data_name(train.get("data")),
                    "training pairs": train.get("train_pairs"),
                    "optimiser steps": train.get("steps"),
                    "epochs": train.get("epochs"),
                    "CPU minutes, all stages": cpu_minutes,
                    "GPU minutes, all stages": gpu_minutes or None,
                    "best dev BLEU": train.get("best_dev_bleu"),
                    "machine": train.get("machine"),
                }
                for i, stage in enumerate(train.get("stages", []), 1):  # scripts/promote_finetuned.py's record
                    facts[f"stage {i}: {stage_kind(stage)}"] = stage_summary(stage)
                init = train.get("initialised_from")
                if init:  # warm-started (model.train --init-from / train.init_from): say from what
                    facts["started from"] = f"{init.get('checkpoint')} (fresh: {', '.join(init.get('fresh', [])) or 'nothing'})"
                st.dataframe(pd.DataFrame({"": list(facts), "value": [fmt(v) for v in facts.values()]}),
                             hide_index=True, width="stretch", height="content",
                             column_config={"value": st.column_config.TextColumn(width="large")})

        checkpoint = f"hf:{entry.spec}" if entry.made_elsewhere else entry.folder
        if metrics is None:
            st.info(f"Not evaluated yet: `python -m model.evaluate --checkpoint {checkpoint} --data "
                    "../shared/data/enfr/test.tsv.gz --bootstrap 1000 --write-metrics` writes the scores, "
                    f"`python -m model.align --checkpoint {checkpoint} --gold ../shared/data/hansards-align "
                    "--write-metrics` the AER" + (" and chooses the layer the pages draw" if entry.made_elsewhere else "")
                    + ".", icon=":material/pending:")
        else:
            left, right = st.columns(2)
            with left:
                test = get(metrics, "test") or {}
                if test:
                    ci = test.get("bleu_ci95")
                    st.markdown(f"**BLEU per corpus** (test, {test.get('segments', '?')} segments"
                                + (f", overall 95% CI {ci[0]:.2f}–{ci[1]:.2f}" if ci else "") + ")")
                    per_origin = test.get("per_origin", {})
                    st.dataframe(figures(pd.DataFrame({"corpus": list(per_origin),
                                                       "BLEU": [r.get("bleu") for r in per_origin.values()],
                                                       "segments": [r.get("segments") for r in per_origin.values()]}),
                                         {"BLEU": 2, "segments": 0}), hide_index=True, width="stretch")
                    if test.get("signature"):
                        st.caption(f"sacreBLEU signature: `{test['signature']}`")
                others = {label: get(metrics, key) for key, label in OTHER_SETS.items() if get(metrics, key)}
                if others:  # the stress set, the paper's test set, the broad split corpus by corpus
                    rows = [(label, r.get("bleu"), r.get("segments"), r.get("beam")) for label, r in others.items()]
                    rows += [(f"broad test: {o}", v.get("bleu"), v.get("segments"), others["broad test split"].get("beam"))
                             for o, v in (others.get("broad test split") or {}).get("per_origin", {}).items()]
                    st.markdown("**BLEU on the other sets**")
                    st.dataframe(figures(pd.DataFrame(rows, columns=["set", "BLEU", "segments", "beam"]),
                                         {"BLEU": 2, "segments": 0, "beam": 0}),
                                 hide_index=True, width="stretch")
            with right:
                alignment = get(metrics, "alignment")
                if alignment:
                    st.markdown("**Alignment against Hansards gold links**")
                    keys = ("aer", "precision", "recall")
                    as_given = alignment.get("as_given") or {}
                    written = "written back" in alignment.get("tokens", "")  # older metrics scored tokens as given
                    table = {"": ["AER", "precision", "recall"],
                             "written text" if written else "tokens as given": [fmt(alignment.get(k), 3)
                                                                                for k in keys]}
                    if as_given:
                        table["tokens as given"] = [fmt(as_given.get(k), 3) for k in keys]
                    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")
                    if alignment.get("rule"):
                        st.caption(f"Links: {alignment['rule']}. *Written text*: the gold tokens written back as "
                                   "the ordinary text the model was trained on (`de le` → `du`, `Speaker ,` → "
                                   "`Speaker,`), scored on the gold tokens; *tokens as given*: force-decoded as "
                                   "the gold set spells them.")
                heads = get(metrics, "alignment_heads")
                if heads:  # a Transformer: every layer x head scored (python -m model.align)
                    rows = []
                    for reading, label in (("written", "written text"), ("as_given", "tokens as given")):
                        for which in ("best", "shown"):
                            r = (heads.get(reading) or {}).get(which)
                            if r:
                                rows.append((label, "best head" if which == "best" else "shown (layer mean)",
                                             f"layer {r['layer']}, head {r['head']}", fmt(r["aer"], 3)))
                    st.markdown("**Alignment per head**")
                    st.dataframe(pd.DataFrame(rows, columns=["tokens", "which", "layer × head", "AER"]),
                                 hide_index=True, width="stretch")
                    st.caption("Every layer × head and each layer's average scored alone; the app draws the "
                               "shown layer's heads averaged.")

        log_path = entry.folder / TRAIN_LOG
        if entry.made_elsewhere:
            pass  # trained elsewhere: no log of ours
        elif log_path.exists():
            try:
                log = pd.read_csv(log_path)
            except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as e:
                st.warning(f"`{log_path}` could not be read: {e}")
            else:
                if not log.empty:
                    show_figure(training_curves_figure(log, title=f"Training: {entry.display_name}"),
                                f"training-{name}", key=f"models_curves_{name}")
        else:
            st.caption("No training log (`train_log.csv`) in this folder.")


def knock_out_tables(result: dict, sample: str) -> None:
    """The knock-out test (``python -m model.faithfulness``): being the argmax, matched on what the removal
    leaves, with its coverage; the controls at every level with their intervals, the drops, the curve and
    what it shows, made from the numbers."""
    from model.faithfulness_report import (control_table, drop_table, findings, layer_table, level_name, levels_of,
                                           matched_table, pooled_curve)
    from viz.attribution import change_curve
    sampling = result["sample"]["sampling"]
    st.markdown(f"**{sample}: being the most-attended piece, matched on what the removal leaves** ({sampling}; "
                "word changes of the argmax removal minus those of a partner removal of the same "
                "sentence that takes about the same α and leaves about the same largest α and entropy; points, 95 % "
                "interval over sentences; coverage: the argmax removals that have a partner)")
    st.dataframe(pd.DataFrame(matched_table(result)), hide_index=True, width="stretch")
    levels = []
    for m in result["models"]:
        levels += [lv for lv in levels_of(m) if lv not in levels]
    level = st.radio("Level", levels, format_func=lambda lv: level_name(
        lv, next(m for m in result["models"] if lv in m)), horizontal=True, key=f"knock_out_level_{sample}")
    st.markdown("Word changes per control (percent, 95 % interval; in brackets the median weight removed, with its "
                f"interval): {level_name(level, next(m for m in result['models'] if level in m))}")
    st.dataframe(pd.DataFrame(control_table(result, level)), hide_index=True, width="stretch")
    st.dataframe(pd.DataFrame(drop_table(result)), hide_index=True, width="stretch")
    if layer_table(result):
        st.dataframe(pd.DataFrame(layer_table(result)), hide_index=True, width="stretch")
    show_figure(change_curve({"attention knock-out": pooled_curve(result["models"], "knock_out"),
                              "input occlusion": pooled_curve(result["models"], "input_occlusion")}),
                "change-by-alpha", key=f"models_change_curve_{sample}")
    st.caption("Every (step, source piece) removal of every model, binned by the weight removed (a Transformer's "
               "knock-out in all layers: the mean α over its layers and heads): the most-attended pieces (solid) "
               "against the others (dotted). The bins are wide and the pieces in one bin leave different "
               "distributions; the matched table above pairs removals alike in both.")
    st.markdown("\n".join(f"- {line}" for line in findings(result)))


def aer_tables(aer: pd.DataFrame, published: pd.DataFrame | None) -> None:
    from model.attribution import LABELS
    table = (aer.drop_duplicates(["model", "method", "sentences", "reading"], keep="last")
             .assign(column=lambda d: d["method"].map(lambda m: LABELS.get(m, m)) + " (" + d["sentences"].astype(str)
                     + " pairs)")
             .pivot(index="model", columns="column", values="aer"))
    st.dataframe(table.round(3).reset_index(), hide_index=True, width="stretch")
    st.caption("AER against the Hansards gold (lower is better; written-text reading): each French word linked to the "
               "English word that gets the most attention, or the largest share of an attribution: gradient × input, "
               "integrated gradients (20 points, zero-embedding baseline), attention knock-out (the position removed "
               "from the step's attention), input occlusion (one source piece's token embedding replaced by the "
               "zero vector, the encoder run again).")
    if published is not None:
        st.markdown("**Published AERs on the same gold set** (other systems, for scale)")
        st.dataframe(published.rename(columns={"aer": "AER"}), hide_index=True, width="stretch")
        best = table.min(axis=1)
        st.caption(f"Ours, the best method per model: {best.min():.3f}–{best.max():.3f} (the table above). "
                   "Not a like-for-like comparison: those are word aligners (or translation models trained to align) "
                   "trained on the Hansards or the benchmark's own parallel data, most symmetrized over both "
                   "directions and scored on all 447 pairs; ours are translation models trained on other data, read "
                   "in one direction (each French word to one English word), on the first 150 pairs. lilt's fast_align "
                   "and Mgiza train on the Hansards with the test sentences included, lowercased; Zenkel et al.'s and "
                   "Chen et al.'s alignments combine both directions; the table does not say how eflomal's are "
                   "symmetrized.")


def attribution_section() -> None:
    """Does the attention explain the translation? The knock-out test with its controls and the AER of
    attention beside the attribution methods (``python -m model.faithfulness``, ``model.align --method``),
    read from results/attribution/ (docs/attribution.md)."""
    import json
    from server import settings  # here, so this section stays one piece of the file
    folder = settings.results() / "attribution"
    st.subheader("Attention against attribution")
    try:
        result = json.loads((folder / "faithfulness.json").read_text(encoding="utf-8"))
        aer = pd.read_csv(folder / "aer.csv")
    except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        st.caption(f"No attribution results yet ({type(e).__name__}): `python -m model.faithfulness --out …` and "
                   "`python -m model.align --method …` write them (docs/attribution.md).")
        return
    knock_out_tables(result, "newstest2014")
    hansards = folder / "faithfulness_hansards.json"
    if hansards.exists():
        knock_out_tables(json.loads(hansards.read_text(encoding="utf-8")), "Hansards")
    try:
        published = pd.read_csv(folder / "published_aer.csv")
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError):
        published = None
    aer_tables(aer, published)


attribution_section()
