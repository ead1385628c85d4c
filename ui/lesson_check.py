"""The Lesson page's check before stop 1 and after the last stop (``teaching/check.py``): the
offer (optional), the items in one form, handed in at once, and on the closing card the
student's own gain per concept and the stops to look at again.

One seed per check: a class's code (everyone in the class gets the same items), else a seed of
the student's own, kept in the browser's cookie with their answers (a reload, or a page the
teacher sends, which opens as a new session, keeps the check taken). In a class each item's answer
is stored under its own exercise id (``check:before:weights-transfer``) through
``class_session.record_answer``, like every answer: the first counts, and only once the teacher
opened that half. A half taken before the teacher opened it is practice: the student is told so
when it is offered and when it is handed in, and it is offered again once the teacher opens it,
that time counted (docs/lesson.md).
"""
from __future__ import annotations

import secrets
import zlib

import pandas as pd
import streamlit as st

from server import settings
from server.answers import answer_record
from teaching.check import (Check, check_pair, CONCEPT, exercise_id, gains, HALVES, Item, KINDS, length_tables,
                            LengthTables, slots, to_revisit)
from teaching.lesson_questions import Question
from server.class_store import class_store, StoreUnavailable
from ui.class_session import joined_class, KEPT, LESSON_CHECK_COOKIE, page_cookie, record_answer, teacher_key
from ui.lesson_stops import bleu_table, BLEU_CSV, LESSON_MODEL
from ui.teaching_pages import cached_greedy, cached_values
from ui.zoo_cache import checkpoints_root, shared_result
from ui.widgets import plain

OPEN = "lesson_prepost_open"      # the half being taken now, or absent
# half -> {item slug: right}; a class_ key (class_session.KEPT), so that following the teacher to the check
# after, which drops the page's other keys, keeps the check before
TAKEN = KEPT + "lesson_check_taken"
SEED = "lesson_prepost_seed"      # the browser tab's own seed (no class joined)
TO_SEND = "lesson_prepost_to_send"  # a half handed in, its answers not yet stored in the class
LINKED = "lesson_check_linked"  # the half a link last opened: Not now closes it for good
# the halves taken in a class before its teacher opened them (not counted): a class_ key, kept as TAKEN is
PRACTISED = KEPT + "lesson_check_practised"
CHECKS_KEPT = 64                # seeds whose checks a process keeps: its classes' and its students' alone
MINUTES = 3                     # what the offer says a check takes: 8 items, ~20 s each


def check_seed() -> int:
    """The class's seed (its code: the same items for everyone in it), else the student's own: the
    one their cookie keeps with the answers of a check taken (a reload asks the same items and
    finds them taken), or a new one."""
    code = joined_class()
    if code:
        return zlib.crc32(code.encode())
    if SEED not in st.session_state:
        kept = str(page_cookie(COOKIE) or "").split(".")[0]
        st.session_state[SEED] = int(kept) if kept.isdigit() and len(kept) <= 10 else secrets.randbelow(10 ** 6)
    return st.session_state[SEED]


def bleu() -> pd.DataFrame | None:
    path = settings.results() / BLEU_CSV
    return bleu_table(str(path), path.stat().st_mtime) if path.exists() else None


def the_check(half: str, seed: int | None = None) -> Check:
    """The ``half`` check of ``seed`` (the browser tab's by default), its records from the app's shared caches."""
    seed = check_seed() if seed is None else seed
    path = settings.results() / BLEU_CSV
    pair = _check_pair(seed, checkpoints_root(), str(path), path.stat().st_mtime if path.exists() else 0.0)
    return pair[HALVES.index(half)]


@shared_result(max_entries=CHECKS_KEPT)
def _check_pair(seed: int, root: str, bleu_path: str, modified: float) -> tuple[Check, Check]:
    """Both halves of a seed, once per process (a class's seed serves every student of it): drawing
    them reads six records and the BLEU table, a fifth of a second of CPU, on every rerun otherwise."""
    return check_pair(seed, lambda t: cached_greedy(LESSON_MODEL, t), lambda t: cached_values(LESSON_MODEL, t),
                      _length_tables(bleu_path, modified) if modified else None)


@shared_result()
def _length_tables(path: str, modified: float) -> LengthTables | None:
    """The BLEU table's length-item pivots, made once per version of the file for every seed's
    check (made per check, they would be most of a new seed's check's CPU)."""
    return length_tables(bleu_table(path, modified))


# "SEED.BEFORE.AFTER", each half its items' right (1) and wrong (0) in slot order, after a "p" when
# it was practice (taken in a class before the teacher opened it)
COOKIE = LESSON_CHECK_COOKIE


def taken() -> dict:
    """half -> {item slug: right}; at a session's first look, what the browser's cookie kept (a
    reload, or a page the teacher sends, opens as a new session: the check before stays taken)."""
    if TAKEN not in st.session_state:
        st.session_state[TAKEN] = {}
        st.session_state[PRACTISED] = set()
        seed, *halves = str(page_cookie(COOKIE) or "").split(".") + ["", ""]
        names = [f"{c}-{k}" for c, k in slots(bleu())]
        if seed == str(check_seed()):
            for half, bits in zip(HALVES, halves):
                if bits.startswith("p"):
                    bits = bits[1:]
                    st.session_state[PRACTISED].add(half)
                if len(bits) == len(names) and set(bits) <= {"0", "1"}:
                    st.session_state[TAKEN][half] = {n: b == "1" for n, b in zip(names, bits)}
    return st.session_state[TAKEN]


def practised() -> set:
    """The halves taken as practice in a class: before its teacher opened them, so not counted."""
    taken()
    return st.session_state.setdefault(PRACTISED, set())


def counts(half: str) -> bool | None:
    """Does the joined class count ``half`` now (its teacher opened it)? None outside a class, or
    when the class store does not answer."""
    code = joined_class()
    if not code or teacher_key():
        return None
    try:
        return class_store().counts(code, exercise_id(half, "-".join(slots(bleu())[0])))
    except StoreUnavailable:
        return None


def to_take(half: str) -> bool:
    """Is ``half`` still to take: never taken, or taken as practice and counted now?"""
    return half not in taken() or (half in practised() and counts(half) is True)


def keep_in_cookie() -> None:
    """The checks taken, in the browser's own cookie: digits, dots and "p" only, for a day."""
    done = taken()
    value = ".".join([str(check_seed())] + [("p" if h in practised() and h in done else "")
                                             + "".join("1" if ok else "0" for ok in done.get(h, {}).values())
                                             for h in HALVES])
    st.html(f"<script>document.cookie = '{COOKIE}={value}; path=/; max-age=86400; SameSite=Lax';</script>",
            unsafe_allow_javascript=True)


def start(half: str) -> None:
    st.session_state[OPEN] = half


def from_link(half: str | None) -> None:
    """A link naming a half (the teacher's send, ``?check=before``) opens it, once: not after it was
    taken (unless as practice, before the teacher opened it), and not for the teacher."""
    if half in HALVES and not teacher_key() and st.session_state.get(LINKED) != half and to_take(half):
        st.session_state[LINKED] = st.session_state[OPEN] = half


def whether_counted(half: str) -> None:
    """In a class, what becomes of this half's answers: counted, or practice (and what then)."""
    counted = counts(half)
    if counted is None:
        return
    if counted and half in practised():
        st.info(f"You took this check as practice before your teacher opened it, so it was not counted. Your "
                f"teacher has opened it now: take it again; this time your first answers count in class "
                f"{joined_class()}.", icon=":material/replay:")
    elif counted:
        st.caption(f"Counted: your teacher opened this check, and class {joined_class()} counts your first answers.")
    else:
        st.caption("Practice, not counted yet: your teacher has not opened this check. When they open it, the "
                   "lesson offers it again, and that time your answers count.")


def offer(half: str) -> None:
    """The invitation: optional, how long, what it is for."""
    items = len(slots(bleu()))
    with st.container(key=f"lesson_prepost_offer_{half}"):  # an info box: the stop's own text stays its first markdown
        if half == "before":
            st.info(f"**Before you start: a short check** (optional, {items} items, about {MINUTES} minutes). "
                    "Take it now and the same kind of check after the last stop: the end of the lesson shows "
                    "what you gained, concept by concept.", icon=":material/quiz:")
        else:
            st.info(f"**The check after the lesson** ({items} items, about {MINUTES} minutes): the same "
                    "concepts as before, on new sentences and numbers.", icon=":material/quiz:")
        whether_counted(half)
        st.button("Take the check before the lesson" if half == "before" else "Take the check after the lesson",
                  key=f"lesson_prepost_start_{half}", icon=":material/quiz:", on_click=start, args=(half,))


def widget_key(half: str, item: Item) -> str:
    return f"lesson_prepost_{half}_{item.slug}_{item.question.key}"


def item_input(half: str, n: int, item: Item):
    q: Question = item.question
    label = f"{n}. {q.prompt}"
    if q.choices and len(q.choices) <= 6:
        return st.radio(label, q.choices, index=None, key=widget_key(half, item))
    if q.choices:
        return st.selectbox(label, q.choices, index=None, key=widget_key(half, item), placeholder="Choose an answer")
    return st.number_input(label, value=None, step=10.0 ** -(q.digits or 0), format=f"%.{q.digits or 0}f",
                           key=widget_key(half, item), placeholder="Type a number")


def hand_in(half: str, check: Check) -> None:
    """*Hand in* (a callback): every item scored, a blank as wrong; the check closed."""
    given = {item.slug: st.session_state.get(widget_key(half, item)) for item in check.items}
    taken()[half] = {slug: check.items[n].question.check(v) for n, (slug, v) in enumerate(given.items())}
    st.session_state[TO_SEND] = (half, given)
    st.session_state.pop(OPEN, None)


def take(half: str) -> None:
    """The check itself: every item in one form, handed in at once."""
    check = the_check(half)
    st.subheader("The check before the lesson" if half == "before" else "The check after the lesson")
    st.caption("Answer what you can; a blank counts as not known. Numbers: the precision each item states. "
               "The answers are not shown: the end of the lesson says which concepts to look at again.")
    whether_counted(half)
    with st.form(f"lesson_prepost_form_{half}", border=True):
        for n, item in enumerate(check.items, 1):
            item_input(half, n, item)
        st.form_submit_button("Hand in", key=f"lesson_prepost_hand_in_{half}", icon=":material/done_all:",
                              type="primary", on_click=hand_in,
                              args=(half, check))
    st.button("Not now", key=f"lesson_prepost_skip_{half}", on_click=lambda: st.session_state.pop(OPEN, None))


def send_handed_in() -> None:
    """In a class, the answers of the half just handed in, one stored answer per item; a half the
    teacher has not opened is kept as practice, the student told so, and offered again once opened."""
    pending = st.session_state.pop(TO_SEND, None)
    if pending is None:
        return
    half, given = pending
    counted = counts(half)
    practised().discard(half)
    if counted is False:
        practised().add(half)
    keep_in_cookie()
    if not joined_class():
        return
    if counted is False:
        st.info("Handed in as practice, not counted: your teacher has not opened this check yet. When they open "
                "it, the lesson offers it again, and that time your answers count.", icon=":material/info:")
        return
    right = taken().get(half, {})
    with st.expander("In the class: counted", expanded=False):
        for slug, value in given.items():
            label = "no answer" if value is None else str(value)
            record_answer(exercise_id(half, slug), answer_record(label, right[slug], [] if right[slug] else [label]),
                          right[slug])


def gain_table(before: dict, after: dict, by: str = "concept") -> pd.DataFrame:
    """Per concept (or kind): the share right before and after, and the gain in words."""
    rows = []
    for g in gains(before, after, by):
        name = CONCEPT[g.name].name if by == "concept" else g.name
        rows.append({"concept" if by == "concept" else "kind": name, "before": f"{g.pre:.0%}",
                     "after": f"{g.post:.0%}", "gain": g.said()})
    return pd.DataFrame(rows)


def go_to(stop: int) -> None:
    st.session_state["lesson_stop"] = stop


def closing(stops: list) -> None:
    """On the closing card: the after check offered, then the gain per concept and the stops to revisit."""
    done = taken()
    if to_take("after"):  # not taken, or taken as practice and opened by the teacher since
        if teacher_key():  # the teacher's own tries are not the class's: their view is the class's gain
            return
        if "before" in done:
            offer("after")
        else:
            st.caption("The check before the lesson was not taken, so there is no gain to show; the check after it "
                       "still says what to look at again.")
            offer("after")
        return
    st.markdown("**Your check**")
    if "before" in done:
        st.table(gain_table(done["before"], done["after"]).set_index("concept"))
        st.caption("Gain g = (after − before) / (100% − before): the share of what was left to learn that you "
                   "learned. One or two items per concept: a rough signal, not a grade. By kind: "
                   + "; ".join(f"{r['kind']} {r['before']} → {r['after']} ({r['gain']})"
                               for r in gain_table(done["before"], done["after"], "kind").to_dict("records")) + ".")
    right = sum(done["after"].values())
    st.metric("Right in the check after the lesson", f"{right} of {len(done['after'])}")
    missed = to_revisit(done["after"])
    if not missed:
        st.caption("Nothing to revisit: every concept right after the lesson.")
    for concept, at in missed:
        st.caption(f"Look again at *{plain(concept.name)}*: " + ", ".join(
            f"stop {k}, {plain(stops[k - 1].title)}" for k in at) + ".")
        row = st.container(horizontal=True)
        for k in at:
            row.button(f"Stop {k}", key=f"lesson_prepost_revisit_{concept.slug}_{k}", on_click=go_to, args=(k,))


__all__ = ["check_seed", "the_check", "offer", "take", "send_handed_in", "closing", "gain_table", "to_take", "OPEN",
           "TAKEN", "KINDS"]
