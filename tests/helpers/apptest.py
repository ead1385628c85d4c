"""Driving the app's pages with Streamlit's AppTest on the tiny zoo: open a page from its link, run
it, and read what it drew (texts, figures, heatmaps as numpy arrays)."""
from __future__ import annotations

import base64
import json
import random

import numpy as np
from streamlit.testing.v1 import AppTest

from helpers import ROOT
from server.streamlit_patches.testing import shared_components

APP = str(ROOT / "navigation.py")
TIMEOUT = 60


def array(value) -> np.ndarray:
    """A Plotly JSON array: a plain list, or Plotly 6+'s typed array {dtype, bdata, shape}."""
    if isinstance(value, dict) and "bdata" in value:
        a = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return a.reshape([int(n) for n in str(value["shape"]).split(",")]) if "shape" in value else a
    return np.asarray(value)


def figures(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def heatmaps(at: AppTest) -> list[dict]:
    """Every heatmap figure on the page (as figure JSON)."""
    return [f for f in figures(at) if f["data"] and f["data"][0]["type"] == "heatmap"]


def texts(at: AppTest) -> list[str]:
    """Everything the page says in markdown-like elements."""
    return [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success", "subheader", "title")
            for e in getattr(at, kind)]


def escaped(tokens: list[str]) -> list[str]:
    return [t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for t in tokens]


def record_of(model: str, text: str, beam: int = 1):
    """What the model itself says, to compare the page's figures against."""
    from ui.zoo_cache import cached_translate
    return cached_translate(model, text, beam)


def new_app(path: str = APP, timeout: float = TIMEOUT) -> AppTest:
    """A new AppTest of ``path`` (the app by default): a new session, sharing the process's registry
    of Streamlit components (server/streamlit_patches/testing.py) rather than making its own."""
    return shared_components(AppTest.from_file(path, default_timeout=timeout))


def run(at) -> AppTest:
    """Run the app (or rerun it after a widget change) and fail on any exception."""
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def translate_app(text: str | None = None, **params) -> AppTest:
    at = new_app()
    if text is not None:
        at.query_params["text"] = text
    for k, v in params.items():
        at.query_params[k] = v
    return run(at)


def page(path: str, **params) -> AppTest:
    """A page other than the default one, opened with the given URL parameters."""
    at = run(new_app())  # AppTest switches pages only after a first run
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(path)
    return run(at)


def toy_test_split(folder, n: int = 60, seed: int = 5):
    """A test.tsv of digit-reversal pairs, 1–14 digits, from two corpora, as model.data reads it."""
    from model.toy import toy_pair
    rng = random.Random(seed)
    rows = ["en\tfr\torigin"]
    for k in range(n):
        src, trg = toy_pair("reverse", rng, 1, 14)
        rows.append(f"{src}\t{trg}\t{'toy-a' if k % 2 else 'toy-b'}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


DIGITS = "1 2 3 4 5"


def chart(at: AppTest, key: str) -> dict:
    """The figure JSON of the Plotly chart with this key."""
    return json.loads(at.get_by_key(key).proto.spec)


def shapes(fig: dict, name: str) -> list[dict]:
    return [s for s in fig["layout"].get("shapes", []) if s.get("name") == name]


def open_page(page: str, show: tuple[str, ...] = (), **query) -> AppTest:
    """The page after its first run; ``show`` names Step through's sections to show, as a
    student's choice in its picker would (those the model has: a key the picker does not offer
    is left out)."""
    at = new_app(APP, 60)
    at.query_params.update(query)
    at.run()  # the default page first: AppTest can only switch pages after a run
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if show:
        at = section_picker(at).set_value([key for key in show if section_picker(at).format_func(key)]).run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def section_picker(at: AppTest):
    """Step through's picker of the sections shown beside the step."""
    return next(p for p in at.button_group if (p.key or "").startswith("step_show_"))


EVERY_SECTION = ("query", "score", "weights", "context", "state", "local_forms", "attentional", "heads", "output")
