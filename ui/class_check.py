"""The teacher's side of the class's check (``teaching/check.py``) on the Lesson page: open the
check *before* and *after* (every item of that half becomes an exercise the class counts, and
the following screens open it), and the gain view: per concept and per kind the class's mean
share right before and after, the normalised gain, each student's change as a dot plot, the items
most missed after, the students who took one half only, and a CSV of every counted answer by
nickname (never an id).

Everyone in a class gets the same items: the seed is the class code (``ui.lesson_check``).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from server.class_store import AnswerRefused, class_store, NotTeacher, StoreUnavailable
from teaching.check import (class_check, class_gains, CONCEPT, exercise_id, HALVES, most_missed, slots,
                            student_changes)
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


def controls(code: str) -> None:
    row = st.container(horizontal=True)
    for half in HALVES:
        row.button(f"Open the check {half}", key=f"class_check_open_{half}", icon=":material/quiz:",
                   on_click=open_half, args=(code, half))
    if st.session_state.pop("class_check_opened", None):
        st.caption("Opened: the following screens show the check; every item's first answer counts.")
    if st.session_state.get("class_check_error"):
        st.warning(f"Not opened: {st.session_state.pop('class_check_error')}.")


def spread(cc, nicknames: dict[str, str]) -> None:
    changes = student_changes(cc)
    names = [nicknames.get(s, "(removed)") for s in cc.both]
    columns = {CONCEPT[c].short: v for c, v in changes.items()}
    said = "; ".join(f"{CONCEPT[c].name}: " + ", ".join(f"{nick} {100 * v:+.0f}" for nick, v in zip(names, values))
                     for c, values in changes.items())
    chart(change_dots(columns, {c: names for c in columns}), "class-check-spread", "class_check_spread",
          alt="Each student's change per concept, in points of share right")
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


def gain_view(code: str) -> None:
    """The class's check, for its signed-in teacher: controls, then the gain per concept and kind."""
    with st.container(key="class_check_view"):
        _gain_view(code)


def _gain_view(code: str) -> None:
    st.subheader(f"Class {code}: the check before and after")
    controls(code)
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
        return
    st.table(gains_frame(cc, "concept").set_index("concept"))
    st.table(gains_frame(cc, "kind").set_index("kind"))
    st.caption("⟨g⟩ = (mean after − mean before) / (100% − mean before), over the students who took both halves: "
               "the share of what was left to learn that the class learned; — where the class was already at "
               "100% before. A class is not a controlled study: see docs/lesson.md.")
    spread(cc, nicknames)
    missed(cc, code)
    st.download_button("Download the check's answers (CSV, nicknames only)", answers_csv(cc, nicknames),
                       f"class-{code}-check.csv", "text/csv", key="class_check_csv", on_click="ignore")
