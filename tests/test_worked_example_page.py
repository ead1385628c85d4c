"""AppTest of the Worked example page (app_pages/worked_example.py)."""
from __future__ import annotations

from helpers.apptest import open_page


def equations(at) -> list[str]:
    """The page's equations: its own LaTeX elements, then each step's text (title, equations and
    note as one markdown element)."""
    return [x.value for x in at.latex] + [x.value for x in at.markdown if "$$" in x.value]


def test_worked_example_seed_and_edits_change_every_value():
    at = open_page("worked_example")
    latex = equations(at)
    body = " ".join(latex)
    for shape in (r"4 \times 8", r"8 \times 3", r"3 \times 1", r"4 \times 3", r"4 \times 1", r"1 \times 4"):
        assert shape in body
    at.number_input(key="we_seed").set_value(5).run()
    changed = equations(at)
    assert not at.exception
    # every equation with numbers changes; the additive tab's symbolic header stays
    assert sum(a != b for a, b in zip(latex, changed)) == len(latex) - 1
    assert len(at.dataframe) == 0  # the four editable tables are drawn only while their panel is open
    at.session_state["we_edit"] = True  # the student opens "Edit the numbers"
    at.run()
    assert len(at.dataframe) == 4 and equations(at) == changed
    at.session_state["we_s_5"] = {"edited_rows": {0: {"d1": 0.9}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert r"\left[\begin{array}{rrrr}0.90" in at.latex[0].value
    assert equations(at)[2] != changed[2]  # the concatenated matrix follows the edit
    edited = equations(at)
    at.session_state["we_edit"] = False  # closed: the edit stays
    at.run()
    assert len(at.dataframe) == 0 and equations(at) == edited
    at.session_state["we_edit"] = True  # opened again: the tables start from the edit, and a new one adds to it
    at.run()
    assert equations(at) == edited
    at.session_state["we_h_5"] = {"edited_rows": {1: {"d2": -0.7}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert r"\left[\begin{array}{rrrr}0.90" in at.latex[0].value and at.latex[0].value != edited[0]
    at.number_input(key="we_seed").set_value(6).run()  # a new seed starts afresh
    at.number_input(key="we_seed").set_value(5).run()
    assert equations(at) == changed


def test_only_the_chosen_tab_is_drawn():
    """The page opens on the additive score (as a sent page does for the whole class); the dot
    product's equations and the comparison are drawn when their tab is chosen, from the same inputs."""
    at = open_page("worked_example")
    first = " ".join(equations(at))
    assert r"v_a^\top \tanh" in first and "s_i^\\top h_j" not in first and not at.dataframe and not at.get("plotly_chart")
    at.session_state["we_tab"] = "Dot product (Luong)"  # the tab clicked
    at.run()
    dot = " ".join(equations(at))
    assert "s_i^\\top h_j" in dot and r"v_a^\top \tanh" not in dot and not at.exception
    at.session_state["we_tab"] = "Compare"
    at.run()
    assert len(at.dataframe) == 1 and len(at.get("plotly_chart")) == 1 and not at.exception
    assert len(at.dataframe[0].value) == 2  # the two scores' costs
