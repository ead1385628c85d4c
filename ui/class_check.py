"""The teacher's side of the class's check (``teaching/check.py``) on the Lesson page: at the top
of the page, open the check *before* and *after* (every item of that half becomes an exercise the
class counts, and the following screens open it), which halves are open, and the hand-ins live
(beside the class panel's live counts, ``ui.class_panel.live_counts``); and the gain view,
refreshed as answers arrive: per concept and per kind the class's mean share right before and
after, the normalised gain, each student's change as a dot plot (a student at the top before and
after drawn apart), the items most missed after (ties listed), the students who took one half
only, each item's difficulty and discrimination (``teaching/item_analysis.py``), and CSVs of every
counted answer and of the item analysis, by nickname (never an id).

Everyone in a class gets the same items: the seed is the class code (``ui.lesson_check``).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from server.class_store import AnswerRefused, class_store, NotTeacher, StoreUnavailable
from teaching.check import (class_check, class_gains, CONCEPT, exercise_id, gains, HALVES, most_missed, slots,
                            student_changes)
from teaching.item_analysis import item_analysis, MIN_STUDENTS
from ui import class_panel
from ui.class_live import live_look
from ui.class_session import class_answers, teacher_key
from ui.figures import chart
from ui.lesson_check import bleu, check_seed, the_check
from ui.lesson_stops import STOPS
from ui.widgets import plain
from viz.check import change_dots


def open_half(code: str, half: str) -> None:
    """Every item of ``half`` counted by the class from now on, and the following screens sent to it."""
    key = teacher_key()
    try:
        for concept, kind in slots(bleu()):
            class_store().add_exercise(key, code, exercise_id(half, f"{concept}-{kind}"))
        # the check before opens on stop 1, the check after on the closing card, where its gain shows
        class_store().send(key, code, "lesson", {"check": half, "stop": 1 if half == "before" else len(STOPS) + 1})
        st.session_state["class_check_opened"] = half
    except (StoreUnavailable, NotTeacher, AnswerRefused) as e:
        st.session_state["class_check_error"] = str(e)


def named(name: str, by: str) -> str:
    return CONCEPT[name].name if by == "concept" else name


def gains_frame(cc, by: str) -> pd.DataFrame:
    rows = [{by: named(g.name, by), "before": f"{g.pre:.0%}", "after": f"{g.post:.0%}",
             "gain ⟨g⟩": "—" if g.gain is None else f"{g.gain:+.2f}"} for g in class_gains(cc, by)]
    return pd.DataFrame(rows)


def answers_csv(cc, nicknames: dict[str, str]) -> bytes:
    """Every counted answer of the check: nickname, half, concept, kind, right (ids never leave)."""
    rows = [{"nickname": nicknames.get(s, "(removed)"), "half": half, "concept": slug.rpartition("-")[0],
             "kind": slug.rpartition("-")[2], "right": int(ok)}
            for half in HALVES for s, answers in cc.halves[half].items() for slug, ok in answers.items()]
    return pd.DataFrame(rows, columns=["nickname", "half", "concept", "kind", "right"]).to_csv(index=False).encode()


def open_halves(code: str) -> list[str]:
    """The halves the class counts now (their teacher opened them)."""
    try:
        return [h for h in HALVES if class_store().counts(code, exercise_id(h, "-".join(slots(bleu())[0])))]
    except StoreUnavailable:
        return []


def hand_ins(stored) -> dict[str, int]:
    """Per half, the students with a counted answer in it: the hand-ins."""
    cc = class_check(stored)
    return {h: len(cc.halves[h]) for h in HALVES}


def hand_ins_line(code: str) -> None:
    """The check's hand-ins, under the class's live counts at the top of the Lesson page (read again with them)."""
    stored = class_answers()
    n = hand_ins(stored) if stored else {}
    if any(n.values()):
        st.markdown(f"The check: **{n['before']}** handed in before · **{n['after']}** after")


def controls(code: str) -> None:
    """At the top of the teacher's Lesson page: *Open the check before* / *after* (an open half's
    button disabled: opening again would only re-send the screens), the halves open, the hand-ins live."""
    with st.container(key="class_check_controls", border=True):
        st.markdown("**The class's check**")
        opened = open_halves(code)
        row = st.container(horizontal=True)
        for half in HALVES:
            row.button(f"Open the check {half}", key=f"class_check_open_{half}", icon=":material/quiz:",
                       on_click=open_half, args=(code, half), disabled=half in opened)
        st.caption(("Open now: the check " + " and the check ".join(opened) + "; each student's first hand-in "
                    "counts.") if opened else "Not open yet: a student's check is practice until you open it.")
        if st.session_state.pop("class_check_opened", None):
            st.caption("Opened: the following screens show the check; every item's first answer counts.")
        if st.session_state.get("class_check_error"):
            st.warning(f"Not opened: {st.session_state.pop('class_check_error')}.")
        live_hand_ins(code)


@st.fragment
def live_hand_ins(code: str) -> None:
    """The class panel's live counts and the check's hand-ins: a live view (``ui/class_live.py``)."""
    live_look("check_counts")
    class_panel.live_counts(code)
    hand_ins_line(code)


def at_top(cc) -> dict[str, list[bool]]:
    """Per concept, each student (as ``student_changes`` orders them): right on all of it before and after."""
    out: dict[str, list[bool]] = {}
    for s in cc.both:
        for g in gains(cc.halves["before"][s], cc.halves["after"][s]):
            out.setdefault(g.name, []).append(g.pre >= 1 and g.post >= 1)
    return out


def spread(cc, nicknames: dict[str, str]) -> None:
    changes, top = student_changes(cc), at_top(cc)
    names = [nicknames.get(s, "(removed)") for s in cc.both]
    columns = {CONCEPT[c].short: v for c, v in changes.items()}
    said = "; ".join(f"{CONCEPT[c].name}: " + ", ".join(
        f"{nick} at the top before and after" if up else f"{nick} {100 * v:+.0f}"
        for nick, v, up in zip(names, values, top[c])) for c, values in changes.items())
    chart(change_dots(columns, {c: names for c in columns}, top={CONCEPT[c].short: t for c, t in top.items()}),
          "class-check-spread", "class_check_spread", alt="Each student's change per concept, in points of share right")
    st.caption(f"In words: {plain(said)}.")


def missed(cc, code: str) -> None:
    items = {i.slug: i for i in the_check("after", check_seed()).items} if code else {}
    top = most_missed(cc, "after")
    if not top:
        st.caption("No item missed after the lesson.")
        return
    st.markdown("**Most missed after the lesson**")
    for slug, wrong, answered in top:
        item = items.get(slug)
        st.caption(f"{wrong} of {answered} wrong: *{plain(CONCEPT[slug.rpartition('-')[0]].name)}*, "
                   f"{slug.rpartition('-')[2]}" + (f": {plain(item.question.prompt)}" if item else "."))
    with st.expander("Their answers"):  # closed: a projected page shows no solution until the teacher opens it
        for slug, _, _ in top:
            if slug in items:
                st.caption(f"*{plain(CONCEPT[slug.rpartition('-')[0]].name)}*: {plain(items[slug].question.show_me)}")


def item_frame(cc) -> pd.DataFrame:
    """Per half and item: the students it rests on, its difficulty (share right) and discrimination
    (point-biserial with the rest of the half), rounded as the page rounds; "too few to say" below
    MIN_STUDENTS; flagged where the strongest students miss it."""
    rows = []
    for it in item_analysis(cc.halves):
        concept, _, kind = it.slug.rpartition("-")
        said = ("too few to say" if not it.enough else "— (no spread)" if it.discrimination is None
                else f"{it.discrimination:+.2f}")
        rows.append({"half": it.half, "item": f"{CONCEPT[concept].name}, {kind}", "students": it.answered,
                     "right": f"{it.difficulty:.0%}", "discrimination": said,
                     "flag": "the strongest miss it" if it.flagged else ""})
    return pd.DataFrame(rows, columns=["half", "item", "students", "right", "discrimination", "flag"])


def items_csv(cc) -> bytes:
    """The item analysis as numbers: half, concept, kind, students, difficulty, discrimination (blank
    when too few or no spread), flagged."""
    rows = [{"half": it.half, "concept": it.slug.rpartition("-")[0], "kind": it.slug.rpartition("-")[2],
             "students": it.answered, "difficulty": round(it.difficulty, 3),
             "discrimination": round(it.discrimination, 3) if it.enough and it.discrimination is not None else None,
             "flagged": int(it.flagged)} for it in item_analysis(cc.halves)]
    columns = ["half", "concept", "kind", "students", "difficulty", "discrimination", "flagged"]
    return pd.DataFrame(rows, columns=columns).to_csv(index=False).encode()


def items(cc, code: str) -> None:
    st.markdown("**Item by item**")
    st.table(item_frame(cc).set_index("half"))
    st.caption(f"Right: the share of the students who took that half. Discrimination: how the item goes with the "
               f"rest of the check (point-biserial, −1 … +1; above about +0.2 it tells those who know from those who "
               f"do not), given from {MIN_STUDENTS} students up. Flagged: the students strongest on the rest miss it "
               "more than the others; look at its key and distractors. See docs/lesson.md.")
    st.download_button("Download the item analysis (CSV)", items_csv(cc), f"class-{code}-check-items.csv", "text/csv",
                       key="class_check_items_csv", on_click="ignore")


def gain_view(code: str) -> None:
    """The class's check, for its signed-in teacher: the gain per concept and kind, refreshed."""
    with st.container(key="class_check_view"):
        live_gain_view(code)


@st.fragment
def live_gain_view(code: str) -> None:
    """The gain view, a live view as the class panel's counts are (``ui/class_live.py``): answers
    arriving show without a click, and *Pause live updates* holds it still."""
    live_look("check_gain")
    _gain_view(code)


def _gain_view(code: str) -> None:
    st.subheader(f"Class {code}: the check before and after")
    stored = class_answers()
    if stored is None:
        return
    cc = class_check(stored)
    try:
        nicknames = class_store().nicknames(teacher_key(), code)
    except (StoreUnavailable, NotTeacher):
        nicknames = {}
    both = cc.both
    st.metric("Students who took both halves", len(both))
    for half in HALVES:
        alone = cc.only(half)
        if alone:
            st.caption(f"Took only the check {half} ({len(alone)}), not in the gain: "
                       + ", ".join(plain(nicknames.get(s, "(removed)")) for s in alone) + ".")
    if not both:
        st.caption("The gain appears once students have taken both halves.")
    else:
        st.table(gains_frame(cc, "concept").set_index("concept"))
        st.table(gains_frame(cc, "kind").set_index("kind"))
        st.caption("⟨g⟩ = (mean after − mean before) / (100% − mean before), over the students who took both halves: "
                   "the share of what was left to learn that the class learned; — where the class was already at "
                   "100% before. A class is not a controlled study: see docs/lesson.md.")
        spread(cc, nicknames)
        missed(cc, code)
    if any(cc.halves[h] for h in HALVES):
        items(cc, code)
        st.download_button("Download the check's answers (CSV, nicknames only)", answers_csv(cc, nicknames),
                           f"class-{code}-check.csv", "text/csv", key="class_check_csv", on_click="ignore")
