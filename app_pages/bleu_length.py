"""BLEU vs length: Bahdanau et al. (2014), Figure 2, for our models.

Cased sacreBLEU per source-length bucket (1–5, 6–10, …, 51+ words) with 95% bootstrap
intervals, for the natural test split and for the long-sentence stress set (consecutive
test segments joined; ``model.evaluate.stress_set``). The numbers are read from
``results/bleu_by_length.csv``, which ships with the checkpoints, so the page opens at
once. Visitors only read: recomputing decodes the test data for minutes on the server's
cores and overwrites the shipped file, so the button works only for the signed-in teacher
(the session holding the teacher key, checked by the class store at the click); everyone else
sees the command that does the same.
"""
import pandas as pd
import streamlit as st

from server import settings
from server.limits import without_page_slot
from ui.class_session import signed_in_teacher
from ui.figures import show_figure
from ui.zoo_cache import available_models, show_unavailable, zoo
from model.data import multi_reference, read_split, split_path
from model.evaluate import evaluate, stress_set
from viz.bleu import bleu_by_length_figure, bleu_table, describe_finding

RESULTS = settings.results() / "bleu_by_length.csv"
DATA = settings.bleu_data()
COMMAND = "bash scripts/evaluate_zoo.sh ../shared/data"  # what the owner runs instead of the button
COLUMNS = ["model", "set", "beam", "bucket", "min_words", "segments", "bleu", "ci_low", "ci_high"]
SETS = {"test": "Natural test split", "stress": "Long-sentence stress set",
        "newstest2014": "newstest2014 (the paper's test set)"}
# Bahdanau et al. (2014), Table 1, "All" column: BLEU on newstest2014, all sentences, tokenised
PAPER_TABLE_1 = pd.DataFrame({
    "model (paper)": ["RNNencdec-30", "RNNsearch-30", "RNNencdec-50", "RNNsearch-50"],
    "BLEU": [13.93, 21.50, 17.82, 26.75],
})
WHY_OURS_DIFFER = (
    "The paper's models read 348M words of WMT'14 training data; ours read about 8M, English and French "
    "counted as the paper counts them (Tatoeba, Multi30k, Canadian parliament debates and 14k news pairs), "
    "with a few million parameters trained for hours on a CPU. "
    "The paper scores tokenised BLEU, which reads higher than the cased, detokenised sacreBLEU used here. "
    "Our RNNenc reads the source both ways, c = [→h_S ; ←h_1]: a stronger baseline than the paper's RNNencdec "
    "(Cho et al. 2014), whose encoder reads forwards only. "
    "So compare the shapes of the curves (does attention hold up on long sentences?), not the heights.")

st.title("BLEU vs sentence length")
st.caption("The paper's Figure 2 for our models: does translation quality hold up as sentences get longer? "
           "Cased sacreBLEU per source-length bucket; the shaded band is a 95% bootstrap interval "
           "(1,000 resamples of the bucket's segments); the bars below count the segments in each bucket.")
show_unavailable()
models = available_models()
names = {n: e.display_name for n, e in zoo().items()}  # unavailable models may still have results
# a model made elsewhere is written to the CSV under its config's name (model.evaluate --length-csv)
names.update({e.config["name"]: e.display_name for e in zoo().values() if e.made_elsewhere and e.config.get("name")})


def data_problem() -> str | None:
    """Why the test data cannot be read, or None when it can."""
    try:
        split_path(DATA, "test")
    except FileNotFoundError as e:
        return f"{e}. Set ATTN_EXPLORER_DATA to the folder holding test.tsv.gz."
    return None


def recompute(limit: int | None, beam: int, bootstrap: int) -> pd.DataFrame:
    """Decode the test split and the stress set with every available model; return the by-length table."""
    sources, references, origins = multi_reference(read_split(split_path(DATA, "test")))
    sets = {"test": (sources, references, origins), "stress": stress_set(sources, references, origins)}
    tables = []
    progress = st.progress(0.0, text="Translating…")
    jobs = [(n, s) for n in models for s in sets if models[n].languages == ("en", "fr")]  # French references
    for k, (name, set_name) in enumerate(jobs):
        progress.progress(k / len(jobs), text=f"{names[name]}: {SETS[set_name].lower()}…")
        src, refs, orig = (x[:limit] for x in sets[set_name]) if limit else sets[set_name]
        entry = models[name]
        _, by_length = evaluate(entry.model, entry.vocab, src, refs, orig, beam=beam, bootstrap=bootstrap,
                                with_perplexity=False)
        tables.append(by_length.assign(model=entry.config.get("name", name), set=set_name, beam=beam))
    progress.empty()
    return pd.concat(tables, ignore_index=True).reindex(columns=COLUMNS)


with st.expander("Recompute from the data"):
    admin = signed_in_teacher()
    problem = data_problem()
    if not admin:
        st.caption("This server is read-only for visitors: recomputing would decode the test data for minutes on "
                   "the cores the whole class shares, and overwrite the shipped numbers for everyone. The owner "
                   f"recomputes them from a terminal with `{COMMAND}`, or signs in as the teacher (the sidebar's "
                   "*Class* panel) to use this button.")
    elif problem:
        st.caption(f"The data is not here, so the shipped numbers cannot be recomputed: {problem}")
    else:
        st.caption(f"Translates the test split in `{DATA}` and its stress set with every available model "
                   f"and overwrites `{RESULTS}`. On a CPU this takes minutes: leave the page alone until it "
                   "finishes (any click restarts the page and stops the run).")
    c1, c2, c3 = st.columns(3)
    limit = c1.number_input("Segments per set (0 = all)", 0, 100_000, 0, step=100, key="bleu_limit", disabled=not admin)
    beam = c2.number_input("Beam size (1 = greedy)", 1, 10, 1, key="bleu_beam", disabled=not admin)
    bootstrap = c3.number_input("Bootstrap resamples", 0, 10_000, 1000, step=100, key="bleu_bootstrap",
                                disabled=not admin)
    why_not = ("Only the signed-in teacher can recompute" if not admin else problem)
    if st.button("Recompute", key="bleu_recompute", disabled=why_not is not None or not models,
                 help=why_not or "Translate the test data with every available model", icon=":material/refresh:"):
        if not signed_in_teacher():  # checked again: a click must not outlive the key (New key, a forged click)
            st.stop()
        with without_page_slot():  # minutes of decoding: the other tabs' pages keep their turns
            table = recompute(int(limit) or None, int(beam), int(bootstrap))
        if RESULTS.exists():  # sets the button does not decode (newstest2014) keep their rows
            kept = pd.read_csv(RESULTS)
            table = pd.concat([kept[~kept["set"].isin(table["set"].unique())], table], ignore_index=True)
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(RESULTS, index=False)
        st.success(f"Recomputed {len(table)} rows and saved them to `{RESULTS}`.")

if not RESULTS.exists():
    st.info(f"No measurements yet: `{RESULTS}` does not exist. It is written by "
            "`python -m model.evaluate --checkpoint checkpoints/NAME --data ../shared/data/enfr/test.tsv.gz "
            "--bootstrap 1000 --length-csv results/bleu_by_length.csv` (add `--stress` for the stress set), "
            f"or for every model by `{COMMAND}`.", icon=":material/hourglass_empty:")
    st.stop()

results = pd.read_csv(RESULTS)
missing = [c for c in ("model", "set", "bucket", "min_words", "segments", "bleu") if c not in results]
if missing:
    st.error(f"`{RESULTS}` lacks the column(s) {', '.join(missing)}; recompute it.")
    st.stop()
order = {n: k for k, n in enumerate(names)}  # the zoo's order: RNNsearch first, RNNenc last
results = results.sort_values(["set", "model"], key=lambda c: c.map(order).fillna(99) if c.name == "model" else c)

for tab, set_name in zip(st.tabs([SETS[s] for s in SETS]), SETS):
    with tab:
        table = results[results["set"] == set_name]
        if table.empty:
            st.info(f"No rows for the {SETS[set_name].lower()} in `{RESULTS}`.")
            continue
        beams = sorted(table["beam"].dropna().unique()) if "beam" in table else []
        st.markdown(f"**Finding:** {describe_finding(table, names)}")
        fig = bleu_by_length_figure(table, names, title=f"BLEU by source length: {SETS[set_name]}")
        if set_name == "newstest2014":
            c_fig, c_paper = st.columns([3, 1])
            with c_paper:
                st.markdown("**The paper's Table 1** (all sentences)")
                st.dataframe(PAPER_TABLE_1, hide_index=True, width="stretch")
                st.caption(WHY_OURS_DIFFER)
            with c_fig:
                show_figure(fig, f"bleu-by-length-{set_name}", key=f"bleu_figure_{set_name}")
        else:
            show_figure(fig, f"bleu-by-length-{set_name}", key=f"bleu_figure_{set_name}")
        st.caption(f"{table['model'].nunique()} model(s); "
                   + (f"decoding: {'greedy' if beams == [1] else 'beam ' + ', '.join(str(int(b)) for b in beams)}; "
                      if beams else "")
                   + "a bucket with few segments has a wide band: read it with care.")
        wide = bleu_table(table, names)
        st.dataframe(wide, width="stretch")
        st.download_button("Download the numbers (CSV)", table.to_csv(index=False),
                           file_name=f"bleu-by-length-{set_name}.csv", mime="text/csv", key=f"bleu_csv_{set_name}",
                           icon=":material/table:")
