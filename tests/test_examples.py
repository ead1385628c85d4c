"""The example sentences (ui/examples.py)."""
from __future__ import annotations


def test_examples_cover_every_domain():
    from ui.examples import DEFAULT_SENTENCE, EXAMPLES
    domains = {e.domain.split(",")[0] for e in EXAMPLES.values()}
    assert {"Everyday", "Image caption", "Parliament", "News"} <= domains
    assert sum(e.domain.startswith("Paper, Fig. 3") for e in EXAMPLES.values()) == 4
    assert DEFAULT_SENTENCE in EXAMPLES
    assert all(e.reference for e in EXAMPLES.values() if e.domain.startswith(("News", "Paper")))
