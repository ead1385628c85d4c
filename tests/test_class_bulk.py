"""*Remove many* in the teacher's Class panel (``ui/class_bulk.py``), AppTest on the tiny zoo and a
class store of the test's own: a batch of students who joined in the last minutes and never
answered leaves the roster in one press, those who answered stay, and *Undo* puts the batch back."""
from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from helpers.apptest import new_app

from conftest import ROOT, TEACHER_KEY
from server.class_store import new_session_id


def teacher_on(code: str) -> AppTest:
    """The teacher's tab on the class (signed in first: a tab without the key that opens a class link joins it)."""
    at = new_app(str(ROOT / "navigation.py"), 60)
    at.session_state["class_panel"] = True
    at.run()
    at.text_input(key="class_key_box").set_value(TEACHER_KEY)
    at.button(key="class_sign_in").click().run()
    at.query_params["class"] = code
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_remove_many_takes_the_silent_newcomers_in_one_press_and_undo_puts_them_back(store):
    code = store.open_class(TEACHER_KEY).code
    honest = new_session_id()
    store.join(code, honest, "10.0.0.1")
    store.submit(code, "which:0", honest, {"label": "x"}, True)
    fakes = [new_session_id() for _ in range(5)]
    names = sorted(store.join(code, f, "10.0.0.1").nickname for f in fakes)
    at = teacher_on(code)
    at.selectbox(key="class_bulk_who").set_value("joined in the last minutes and has not answered").run()
    assert at.number_input(key="class_bulk_minutes").value == 5
    assert any(c.value.startswith("Now: 5 students (") for c in at.caption), [c.value for c in at.caption]
    at.button(key="class_bulk_remove").click().run()
    assert not at.exception
    assert [m.nickname for m in store.roster_of(TEACHER_KEY, code)] == [store.member(code, honest).nickname]
    assert any(c.value == "Removed 5: their answers left the summary." for c in at.caption)
    assert store.follow(code).removals == 5
    at.button(key="class_bulk_undo").click().run()
    assert not at.exception
    assert sorted(m.nickname for m in store.roster_of(TEACHER_KEY, code) if m.answers == 0) == names
    at.selectbox(key="class_bulk_who").set_value("has not answered").run()
    assert any(c.value.startswith("Now: 5 students (") for c in at.caption)
    at.selectbox(key="class_bulk_who").set_value("joined in the last minutes").run()
    at.number_input(key="class_bulk_minutes").set_value(1).run()
    assert time.time() - store.roster_of(TEACHER_KEY, code)[0].joined_at < 60  # all joined within the minute
    assert any(c.value.startswith("Now: 6 students (") for c in at.caption)
