"""The teacher's sign-in and key on the page (ui/class_panel.py, AppTest): wrong keys
make a session wait, even for the right key; *New key* replaces the key in the store and keeps
the teacher signed in with the new one."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from helpers.apptest import new_app

from conftest import ROOT
from server.class_store import ClassStore
from server.sign_in import sign_in_attempts

APP = str(ROOT / "navigation.py")


@pytest.fixture
def store(tmp_path, monkeypatch, tiny_zoo):
    """A store of its own with a generated key (no ATTN_EXPLORER_TEACHER_KEY), the app pointed at it."""
    url = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    monkeypatch.setenv("ATTN_EXPLORER_CLASS_DB", url)
    monkeypatch.delenv("ATTN_EXPLORER_TEACHER_KEY", raising=False)
    s = ClassStore(url)
    yield s
    s.engine.dispose()
    sign_in_attempts.clear()  # this module's wrong keys, counted for the address "local"


def panel() -> AppTest:
    at = new_app(APP, 60)
    at.session_state["class_panel"] = True  # the sidebar's Class panel, opened
    at.run()
    assert not at.exception
    return at


def sign_in(at: AppTest, key: str) -> str:
    at.text_input(key="class_key_box").set_value(key)
    at.button(key="class_sign_in").click().run()
    assert not at.exception
    return " ".join(w.value for w in at.warning)


def test_wrong_keys_make_the_session_wait(store):
    at = panel()
    for _ in range(5):
        assert "That is not the teacher key." in sign_in(at, "a-wrong-guess-here")
    assert "Too many wrong keys: try again in" in sign_in(at, store.teacher_key())  # not even checked now
    assert "class_teacher_key" not in at.session_state
    other = panel()  # another session from the same address: its own count, the address's limit not reached
    sign_in(other, store.teacher_key())
    assert other.session_state["class_teacher_key"] == store.teacher_key()


def test_new_key_replaces_the_key_and_keeps_the_teacher_signed_in(store):
    old = store.teacher_key()
    at = panel()
    sign_in(at, old)
    at.button(key="class_new_key").click().run()  # without typing the current key: refused
    assert not at.exception and store.teacher_key() == old
    at.text_input(key="class_new_key_current").set_value(old)
    at.button(key="class_new_key").click().run()
    assert not at.exception
    new = store.teacher_key()
    assert new != old and at.session_state["class_teacher_key"] == new
    assert [c.value for c in at.code if c.value == new] == [new]  # shown once, in the popover
    assert not store.is_teacher(old)
