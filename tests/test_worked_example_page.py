"""AppTest of the Worked example page (app_pages/worked_example.py)."""
from __future__ import annotations

from helpers.apptest import open_page


def test_worked_example_seed_and_edits_change_every_value():
    at = open_page("worked_example")
    latex = [x.value for x in at.latex]
    body = " ".join(latex)
    for shape in (r"4 \times 8", r"8 \times 3", r"3 \times 1", r"4 \times 3", r"4 \times 1", r"1 \times 4"):
        assert shape in body
    at.number_input(key="we_seed").set_value(5).run()
    changed = [x.value for x in at.latex]
    assert not at.exception
    # every equation with numbers changes; the two symbolic headers stay
    assert sum(a != b for a, b in zip(latex, changed)) == len(latex) - 2
    at.session_state["we_s_5"] = {"edited_rows": {0: {"d1": 0.9}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert r"\left[\begin{array}{rrrr}0.90" in at.latex[0].value
    assert at.latex[2].value != changed[2]  # the concatenated matrix follows the edit
