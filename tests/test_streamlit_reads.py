"""The switch covers every private read (server/streamlit_patches/reads.py): with
``ATTN_EXPLORER_STREAMLIT_PATCHES=none`` no code of the app reads a private attribute of
Streamlit's runtime objects during a class's page runs (AppTest: the teacher signs in, opens a
class and sends a page, a student follows it and answers), and a superseded run is not read for.
The audit is an attribute trap: each runtime class's ``__getattribute__`` notes every ``_name``
asked for from a file of the app (Streamlit's own reads of its own state are not ours)."""
from __future__ import annotations

import sys

import pytest

from helpers.apptest import new_app

from conftest import ROOT, TEACHER_KEY
from server.serving import ENV
from server.streamlit_patches import reads

APP = str(ROOT / "navigation.py")
STREAMLIT_CLASSES = (  # the runtime objects a page run can reach from the app's code
    ("streamlit.runtime.scriptrunner_utils.script_requests", ("ScriptRequests", "RerunData")),
    ("streamlit.runtime.scriptrunner_utils.script_run_context", ("ScriptRunContext",)),
    ("streamlit.runtime.state.safe_session_state", ("SafeSessionState",)),
    ("streamlit.runtime.state.session_state", ("SessionState",)),
    ("streamlit.runtime.state.session_state_proxy", ("SessionStateProxy",)),
    ("streamlit.runtime.pages_manager", ("PagesManager",)),
    ("streamlit.runtime.app_session", ("AppSession",)),
    ("streamlit.runtime.runtime", ("Runtime",)),
    ("streamlit.runtime.context", ("ContextProxy",)),
    ("streamlit.runtime.state.query_params_proxy", ("QueryParamsProxy",)),
    ("streamlit.navigation.page", ("StreamlitPage",)),
)
APP_FOLDERS = tuple(str(ROOT / folder) + "/" for folder in ("server", "ui", "app_pages", "model", "viz", "teaching"))
APP_FILES = (str(ROOT / "navigation.py"), str(ROOT / "app.py"))


@pytest.fixture
def private_reads():
    """Every private attribute of a Streamlit runtime object read from the app's code, as
    ``Class._name (file:line)``, while the test runs."""
    import importlib
    found: list[str] = []
    trapped = []
    for module, names in STREAMLIT_CLASSES:
        for name in names:
            cls = getattr(importlib.import_module(module), name)
            own = cls.__dict__.get("__getattribute__")
            trapped.append((cls, own))
            cls.__getattribute__ = _trap(cls, cls.__getattribute__, found)
    yield found
    for cls, own in trapped:
        if own is None:
            del cls.__getattribute__
        else:
            cls.__getattribute__ = own


def _trap(cls, streamlits, found: list[str]):
    def __getattribute__(self, name):
        if name.startswith("_") and not name.startswith("__"):
            caller = sys._getframe(1)
            where = caller.f_code.co_filename
            if where.startswith(APP_FOLDERS) or where in APP_FILES:
                found.append(f"{cls.__name__}.{name} ({where.removeprefix(str(ROOT) + '/')}:{caller.f_lineno})")
        return streamlits(self, name)
    return __getattribute__


def a_class_run(store) -> None:
    """The teacher signs in on the Exercises page, opens a class and sends the page; a student
    follows the class link and answers; the teacher's next run reads the answer."""
    teacher = new_app(APP, 60)
    teacher.query_params.update({"ex": "step", "seed": "4"})
    teacher.run()
    teacher.switch_page("app_pages/exercises.py")
    teacher.session_state["class_panel"] = True
    teacher.run()
    teacher.text_input(key="class_key_box").set_value(TEACHER_KEY)
    teacher.button(key="class_sign_in").click().run()
    teacher.button(key="class_open").click().run()
    code = teacher.session_state["class_code"]
    teacher.button(key="class_send").click().run()
    student = new_app(APP, 60)
    student.query_params.update({"class": code})
    student.run()
    student.run()
    student.button(key="ex_check_step:4").click().run()
    teacher.run()
    assert not teacher.exception and not student.exception, [e.value for e in (*teacher.exception, *student.exception)]
    assert store.class_counts(TEACHER_KEY, code).joined == 1


def test_with_the_switch_at_none_a_class_reads_nothing_private_of_streamlit(store, monkeypatch, private_reads):
    monkeypatch.setenv(ENV, "none")
    a_class_run(store)
    requests = reads.script_requests()
    requests.request_stop()
    assert not reads.superseded(requests)  # no early abandonment: the run stops at its next Streamlit call
    assert private_reads == []


def test_the_trap_sees_the_private_reads_where_the_switch_chooses_them(store, monkeypatch, private_reads):
    """The same run with the reads on: the trap notes ``connection_id``'s and ``superseded``'s
    reads, so the test above would see one that is not behind the switch."""
    monkeypatch.setenv(ENV, "all")
    a_class_run(store)
    requests = reads.script_requests()
    requests.request_stop()
    assert reads.superseded(requests)
    read = {entry.split(" ")[0] for entry in private_reads}
    assert {"SafeSessionState._state", "ScriptRequests._state"} <= read, private_reads
    assert all("server/streamlit_patches/reads.py" in entry for entry in private_reads), private_reads


def test_the_version_gate_covers_the_reads(monkeypatch, private_reads):
    """A Streamlit other than the one the reads were written for: they read nothing, whatever the switch."""
    monkeypatch.setenv(ENV, "all")
    monkeypatch.setattr(reads.SUPERSEDED, "streamlit", "99.0.0")
    requests = reads.script_requests()
    requests.request_stop()
    assert not reads.superseded(requests) and private_reads == []
