"""The widgets the pages share (ui/widgets.py)."""
from __future__ import annotations


def test_small_type_only_where_the_brackets_pair_up():
    """Step through's notes quote tokens; one with a lone bracket would end ``:small[…]`` early."""
    from ui.widgets import plain, small
    assert small("goes to `▁the`: the framed row") == ":small[goes to `▁the`: the framed row]"
    assert small("goes to `[` and `]`") == ":small[goes to `[` and `]`]"
    assert small("goes to `](`: the framed row") == "goes to `](`: the framed row"
    assert small("goes to `[x`") == "goes to `[x`"
    assert small(f"the token {plain('](')} is fed back in").startswith(":small[")  # escaped brackets pair with none
