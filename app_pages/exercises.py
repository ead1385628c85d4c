"""Exercises: predict the attention, then see it.

Three kinds (``teaching/exercises.py``): predict the alignment of a sentence pair, compute one
attention step by hand, and name the mechanism that drew a heatmap. The link holds the kind
and the seed (``?ex=step&seed=4``), so one shared link gives the whole room the same
exercise. A student who joined a class (``?class=CODE``) has each answer counted there,
anonymously; the teacher (who signed in with the server's key, in the sidebar) sees the
class's answers live below the exercise and can reveal the answer on every screen at once.
"""
import math

import numpy as np
import streamlit as st

from ui.class_live import live_look
from ui.class_panel import counts_line
from ui.class_session import (ANSWERED, class_answers, EX_KIND, EX_SEED, joined_class, record_answer, revealed_to_class,
                              teacher_key)
from model.search import InputError
from ui.examples import EXAMPLES
from ui.figures import chart, chart_with_export
from ui.url_state import from_link, int_param, query_param, set_query_params
from ui.widgets import plain
from ui.zoo_cache import available_models, cached_translate, ENGLISH_FRENCH, pick_model, shared_result, usable_models
from ui.class_view import exercise_name, first_answers, given_numbers, labels_by_verdict, link_counts, most_given, numbers_table
from ui.teaching_pages import cached_forced_alignment, gold_folder, gold_pairs
from model.analysis import merge_to_words
from server.answers import answer_record, class_summary, gave_up_record
from teaching.exercises import (alignment_exercise, check_step, exercise_id,
                                model_links_against_gold,
                                level, step_hints, step_workings,
                                KINDS, MECHANISMS, SCORES, score_alignment, step_exercise, TELLS, TOLERANCE,
                                which_exercise, attention_cues, FAMILIES, FAMILY_OF)
from model.zoo import DISPLAY_NAMES
from server.class_store import AnswerRefused, class_store, NotTeacher, StoreUnavailable
from viz.heatmap import alignment_heatmap
from viz.teaching_figures import alignment_links, answer_counts, class_alignment, latex_matrix, shaped
from viz.teaching_figures import given_numbers as given_numbers_figure

st.title("Exercises")
st.caption("Predict first, then see: commit to an answer, check it, and compare it with the model and the gold. "
           "Everyone who opens the same link gets the same exercise.")

LAST_EXERCISE = 9999  # exercise numbers run 0–9999: at most four digits for a teacher to read out to the room
from_link(EX_KIND, lambda: query_param("ex", "align") if query_param("ex", "align") in KINDS else "align")
kind = st.segmented_control("Exercise", list(KINDS), format_func=KINDS.get, required=True, key=EX_KIND) or "align"
from_link(EX_SEED, lambda: int_param("seed", 0, 0, LAST_EXERCISE))
seed = int(st.number_input("Exercise number", 0, LAST_EXERCISE, key=EX_SEED,
                           help="Each number draws another exercise of this kind; the link keeps it."))
set_query_params(ex=kind, seed=seed)
ex_id = exercise_id(kind, seed)
checked_key = ANSWERED.format(ex_id)  # ui.class_session.reveal_shown reads it too
PROGRESS = "ex_progress"  # exercise id -> right at the first committed answer, in this tab
teacher = bool(teacher_key() and joined_class())
if revealed_to_class(ex_id) and not st.session_state.get(checked_key):
    st.info("The teacher revealed the answer.", icon=":material/visibility:")


def revealed() -> bool:
    """Show the answer: after the student committed their own (or asked for the solution), when
    the teacher revealed it, and to the teacher."""
    return answered() or revealed_to_class(ex_id)


def answered() -> bool:
    """Has this tab committed an answer (or asked for the solution) to this exercise?"""
    return bool(st.session_state.get(checked_key))


def not_answered_note() -> None:
    """After *Reveal*, to whoever did not answer: the solution, and no score of theirs."""
    st.info("You did not answer this exercise: here is the solution, without a score." if not teacher else
            "The solution, as the class sees it now.", icon=":material/visibility:")


def check_button(label: str = "Check my answer") -> bool:
    """The one button of every exercise; returns True on the rerun it was clicked. It reveals
    nothing by itself: :func:`commit` does, once the page has a committed answer."""
    return st.button(label, key=f"ex_check_{ex_id}", type="primary")


def commit(answer: dict, correct: bool) -> None:
    """A committed answer: counted in the class (the first one is the one the class counts) and
    the solution shown from now on."""
    st.session_state[checked_key] = True
    st.session_state.setdefault(PROGRESS, {}).setdefault(ex_id, bool(correct))  # the first answer, as the class
    record_answer(ex_id, answer, correct)


def next_exercise() -> None:
    st.session_state[EX_SEED] = min(LAST_EXERCISE, int(st.session_state.get(EX_SEED, 0)) + 1)


def progress_line() -> None:
    """*Next exercise* (the next seed: the next level, 1 → 2 → 3, then new numbers) and how many
    of this tab's exercises were right at the first answer."""
    done = st.session_state.get(PROGRESS, {})
    row = st.container(horizontal=True, vertical_alignment="center")  # one block, where columns send three
    row.button("Next exercise", key="ex_next", on_click=next_exercise, icon=":material/arrow_forward:")
    if done:
        row.caption(f"**{sum(done.values())} of {len(done)}** right at the first answer in this tab.")


def solution_button() -> None:
    """*Show me the solution*: before any answer it is counted as "gave up" in the class. Not on
    the teacher's page, which a projector may show: *Reveal* shows the solution there."""
    if revealed() or teacher:
        return
    if st.button("Show me the solution", key=f"ex_give_up_{ex_id}", icon=":material/lightbulb:",
                 help="Before you answer, this counts as 'gave up' in a class; your answers after it are retries."):
        commit(gave_up_record(), False)


# -- predict the alignment --------------------------------------------------------------------------
def alignment_page():
    pairs = gold_pairs()
    if pairs is None:
        st.info(f"The Hansards gold alignments are missing (looked in `{gold_folder()}`; set ATTN_EXPLORER_GOLD); "
                "the exercises use the curated pairs only.", icon=":material/info:")
    pair = alignment_exercise(seed, pairs)
    english, french = list(pair.english), list(pair.french)
    st.markdown(f"**English**: {plain(' '.join(english))}  \n**French**: {plain(' '.join(french))}")
    st.caption(f"{pair.origin}. Level {level('align', seed)} of 3. Each row is a French word: click the English "
               "word(s) it translates (click again to take a link back); leave a row empty if no English word gives "
               "it (an auxiliary, say).")
    marks = set()
    for k, word in enumerate(french):  # one row per French word, in order at any width (no columns to stack)
        chosen = st.pills(f"{k + 1}. {word}", list(range(len(english))), selection_mode="multi",
                          key=f"ex_align_{seed}_{k}", format_func=lambda i: english[i])
        marks |= {(int(i), k) for i in chosen or []}
    # English → French pairs with French gold links: a model of another language pair is not offered
    name, entry = pick_model("ex_model", attention_only=True, label="Compare with the model",
                             purpose="there is no attention to compare with", pair=ENGLISH_FRENCH)
    if check_button():
        if not marks:
            st.warning("Mark at least one link first: an empty grid is not an answer.", icon=":material/edit:")
        else:
            score = score_alignment(marks, pair, set())
            mistakes = ([f"missed {french[k]}–{english[i]}" for i, k in sorted(score.missed)]
                        + [f"linked {french[k]}–{english[i]}" for i, k in sorted(score.wrong)])
            commit(answer_record(f"AER {math.floor(score.aer * 10) / 10:.1f}", not mistakes, mistakes, marks),
                   not mistakes)
    solution_button()
    if not revealed():
        return pair, None
    result = cached_forced_alignment(name, tuple(english), tuple(french), hansards=True)
    if not answered():
        not_answered_note()
        chart_with_export(alignment_links(result.word_weights, english, french, set(pair.sure) | set(pair.possible),
                                          set(pair.sure), set(pair.possible),
                                          title=f"The gold links over the α of {entry.display_name}"),
                          f"exercise-align-{seed}-{name}", "ex_align_fig")
        st.caption("The colours are the model's α (forced along this French); the markers are the gold links: "
                   "filled green a sure one, open green a possible one.")
        return pair, result
    score = score_alignment(marks, pair, result.links)
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Your AER against the gold", f"{score.aer:.3f}", help="1 − (|A∩S| + |A∩P|) / (|A| + |S|), Och & Ney "
              "2003; 0 is perfect")
    c2.metric("Precision", f"{score.precision:.3f}", help="your links that are gold (sure or possible)")
    c3.metric("Recall", f"{score.recall:.3f}", help="sure gold links you marked")
    c4.metric(f"Agreement with {entry.display_name}",
              f"P {score.model_precision:.0%} · R {score.model_agreement:.0%}",
              help="precision: your links the model also makes; recall: the model's links (each French word to its "
                   "most-attended English word) you also marked. Marking everything raises recall, not precision.")
    chart_with_export(alignment_links(result.word_weights, english, french, marks, set(pair.sure), set(pair.possible),
                                      title=f"Your links over the α of {entry.display_name}"),
                      f"exercise-align-{seed}-{name}", "ex_align_fig")
    st.caption("The colours are the model's α (forced along this French); the markers are **your** links: filled "
               "green a sure gold link, open green a possible one, red × outside the gold; an orange square is a "
               "sure gold link you did not mark.")
    lines = []
    for other in ("rnnsearch", "luong-general"):
        if other in available_models() and available_models()[other].has_attention:
            links = cached_forced_alignment(other, tuple(english), tuple(french), hansards=True).links
            right, wrong = model_links_against_gold(marks, links, pair)

            def said(found):
                return ", ".join(f"*{plain(french[k])}* → *{plain(english[i])}*" for i, k in found) or "none"
            lines.append(f"- **{DISPLAY_NAMES.get(other, other)}** links where you did not: right against the gold "
                         f"({len(right)}): {said(right)}; wrong against the gold ({len(wrong)}): {said(wrong)}")
    if lines:
        st.markdown("**Where the attention differs from you**\n" + "\n".join(lines))
    return pair, result


# -- compute one step by hand ------------------------------------------------------------------------
SCORE_LATEX = {"dot": r"e_j = s^\top h_j", "general": r"e_j = s^\top W_a h_j",
               "additive": r"e_j = v_a^\top \tanh\left(W_a s + U_a h_j\right)"}


NUMBER_BOX_PX = 120  # a box for "-12.34" and its buttons: rows of them wrap on a phone


def numbers(label: str, n: int, key: str) -> list:
    """A row of ``n`` boxes for two-decimal numbers, ``key``1 … ``key``n. One horizontal block,
    where ``st.columns`` would send n + 1 (the room gets this page at each send of it)."""
    st.markdown(label)
    row = st.container(horizontal=True)
    return [row.number_input(f"{key}{j + 1}", value=None, step=0.01, format="%.2f", key=f"ex_{seed}_{key}{j}",
                             label_visibility="visible", width=NUMBER_BOX_PX) for j in range(n)]


def step_page():
    ex = step_exercise(seed)
    n, h = ex.words, ex.inputs.annotations.shape[1]
    words = [f"h{j + 1}" for j in range(n)]
    st.markdown(f"**Level {level('step', seed)} of 3 — score: {SCORES[ex.score].split(':')[0]}**, {n} keys. The keys "
                "$h_j$ are also the values, as in the RNN models, where the same annotation vectors are scored and "
                "averaged.")
    st.latex(SCORE_LATEX[ex.score])
    st.latex(r"s = " + shaped(latex_matrix(ex.inputs.decoder_state, digits=1), 1, h) + r",\qquad H = "
             + shaped(latex_matrix(ex.inputs.annotations, words, digits=1), n, h))
    if ex.score == "general":
        st.latex(r"W_a = " + shaped(latex_matrix(ex.general_weights, digits=1), h, h))
    elif ex.score == "additive":
        a = ex.inputs.v.shape[0]
        st.latex(r"\begin{bmatrix} W_a^\top \\ U_a^\top \end{bmatrix} = "
                 + shaped(latex_matrix(ex.inputs.W, split_after=h, digits=1), 2 * h, a)
                 + r",\qquad v_a = " + shaped(latex_matrix(ex.inputs.v, digits=1), a, 1))
    st.caption(f"You need a calculator for exp{' and tanh' if ex.score == 'additive' else ''} (a phone's will do). "
               f"Enter every number to two decimals, as the boxes show them: each is accepted within ±{TOLERANCE}. "
               r"$\alpha_j = \exp(e_j) / \sum_k \exp(e_k)$, $c = \sum_j \alpha_j h_j$. Each part is judged "
               "from your own earlier numbers: α against the softmax of your e, c against your α.")
    e = numbers("**Energies** e_j", n, "e")
    alpha = numbers("**Weights** α_j", n, "α")
    c = numbers("**Context** c", h, "c")
    clicked = check_button()
    entered = any(x is not None for x in (*e, *alpha, *c))
    if clicked and not entered:
        st.warning("Enter your numbers first: an empty answer is not checked.", icon=":material/edit:")
        clicked = False
    check = check_step(ex, e, alpha, c) if entered else None  # a follower's fresh page has nothing to judge
    if clicked:
        commit(answer_record("right" if check.right else "wrong: " + " ".join(check.wrong_parts()), check.right,
                             [f"{p} wrong" for p in check.wrong_parts()] + list(check.slips),
                             numbers={"e": e, "α": alpha, "c": c}), check.right)
    hints(ex)
    solution_button()
    if st.session_state.get(checked_key) and entered:
        step_feedback(check)
    if revealed():
        if not answered():
            not_answered_note()
        solution(ex, words)
    return ex


def hints(ex) -> None:
    """Two staged hints before the solution; they count nothing."""
    given = step_hints(ex)
    shown_key = f"ex_hints_{ex_id}"
    shown = st.session_state.get(shown_key, 0)
    for k in range(shown):
        st.info(f"Hint {k + 1}: {given[k]}", icon=":material/tips_and_updates:")
    if shown < len(given) and not revealed():
        if st.button(f"Hint {shown + 1} of {len(given)}", key=f"ex_hint_{ex_id}", icon=":material/help:"):
            st.session_state[shown_key] = shown + 1
            st.rerun()


def step_feedback(check) -> None:
    if check.right:
        st.success("All right: every number is within the tolerance.", icon=":material/check_circle:")
        return
    wrong = [f"{part}_{j + 1}" for part, flags in (("e", check.energies), ("α", check.weights), ("c", check.context))
             for j, ok in enumerate(flags) if not ok]
    right = [p for p, flags in (("e", check.energies), ("α", check.weights), ("c", check.context)) if flags.all()]
    st.error(f"Not yet: {', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} off by more than ±{TOLERANCE} "
             f"(wrong part(s): {', '.join(check.wrong_parts())})."
             + (f" Right from your own numbers: {', '.join(right)}." if right else ""), icon=":material/cancel:")
    for slip in check.slips:
        st.warning(f"A common slip: {slip}.", icon=":material/report:")


def solution(ex, words):
    n = len(words)
    with st.expander("The worked answer", expanded=True, icon=":material/calculate:"):
        for name, values in step_workings(ex):
            rows, cols = values.shape
            labels = words if rows == n else None
            st.latex(name + " = " + shaped(latex_matrix(values, labels, digits=3), rows, cols))


# -- which mechanism? -----------------------------------------------------------------------------------
def which_page():
    models = [m for m in usable_models("there is no heatmap to show", attention_only=True) if m in MECHANISMS]
    ex = which_exercise(seed, models, list(EXAMPLES))
    question = word_attention(ex.model, ex.sentence)
    family = ex.question == "family"
    st.markdown(f"**Level {level('which', seed)} of 3**: "
                + ("which *family* of attention drew this heatmap? Look at how sharp the rows are, and whether "
                   "cells far from the diagonal are exactly 0." if family else
                   "which exact score drew it? (The hardest: dot, general and concat differ little on one heatmap.)"))
    # before the answer the figure, its title and its files' names say nothing of the model
    chart_with_export(question, f"exercise-which-{seed}", "ex_which_fig")
    st.caption(f"The model's own greedy translation of *{plain(ex.sentence)}*, with its attention merged to words.")
    options = ([f for f in FAMILIES if any(FAMILY_OF[m] == f for m in models)] if family else models)
    names = FAMILIES if family else MECHANISMS
    mechanism_choice(family, options, names)
    choice = st.session_state.get(f"ex_which_{seed}")
    if check_button():
        if choice is None:
            st.warning("Pick an answer first.")
        else:
            right = choice == ex.answer
            commit(answer_record(names[choice], right, [] if right else [names[choice]]), right)
    solution_button()
    if revealed():
        if not answered():
            not_answered_note()
        verdict = "" if choice is None or not answered() else ("Right: " if choice == ex.answer else "No: ")
        st.markdown(f"**{verdict}it is {DISPLAY_NAMES.get(ex.model, ex.model)}** ({FAMILIES[FAMILY_OF[ex.model]]}). "
                    f"{TELLS[ex.model]}")
        # on *Reveal* every tab that has not answered draws the solution at the same moment: the five
        # heatmaps (and, the first time, the sentence's decodings) would double each tab's rerun, so
        # they are drawn on request, as the export popovers' files are
        every = st.expander("The same sentence under every model", key=f"ex_which_every_{seed}", on_change="rerun",
                            icon=":material/compare:")
        if every.open:
            with every:
                side_by_side(models, ex.sentence)
    return names[ex.answer]


@st.fragment
def mechanism_choice(family: bool, options: list, names: dict) -> None:
    """The options alone: a fragment, so picking one reruns the radio, not the heatmap and the class
    panel around it (what a student does most on this page). *Check* reads the pick from the
    session's state and reruns the page, where the verdict, the class's count and the listener's
    signature are drawn."""
    st.radio("Which family drew this heatmap?" if family else "Which mechanism drew this heatmap?", options,
             index=None, key=f"ex_which_{seed}", format_func=names.get)


def word_attention(model_name: str, sentence: str):
    """The exercise's heatmap: the model's word-level α, titled without naming the model."""
    try:
        return word_view(model_name, sentence)[-1]
    except InputError as e:
        st.warning(str(e))
        st.stop()


def word_view(model_name: str, sentence: str):
    """The sentence's record first, in its own order (costly lane, cache, slot:
    ``server.scheduler.ORDER``), then the word view made from it."""
    return _word_view(model_name, sentence, _record=cached_translate(model_name, sentence, 1))


@shared_result(max_entries=128)
def _word_view(model_name: str, sentence: str, _record):
    """A model's word-level attention on an exercise's sentence, its cues, its heatmap and the same
    heatmap as the question shows it (its title names no model): made once per process for every
    student who is asked, checks or is shown it (a class answers the same exercise at once), each
    student's page only draws them."""
    weights, source, target = merge_to_words(_record.weights, _record.source_tokens, _record.target_tokens)
    title = DISPLAY_NAMES.get(model_name, model_name)
    return (weights, source, target, attention_cues(weights), alignment_heatmap(weights, source, target, title=title),
            alignment_heatmap(weights, source, target, title="α by word: which model drew this?"))


def side_by_side(models: list, sentence: str) -> None:
    """The same sentence under every model, with the cues a heatmap shows measured."""
    st.markdown("Sharpness is the mean of each row's largest α (1: every "
                "word looks at one source word), entropy the mean spread of a row, *exactly 0* the share of cells a "
                "window cuts off (local-p).")
    rows = []
    columns = st.columns(3)
    for k, name in enumerate(models):
        try:
            *_, cues, figure, _ = word_view(name, sentence)
        except InputError as e:
            st.warning(str(e))
            st.stop()
        rows.append({"model": DISPLAY_NAMES.get(name, name), "family": FAMILIES[FAMILY_OF[name]],
                     "sharpness": round(cues["sharpness"], 2), "entropy (nats)": round(cues["entropy"], 2),
                     "exactly 0": f"{cues['zeros']:.0%}"})
        chart(figure, f"exercise-which-{seed}-{name}", f"ex_which_all_{name}", where=columns[k % 3])
    st.dataframe(cues_table(tuple(tuple(row.items()) for row in rows)), hide_index=True, key="ex_which_cues")


@shared_result(max_entries=128)
def cues_table(rows: tuple):
    """The cues' rows as an Arrow table, converted once per process: ``st.dataframe`` converts a
    list of rows on every run (a fifth of a follower's rerun after *Reveal*, every tab at once)."""
    import pandas as pd
    import pyarrow as pa
    return pa.Table.from_pandas(pd.DataFrame([dict(row) for row in rows]), preserve_index=False)


# -- the page -----------------------------------------------------------------------------------------
if teacher:
    code = joined_class()

    def reveal():
        try:
            class_store().reveal(teacher_key(), code, ex_id)
            st.session_state["ex_revealed_note"] = True
        except (StoreUnavailable, NotTeacher, AnswerRefused) as e:
            st.session_state["ex_revealed_note"] = str(e)

    st.button("Reveal the answer to the class", key="ex_reveal", on_click=reveal, icon=":material/visibility:")
    note = st.session_state.pop("ex_revealed_note", None)  # a caption, no tooltip over the projected page
    if note:
        st.caption("Revealed to the class: every student following sees the answer." if note is True
                   else f"Not revealed: {note}")

shown = {"align": alignment_page, "step": step_page, "which": which_page}[kind]()
progress_line()

def room_numbers(ex, firsts) -> None:
    """The numbers the class gave in this hand computation, per quantity, against the right ones."""
    steps = ex.solution()
    truth = {"e": steps.energies.reshape(-1), "α": steps.weights.reshape(-1), "c": steps.context.reshape(-1)}
    right = {f"{p}_{j + 1}": float(v) for p, values in truth.items() for j, v in enumerate(values)}
    given = given_numbers(firsts, {p: len(v) for p, v in truth.items()})
    chart(given_numbers_figure(given, right, TOLERANCE), f"class-numbers-step-{seed}", "ex_class_numbers")
    st.dataframe(numbers_table(given, right, TOLERANCE), hide_index=True, key="ex_class_numbers_table")
    st.caption(f"Each dot is one student's first answer: green within ±{TOLERANCE} of the right value, vermillion "
               "outside it. A student's own check judges α from their e and c from their α, so a student off in e "
               "can be right there and still show vermillion α here.")


def room_alignment(s, pair, result) -> None:
    """The class's links (how many students linked each pair) beside the model's and the gold."""
    english, french = list(pair.english), list(pair.french)
    gold = np.zeros((len(french), len(english)))
    for i, k in pair.possible:
        gold[k, i] = 0.5
    for i, k in pair.sure:
        gold[k, i] = 1.0
    if result is None:  # before Reveal: the class's own links, nothing of the model's or the gold
        chart(class_alignment(link_counts(s.marks, len(english), len(french)), s.students, None, set(), None,
                              english, french), f"class-links-align-{seed}", "ex_class_marks")
        st.caption("Each cell says how many students linked that French word (row) to that English word (column).")
        return
    chart(class_alignment(link_counts(s.marks, len(english), len(french)), s.students, result.word_weights,
                          result.links, gold, english, french), f"class-links-align-{seed}", "ex_class_marks")
    st.caption("Each cell of the class's panel says how many students linked that French word (row) to that English "
               "word (column); orange squares are the model's links, on the class's panel too: a square over a dark "
               "cell is a link the model makes and the room did not. Each panel's legend is under it.")


def room_before_reveal(s) -> None:
    """The room before *Reveal*, as a projector may show it: how many answered, and what they
    gave where that says nothing of the solution (the mechanisms named, the class's links), never
    which is right."""
    c1, c2, c3 = st.columns(3)
    c1.metric("Students who answered", s.students)
    c2.metric("Gave up", s.gave_up, help="students who asked for the solution before answering")
    c3.metric("Retries (not counted)", s.retries, help="answers after a student's first")
    if kind == "which":
        chart(answer_counts(dict(s.choices), None, title="First answers (right and wrong show after Reveal)"),
              f"class-answers-{kind}-{seed}", "ex_class_counts")
    if kind == "align" and shown is not None:
        room_alignment(s, shown[0], None)
    st.caption("Nothing here says which answer is right: *Reveal the answer to the class* shows the solution here "
               "and on every student's screen.")


def room_revealed(s, stored) -> None:
    """The room after *Reveal*: right and wrong, the most common mistake, the numbers against the
    right ones, the class's links beside the model's and the gold."""
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Students who answered", s.students)
    c2.metric("Right", f"{s.correct} ({s.correct / max(1, s.students):.0%})",
              help="students whose first answer is right: the first committed answer is the one counted")
    c3.metric("Gave up", s.gave_up, help="students who asked for the solution before answering")
    c4.metric("Retries (not counted)", s.retries,
              help=f"answers after a student's first; {s.fixed} student(s) wrong at first got it right later")
    firsts = first_answers(stored, ex_id)
    rights, _ = labels_by_verdict(firsts)
    chart(answer_counts(dict(s.choices), rights | ({shown} if kind == "which" else set()),
                        title="First answers: right in green, wrong in vermillion"),
          f"class-answers-{kind}-{seed}", "ex_class_counts")
    mistake = s.most_common_mistake
    st.markdown(f"**{plain(most_given(s.choices))[:1].upper() + plain(most_given(s.choices))[1:]}.** "
                + (f"**Most common mistake**: {plain(mistake[0])} ({mistake[1]} student(s))" if mistake
                   else "**No mistakes** so far."))
    if kind == "step" and shown is not None:
        room_numbers(shown, firsts)
    if kind == "align" and shown is not None:
        room_alignment(s, *shown)


if teacher:
    st.divider()
    st.subheader(f"Class {joined_class()}: the answers, live")

    @st.fragment
    def class_view():  # a live view: it reruns when the class's answers change (ui/class_live.py)
        live_look("exercise")
        stored = class_answers()
        if stored is None:
            return
        line = counts_line(joined_class())  # the roster: joined / answered / counted, as the sidebar's (live_counts)
        if line:
            st.markdown(line)
        summaries = class_summary(stored)
        s = summaries.get(ex_id)
        st.markdown(f"**{plain(exercise_name(ex_id))}**")
        if s is None:
            st.caption("No answer to this exercise yet (the summary shows each answer as it comes in).")
        elif revealed_to_class(ex_id):
            room_revealed(s, stored)
        else:
            room_before_reveal(s)
        if summaries:
            # one type a column: "—" beside counts would send Arrow a mixed column, which Streamlit
            # converts again on every rerun, logging the failed first try
            st.dataframe([{"exercise": exercise_name(x.exercise), "students": x.students,
                           "right at first": str(x.correct) if x.exercise != ex_id or revealed_to_class(ex_id) else "—",
                           "gave up": x.gave_up, "retries": x.retries}
                          for x in summaries.values()], hide_index=True, key="ex_class_table",
                         column_config={"right at first": st.column_config.TextColumn(alignment="right")})
    class_view()
