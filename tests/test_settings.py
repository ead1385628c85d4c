"""The server's settings (server/settings.py): docs/settings.md is its table, and the table names
every variable the module reads."""
from __future__ import annotations

import re

from conftest import ROOT
from server import settings


def test_docs_settings_md_is_the_modules_table():
    doc = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert doc == settings.markdown(), "docs/settings.md is out of date: python -m server.settings > docs/settings.md"


def test_the_table_names_every_variable_the_module_reads():
    source = (ROOT / "server" / "settings.py").read_text(encoding="utf-8")
    code = source.replace(settings.__doc__, "")
    read = set(re.findall(r'"(ATTN_EXPLORER_[A-Z_]+)"', code))
    documented = [name for name, _, _ in settings.documented()]
    assert read and sorted(documented) == sorted(read)
    assert all(default and what for _, default, what in settings.documented())


def test_a_continued_row_joins_its_description(monkeypatch):
    monkeypatch.setattr(settings, "__doc__", "Intro.\n\nATTN_EXPLORER_X    (none)  first half\n"
                                             "                            second half\nATTN_EXPLORER_Y  3  three\n")
    assert settings.documented() == [("ATTN_EXPLORER_X", "(none)", "first half second half"),
                                     ("ATTN_EXPLORER_Y", "3", "three")]
