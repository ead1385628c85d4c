"""Lesson: one sentence (the student's own, or the landing sentence) from the heatmap to the
Transformer, stop by stop.

Each stop (``ui/lesson_stops.py``) is a card: a short text whose numbers come from the
model's record, one live view from ``viz/``, one thing to do, one question checked at once,
two hints and then *show me*, and a link to the page that explores it with the same
sentence and step. The stop, the sentence, the step and the stops done live in the link
(``/lesson?stop=5&text=…&step=2&done=1,2``): a reload, a shared link or the teacher's *Send
this page to the class* opens the same stop. In a class, the first answer a student checks
at a stop is counted like an exercise's (``class_session.record_answer``).
"""
import hashlib

import streamlit as st

from ui.class_live import live_look
from ui.class_session import class_answers, joined_class, LESSON_DONE_COOKIE, page_cookie, record_answer, teacher_key
from ui.figures import chart
from ui.url_state import int_param, query_param, set_query_params
from ui.widgets import plain, sentence_input, small
from ui.zoo_cache import available_models
from teaching.lesson_questions import Question
from ui.lesson_stops import Card, checked, hint_level, HINTS, Lesson, LESSON_MODEL, STEP, STOPS, TAG
from ui import class_check, lesson_check
from ui.teaching_pages import source_or_stop
from server.answers import answer_record

STOP = "lesson_stop"  # the stop shown, 1-based
DONE = "lesson_done"  # the stops done (answered right, or shown), 1-based
# the stops done, also in a cookie of the browser's own: a page the teacher sends opens as a new
# session from a link that carries no progress (keep_in_url), and the cookie brings it back
PROGRESS_COOKIE = LESSON_DONE_COOKIE
N = len(STOPS)
END = N + 1  # the closing card, after the last stop
FIRST = "lesson_first"  # stop -> right at the first answer checked (False: shown before answering)


def number(name: str, default: int) -> int:
    try:
        return int(query_param(name, str(default)))
    except ValueError:
        return default


def first_visit() -> None:
    """The stop, the step and the stops done, from the link (a reload keeps them there)."""
    if STOP not in st.session_state:
        st.session_state[STOP] = int_param("stop", 1, 1, END, clamp=True, past_high=N)  # END: the closing card
        st.session_state[STEP] = max(1, number("step", 1))
        done = (query_param("done") or "").split(",") + str(page_cookie(PROGRESS_COOKIE) or "").split(".")
        st.session_state[DONE] = {int(k) for k in done if k.isdigit() and 1 <= int(k) <= N}


def go(stop: int) -> None:
    st.session_state[STOP] = min(max(1, stop), END)


def navigation(k: int) -> None:
    """Stop k of N, Back and Next (buttons: reached with Tab, pressed with Enter or Space), and a jump."""
    done = st.session_state[DONE]
    st.progress(len(done) / N, text=(f"Stop {k} of {N}" if k <= N else "The end") + f" · {len(done)} done")
    row = st.container(horizontal=True, vertical_alignment="bottom", key="lesson_nav")
    row.button("Back", key="lesson_back", icon=":material/arrow_back:", on_click=go, args=(k - 1,), disabled=k <= 1)
    row.button("Next", key="lesson_next", icon=":material/arrow_forward:", on_click=go, args=(k + 1,),
               disabled=k >= END, type="primary")
    st.session_state["lesson_jump"] = k
    row.selectbox("Go to stop", range(1, END + 1), key="lesson_jump", width=280,
                  on_change=lambda: go(st.session_state["lesson_jump"]),
                  format_func=lambda n: f"{n}. {STOPS[n - 1].title}" if n <= N else "The end: what you learned")


def answer_box(slug: str, q: Question):
    """The question's input: a choice (radio for a few, a menu for many) or a number."""
    key = f"lesson_answer_{slug}_{st.session_state[TAG]}_{q.key}"  # a new question (step, set) starts afresh
    if q.choices and len(q.choices) <= 6:
        return st.radio(q.prompt, q.choices, index=None, key=key)
    if q.choices:
        return st.selectbox(q.prompt, q.choices, index=None, key=key, placeholder="Choose an answer")
    digits = q.digits if q.digits is not None else (0 if float(q.right[0]).is_integer() and q.tolerance == 0 else 2)
    return st.number_input(q.prompt, value=None, step=1 if digits == 0 else 10.0 ** -digits,
                           format="%d" if digits == 0 else f"%.{digits}f",
                           key=key, placeholder="Type a number")


def commit(k: int, slug: str, q: Question) -> None:
    """*Check* (a callback, so the stop drawn after it already knows): the answer checked, the stop
    done if right; the first committed answer is marked for the class (sent by ``ask``, in place)."""
    given = st.session_state.get(f"lesson_answer_{slug}_{st.session_state[TAG]}_{q.key}")
    if given is None:
        st.session_state["lesson_unanswered"] = True
        return
    right = q.check(given)
    st.session_state[f"lesson_checked_{slug}_{st.session_state[TAG]}"] = (given, right, q.key)
    if right:
        st.session_state[DONE].add(k)
    st.session_state.setdefault(FIRST, {}).setdefault(k, right)
    st.session_state.setdefault(f"lesson_counted_{slug}", "to send")


def exercise(k: int, slug: str) -> str:
    """The name a stop's answers are stored under in the class (the store's exercise-id pattern)."""
    return f"lesson:{k:02d}-{slug}"


def more_help(slug: str) -> None:
    st.session_state[f"lesson_hint_{slug}_{st.session_state[TAG]}"] = hint_level(slug) + 1


def ask(k: int, slug: str, q: Question) -> None:
    """The question, Check, the two hints, then *show me*."""
    with st.container(border=True, key="lesson_question"):
        answer_box(slug, q)
        row = st.container(horizontal=True)
        row.button("Check", key=f"lesson_check_{slug}", icon=":material/check:", on_click=commit, args=(k, slug, q))
        if st.session_state.pop("lesson_unanswered", False):
            st.warning("Answer first: choose or type one.")
        level = hint_level(slug)
        row.button(HINTS[level] if level < len(HINTS) else "Show me", key=f"lesson_hint_button_{slug}",
                   icon=":material/lightbulb:", on_click=more_help, args=(slug,), disabled=level > len(HINTS))
        result = st.session_state.get(f"lesson_checked_{slug}_{st.session_state[TAG]}")
        if result is not None and result[2] == q.key:  # the verdict of this very question, not of an earlier one
            given, right, _ = result
            if st.session_state.get(f"lesson_counted_{slug}") == "to send":  # the first committed answer counts
                st.session_state[f"lesson_counted_{slug}"] = True
                record_answer(exercise(k, slug), answer_record(str(given), right, [] if right else [str(given)]), right)
            (st.success if right else st.error)(
                f"{'Right' if right else 'Not quite'}: your answer {plain(str(given))}.", icon=":material/check_circle:"
                if right else ":material/cancel:")
        for n in range(min(level, len(HINTS))):
            st.caption(f"**Hint {n + 1}.** {q.hints[n]}")
        if level > len(HINTS):
            st.info(f"**The answer:** {q.show_me}", icon=":material/visibility:")
            if k not in st.session_state[DONE]:
                st.session_state[DONE].add(k)
                st.session_state.setdefault(FIRST, {}).setdefault(k, False)
                if f"lesson_counted_{slug}" not in st.session_state and not checked(slug):
                    st.session_state[f"lesson_counted_{slug}"] = True  # shown before answering: counted as not known
                    record_answer(exercise(k, slug), answer_record("shown the answer", False, ["shown"]), False)


def class_view(k: int, slug: str, q: Question | None) -> None:
    """The teacher's view of the room at this stop, redrawn as answers come in: who answered, who was right
    (each student's first committed answer), and the answers given, right ones in green and wrong
    ones in vermillion, a tie for the most given answer named as one."""
    from server.answers import class_summary
    from ui.class_view import exercise_name, first_answers, labels_by_verdict, most_given
    from viz.teaching_figures import answer_counts

    @st.fragment
    def room():  # a live view: it reruns when the class's answers change (ui/class_live.py)
        live_look("lesson")
        stored = class_answers()
        if stored is None:
            return
        s = class_summary(stored).get(exercise(k, slug))
        if s is None:
            st.caption("No answer to this stop yet (each answer shows as it comes in).")
            return
        c1, c2 = st.columns(2)
        c1.metric("Students who answered", s.students)
        c2.metric("Right", f"{s.correct} ({s.correct / max(1, s.students):.0%})")
        rights, _ = labels_by_verdict(first_answers(stored, exercise(k, slug)))
        rights |= {str(r) for r in (q.right if q is not None and q.choices else ())}
        said = f"{s.students} answered; {most_given(s.choices)}."
        chart(answer_counts(dict(s.choices), rights, title="Their first answers: right in green, wrong in vermillion"),
              f"class-answers-lesson-{slug}", "lesson_class_counts", alt=said)
        st.caption(f"In words: {plain(said)}")
    st.subheader(f"Class {joined_class()}: {plain(exercise_name(exercise(k, slug)))}, the answers live")
    room()


LEARNED = (
    "a heatmap row is α_i: where the decoder looked while writing piece i, and it sums to 1;",
    "the encoder makes one annotation h_j per source piece, read both ways;",
    "Bahdanau's additive score e_ij reads the previous state s_{i−1}; softmax turns the energies into weights "
    "and sees only their differences;",
    "the context c_i is the α-weighted sum of the annotations, and it picks the next word;",
    "attention reorders: a French word can look back at an earlier English word;",
    "Luong's scores read the new state s_i; local-p only looks within p_i ± D;",
    "attention keeps BLEU up on long sentences, where RNNenc falls behind;",
    "Luong's dot is softmax(QKᵀ)V, and the Transformer divides it by √d_k.",
)
# where next: each link a short name (a link's label is one line, which a 390 px phone cuts past about
# 30 characters) and what it offers in a caption under it, which wraps
NEXT = (("app_pages/exercises.py", "Exercises", "predict, compute, name the mechanism", ":material/edit_note:"),
        ("app_pages/compare.py", "Compare", "the mechanisms on your sentence", ":material/compare:"),
        ("app_pages/attribution.py", "Attention or attribution?", "does the heatmap explain the output?",
         ":material/science:"),
        ("app_pages/step_through.py", "Step through", "a decoder step, number by number", ":material/footprint:"))


def closing_card() -> None:
    """After the last stop: what the lesson taught, where to go next, and the student's score at
    the first answer (the one a class counts)."""
    first = st.session_state.get(FIRST, {})
    st.subheader("The end: what you learned")
    with st.container(border=True, key="lesson_closing"):
        st.markdown("On your own sentence, with the model's own numbers:\n" + "\n".join(f"- {line}" for line in LEARNED))
        if first:
            right = sum(first.values())
            st.metric("Right at the first answer", f"{right} of {len(first)}",
                      help="each stop's first checked answer (showing the answer before answering counts as not "
                           "right); later answers are not counted")
            missed = [f"{n}. {STOPS[n - 1].title}" for n in sorted(first) if not first[n]]
            if missed:
                st.caption("Worth another look: " + "; ".join(plain(m) for m in missed) + ".")
        else:
            st.caption("You have not answered a stop's question yet: each stop's first answer is scored here.")
        lesson_check.closing(STOPS)
        st.markdown("**Where next**")
        for page, label, offers, icon in NEXT:
            st.page_link(page, label=label, icon=icon)
            st.caption(offers[:1].upper() + offers[1:] + ".")


def keep_in_url(k: int, text: str) -> None:
    done = ",".join(str(n) for n in sorted(st.session_state[DONE]))
    set_query_params(stop=k, text=text.strip() or None, step=st.session_state.get(STEP) if k > 1 else None,
                     done=None if teacher_key() else done or None)  # a teacher's send carries no progress
    if done and st.session_state.get(PROGRESS_COOKIE) != done and not teacher_key():
        st.session_state[PROGRESS_COOKIE] = done  # written once per change: digits and dots only
        st.html(f"<script>document.cookie = '{PROGRESS_COOKIE}={done.replace(',', '.')}; path=/; max-age=86400; "
                "SameSite=Lax';</script>", unsafe_allow_javascript=True)


st.title("Lesson")
st.caption(f"{N} stops, about 15 minutes: your sentence through RNNsearch (Bahdanau et al. 2014), from the heatmap "
           "to the Transformer. Read, do the one thing each stop asks, answer its question; every number is the "
           "model's own.")
if LESSON_MODEL not in available_models():
    st.error("The lesson walks RNNsearch's record, and RNNsearch is not loaded here (checkpoints/rnnsearch).")
    st.stop()
first_visit()
lesson_check.from_link(query_param("check"))  # ?check=before: the teacher sent the class's check
k = st.session_state[STOP]
with st.expander("Your sentence", expanded=k == 1, icon=":material/edit:"):
    text = sentence_input("lesson")
st.session_state[TAG] = hashlib.sha1(text.encode()).hexdigest()[:10]
source_or_stop(available_models()[LESSON_MODEL], text)
navigation(k)
if teacher_key() and joined_class():  # the check's Open buttons, the halves open and the hand-ins, at the top
    class_check.controls(joined_class())
lesson_check.send_handed_in()
if st.session_state.get(lesson_check.OPEN):  # the check before or after the lesson, instead of the stop
    lesson_check.take(st.session_state[lesson_check.OPEN])
    keep_in_url(k, text)
    st.stop()
if k == 1 and lesson_check.to_take("before") and not teacher_key():
    lesson_check.offer("before")
if k == END:
    closing_card()
    keep_in_url(k, text)
    if teacher_key() and joined_class():
        class_check.gain_view(joined_class())
    st.stop()
stop = STOPS[k - 1]
st.subheader(f"{k}. {stop.title}")
card = Card(stop.slug)
shown = stop.draw(Lesson(text), card)
if shown is not None:
    question, link = shown
    ask(k, stop.slug, question)
    st.page_link(link.page, label=f"Explore this on its own page: {link.label}", icon=":material/open_in_new:",
                 query_params={n: str(v) for n, v in link.params.items()} or None)
else:
    st.caption(small("This stop has no question here: what it needs is missing."))
keep_in_url(k, text)
if teacher_key() and joined_class():
    class_view(k, stop.slug, shown[0] if shown is not None else None)
    if k == 1:
        class_check.gain_view(joined_class())
st.button("Next stop" if k < N else "Finish: what you learned", key="lesson_next_bottom",
          icon=":material/arrow_forward:", on_click=go, args=(k + 1,))
