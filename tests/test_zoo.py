"""The zoo's names (model/zoo.py) are kept in one place: each name's kind is its config's, the
scripts read them from ``python -m model.zoo --names``, and no script or bench lists them by hand."""
from __future__ import annotations

import re

import pytest

from helpers.cli import ROOT, run
from model.config import load_run_config
from model.zoo import DISPLAY_NAMES, KINDS, ZOO, zoo_names

# the places that used to keep the zoo's names by hand: they now read model/zoo.py
READERS = [*sorted((ROOT / "scripts").glob("*.sh")), *sorted((ROOT / "bench").glob("*.py"))]


@pytest.mark.parametrize("name", ZOO)
def test_each_models_kind_is_its_configs(name):
    model = load_run_config(str(ROOT / "configs" / f"{name}.yaml")).model
    assert (model.decoder, model.attention) == KINDS[name] and name in DISPLAY_NAMES


def test_the_selections_of_the_zoo():
    assert zoo_names() == list(ZOO)
    assert zoo_names(attending=True) == [n for n in ZOO if n != "rnnenc"]
    assert zoo_names(recurrent=True) == [n for n in ZOO if n != "transformer"]
    assert zoo_names(attending=True, recurrent=True) == [n for n in ZOO if n not in ("rnnenc", "transformer")]


def test_the_shell_scripts_read_the_names_from_the_module():
    def names(*flags: str) -> list[str]:
        return run("-m", "model.zoo", "--names", *flags).stdout.split()
    assert names() == list(ZOO) and names("--attending") == zoo_names(attending=True)
    assert names("--recurrent") == zoo_names(recurrent=True)


def test_no_script_or_bench_lists_the_zoo_by_hand():
    """Five zoo names side by side in a script or a bench (a list, a loop): a copy of the zoo or of
    a selection of it (the RNNs, the models with attention) that a new model would have to be
    added to. A page's or a lesson's choice of a few models to compare is its own."""
    one = "|".join(re.escape(n) for n in ZOO)
    by_hand = re.compile(rf"({one})(?:[\"',\s]+({one})){{4}}\b")
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in READERS
             for m in [by_hand.search(p.read_text(encoding="utf-8"))] if m]
    assert found == []
