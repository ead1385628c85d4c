"""Attention or attribution? The attention heatmap beside attribution heatmaps (what each source
piece did to log p(y_i), ``model/attribution.py``), where they agree and where not, and an
edit of the attention that the model decodes again with (``model/intervention.py``).

Only what is shown is computed: each method when it is picked, once per (model, sentence) for
the whole server; integrated gradients only for sentences short enough to stay within seconds.
"""
import numpy as np
import pandas as pd
import streamlit as st

from ui.figures import show_figure
from ui.widgets import plain, sentence_input, within_bound
from ui.zoo_cache import checkpoints_root, COSTLY_KEPT, pick_model, shared_decoding, STEPS_KEPT, target_language, zoo
from ui.teaching_pages import cached_greedy, keep_in_url, source_or_stop
from model.attribution import (attribute_record, BASELINE, BUDGET, IG_STEP_SCHEDULE, IG_TARGET_GAP, IG_WORK,
                               INPUT_BASELINE, LABELS, rank_correlation)
from model.intervention import Edit, redecode
from model.search import prepare_source
from server.costs import attribution_bound, attribution_cost
from viz.attribution import logprob_change, row_correlations, side_by_side
from viz.heatmap import alignment_heatmap

AGREE = 0.05  # a step "agrees" when the attended piece's share is this close to the largest share
METHOD_HELP = {
    "knock-out": "remove source position j from step i's attention (α_ij = 0) and measure the drop in log p(y_i); "
                 "the row is renormalised, so the weight removed moves onto the other pieces in proportion, most of "
                 "it to the argmax: the score is what the step loses when its weight at j is handed to the rest, "
                 "not what j alone contributes (the encoder still saw the word; the score follows α by construction)",
    "input-occlusion": "replace one source piece's token embedding by the zero vector (a word of several pieces keeps "
                       f"its other pieces) and measure the drop in log p(y_i); baseline: {INPUT_BASELINE}",
    "gxi": "gradient × input: Σ_d x_jd ∂log p(y_i)/∂x_jd over piece j's embedding",
    "ig": f"integrated gradients from the baseline x' = {BASELINE}, with {', then '.join(map(str, IG_STEP_SCHEDULE))} "
          f"points until the completeness gap is at most {IG_TARGET_GAP:.0%}",
}


def size_factor(entry) -> float:
    """A model over the zoo's size (~15 M parameters) costs more per copy of the sentence."""
    return max(1.0, entry.model.num_parameters() / 15e6)


def _greedy_record(model_name: str, text: str, *_):
    return cached_greedy(model_name, text)


def _attribution_lane(record, model_name: str, text: str, method: str):
    """An attribution's estimate (``server/costs.py``, from the greedy record's lengths) and its key."""
    cost = attribution_cost(len(record.source_tokens), len(record.target_tokens), method, IG_STEP_SCHEDULE[-1])
    return cost, ("attribution", checkpoints_root(), model_name, text, method)


@shared_decoding(COSTLY_KEPT, needs=_greedy_record, lane=_attribution_lane)
def cached_attribution(root: str, model_name: str, text: str, method: str, *, needed, check):
    """One attribution method on the greedy record (``model.attribution.attribute_record``), in the
    costly lane when its estimate asks for it (server/lanes.py). Integrated gradients: as many
    points as completeness needs, within the work budget; ``check`` between passes (the tab's
    newer request, the costly lane's pause and seconds)."""
    entry = zoo(root)[model_name]
    return attribute_record(entry.model, entry.vocab, needed, method, steps=None,
                            work=int(IG_WORK / size_factor(entry)), check=check)


@shared_decoding(STEPS_KEPT, needs=_greedy_record)
def cached_redecoded(root: str, model_name: str, text: str, step: int, position: int, weight: float | None, *,
                     needed, check):
    """The greedy record decoded again from ``step`` with its attention edited (``model/intervention.py``)."""
    entry = zoo(root)[model_name]
    return redecode(entry.model, entry.vocab, prepare_source(entry.vocab, text), needed,
                    Edit.of(needed, step, position, weight))


def pick_methods(record, entry) -> list[str]:
    """The attribution methods to compute and show; the gradient methods only within their budget,
    counted in T x (T + S) for a model of the zoo's size (~15 M parameters) and more for a larger one."""
    T, S = len(record.target_tokens), len(record.source_tokens)
    cost = int(T * (T + S) * size_factor(entry))
    options = ["knock-out", "input-occlusion", "gxi", "ig"]
    chosen = st.pills("Attribution methods", options, selection_mode="multi", default=["knock-out", "gxi"],
                      format_func=LABELS.get, key="attribution_methods",
                      help="Each is computed when picked. " + "; ".join(f"**{LABELS[m]}**: {METHOD_HELP[m]}"
                                                                        for m in options))
    shown = []
    for method in chosen or []:
        if cost > BUDGET.get(method, cost):
            st.info(f"{LABELS[method].capitalize()} is offered for shorter sentences here (this one has {S} source "
                    f"pieces and {T} target tokens; its cost grows with T × (T + S) and the model's size: {cost}, limit "
                    f"{BUDGET[method]}). `python -m model.align --method {method}` runs it on any.",
                    icon=":material/timer:")
        else:
            shown.append(method)
    return shown


def disagreement_text(record, name: str, relevance: np.ndarray, scores: np.ndarray, share) -> list[str]:
    """The three target tokens where attention's favourite source piece gets the least of the
    method's share, in words."""
    src, trg, alpha = record.source_tokens, record.target_tokens, record.weights
    attended = alpha.argmax(1)
    gap = relevance.max(1) - relevance[np.arange(len(trg)), attended]
    lines = []
    for i in np.argsort(-gap)[:3]:
        if gap[i] <= AGREE:
            break
        j, k = attended[i], relevance[i].argmax()
        effect = "raises" if scores[i, k] > 0 else "lowers"
        line = (f"**{plain(trg[i])}** (step {i + 1}): the attention is mostly on *{plain(src[j])}* "
                f"(α = {alpha[i, j]:.2f}), but by {name} *{plain(src[k])}* has the largest |a_ij| "
                f"({relevance[i, k]:.0%} of the step's |attribution|, against {relevance[i, j]:.0%} for "
                f"*{plain(src[j])}*; by this method it {effect} log p(y_i)")
        if name == LABELS["knock-out"]:
            line += f"; knocking *{plain(src[j])}* out of the attention moves log p by {-scores[i, j]:+.2f}"
        elif name == LABELS["input-occlusion"]:
            line += f"; replacing the piece *{plain(src[j])}*'s embedding by zero moves log p by {-scores[i, j]:+.2f}"
        if share is not None:
            line += f"; the step draws {share[i]:.0%} of its attribution from the source, the rest from the " \
                    "French written so far"
        lines.append(line + ").")
    return lines


def compare_section(name: str, entry, text: str, record) -> None:
    st.subheader("Attention beside attribution")
    methods = pick_methods(record, entry)
    results = {}
    for m in methods:
        results[m] = cached_attribution(name, text, m)
    matrices = {"attention α": record.weights, **{LABELS[m]: a.relevance for m, a in results.items()}}
    show_figure(side_by_side(matrices, record.source_tokens, record.target_tokens, target_language(entry)),
                "attention-and-attribution", "attribution_heatmaps")
    st.caption("Each attribution is shown as each row's share of |a_ij| over the source pieces, so its rows sum to 1 "
               "like α's and the colours compare on one scale. "
               + " ".join(f"{LABELS[m].capitalize()}: {a.seconds:.2f} s." for m, a in results.items()))
    if not results:
        return
    rhos = {LABELS[m]: rank_correlation(record.weights, a.relevance) for m, a in results.items()}
    st.markdown("**Per-row rank correlation** (Spearman's ρ between α_i and the method's row): 1 where both rank the "
                "source pieces alike, near 0 where the attention's order says nothing of what mattered.")
    show_figure(row_correlations(rhos, record.target_tokens), "rank-correlation", "attribution_rho")
    st.caption(" · ".join(f"{n}: mean ρ = {np.nanmean(r):.2f}" for n, r in rhos.items()))
    for m, a in results.items():
        lines = disagreement_text(record, LABELS[m], a.relevance, a.scores, a.source_share)
        st.markdown(f"**Where attention and {LABELS[m]} disagree most**")
        st.markdown("\n".join(f"- {line}" for line in lines) if lines else
                    f"- Nowhere by more than {AGREE:.2f}: on every step the most-attended piece's share of "
                    f"the |attribution| is within {AGREE:.2f} of the largest share.")
        if m == "ig" and a.completeness_gap is not None:
            completeness(a, record)


def completeness(a, record) -> None:
    """Integrated gradients' completeness, total and per step: Σ a_ij against f(x) − f(x'), the gap
    relative to |f(x) − f(x')| (what is attributed), not to log p."""
    gap, steps = a.completeness_gap, a.step_gaps
    worst = int(np.argmax(steps))
    line = (f"Integrated gradients' completeness gap ({a.steps} points): Σ_i |Σ_j a_ij + Σ_k a_ik − (f(x) − f(x'))| "
            f"(j over the source pieces, k over the French prefix) over Σ_i |f(x) − f(x')| = {gap:.2%} in total; per "
            f"step |…| / |f(x) − f(x')|: median {np.median(steps):.2%}, {int((steps > IG_TARGET_GAP).sum())} of "
            f"{len(steps)} steps above {IG_TARGET_GAP:.0%}, the largest {steps[worst]:.2%} (step {worst + 1}). The "
            f"points are chosen for the total, not for every step.")
    if gap > IG_TARGET_GAP:
        line += (f" Above the {IG_TARGET_GAP:.0%} aimed at: more points would cost more than a click may spend "
                 f"here; `python -m model.align --method ig` takes any sentence.")
    st.caption(line)
    with st.expander("Completeness per step"):
        fx_gap = a.logprobs - a.at_baseline
        st.dataframe(pd.DataFrame({"step": np.arange(1, len(steps) + 1), "token": record.target_tokens,
                                   "f(x) − f(x')": fx_gap.round(4), "Σ a (source + prefix)": (fx_gap + a.delta).round(4),
                                   "gap": [f"{g:.2%}" for g in steps]}), hide_index=True, width="stretch")


def edit_controls(record) -> tuple[int, int, float | None]:
    T, src = len(record.target_tokens), record.source_tokens
    c_step, c_word, c_what = st.columns(3)
    with c_step:
        step = st.selectbox("At step", range(T), key="attribution_edit_step",
                            format_func=lambda i: f"{i + 1}: {record.target_tokens[i]}")
    with c_word:
        position = st.selectbox("Source piece", range(len(src)), index=int(record.weights[step].argmax()),
                                key=f"attribution_edit_word_{step}",
                                format_func=lambda j: f"{src[j]} (α = {record.weights[step, j]:.2f})")
    with c_what:
        action = st.radio("Edit", ["knock out", "set its weight"], key="attribution_edit_action", horizontal=True,
                          help="Knock out: α = 0 for this piece at this step and every later one. Set: α at this "
                               "step only. Either way the rest of the row is rescaled to sum to 1.")
    weight = None
    if action == "set its weight":
        # starts at the record's own α (not rounded): left as it is, the edit reproduces the record exactly
        weight = st.slider("New weight α", 0.0, 1.0, float(record.weights[step, position]), 0.01,
                           key=f"attribution_edit_weight_{step}_{position}")
    return step, position, weight


def edit_section(name: str, entry, text: str, record) -> None:
    st.subheader("Edit the attention, decode again")
    st.caption("Does the model use what the attention shows? Change α_i at one step and let the model decode again "
               "from there with the edited weights. RNNsearch and Luong: the edited context c_i feeds the step. "
               "Transformer and Hugging Face models: the cross-attention probabilities are edited (a knock-out in "
               "every layer and head; a set weight in the layer shown, every head moved by one affine map solved "
               "so that the head average shown becomes the value set). A knock-out does not leave a gap: the row "
               "is renormalised, so the weight removed moves onto the other pieces in proportion to their α, most "
               "of it to the most-attended one.")
    step, position, weight = edit_controls(record)
    result = cached_redecoded(name, text, step, position, weight)
    said = result.edit.describe(record)
    if weight is not None:
        said += f"; reached {result.reached:.3f}"
        if abs(result.reached - weight) > 0.005:
            said += f", not the {weight:.3f} asked"
    st.markdown(f"*{plain(said)}*")
    c_old, c_new = st.columns(2, gap="large")
    with c_old:
        st.markdown("**As decoded**")
        st.markdown(f"### {plain(record.translation) or '*(empty)*'}")
        st.caption(f"log p = {record.score:.3f}")
    with c_new:
        st.markdown("**With the edited attention**")
        st.markdown(f"### {plain(result.edited.translation) or '*(empty)*'}")
        st.caption(f"log p = {result.edited.score:.3f}; greedy from step {step + 1} on, the steps before it forced")
    first = result.first_difference
    if first is not None:
        st.success(f"The output changes from step {first + 1} on: the model used what the edit took away or gave.",
                   icon=":material/swap_horiz:")
    elif result.changed:
        st.info(f"The same words, with other log-probabilities (log p(y_{step + 1}) moves by "
                f"{result.delta[step]:+.3f}): the edit mattered, but not enough to change a choice.",
                icon=":material/info:")
    else:
        st.info("Nothing changed: the edit leaves the weights as they were, so the record is reproduced exactly.",
                icon=":material/info:")
    st.markdown("**Change in each original token's log-probability** (the original words force-decoded under the edit)")
    show_figure(logprob_change(record.target_tokens, result.delta, step), "edit-logprob-change", "attribution_delta")
    show_figure(alignment_heatmap(result.edited.weights, result.edited.source_tokens, result.edited.target_tokens,
                                  title="The edited attention, and what followed it",
                                  target_language=target_language(entry)), "edited-attention", "attribution_edited")


st.title("Attention or attribution?")
st.caption("Every page shows attention as if it were the reason for each word. Here it stands beside measures of how "
           "much each source piece moves the probability of each French word (two gradient methods, removing "
           "the piece from the attention, replacing one piece's embedding by the zero vector), and you can edit the "
           "attention and watch the model decode again.")
text = sentence_input("attribution")
c_model, _ = st.columns([2, 3])
with c_model:
    name, entry = pick_model("attribution_model", attention_only=True, purpose="there is no attention to compare")
keep_in_url(name, text)
text = within_bound(attribution_bound(text))  # a knock-out decodes the sentence once per piece (server/costs.py)
source_or_stop(entry, text)
record = cached_greedy(name, text)
if not record.target_tokens:
    st.info("The model wrote nothing for this sentence.", icon=":material/block:")
    st.stop()
compare_section(name, entry, text, record)
edit_section(name, entry, text, record)
