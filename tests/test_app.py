"""The server (app.py): its warm-up thread fills the caches the pages read, and the first page
waits for it rather than doing the same work alongside."""
from __future__ import annotations

from helpers.apptest import figures, translate_app


def test_first_visit_waits_for_the_server_warm_up(product, monkeypatch):
    """The first page does nothing alongside app.py's warm-up thread: it translates its own
    sentence only once the warm-up's translation is done (server/loading.py)."""
    import threading
    import time
    import app as server
    from ui import zoo_cache
    from ui.examples import DEFAULT_SENTENCE
    from server.loading import models_loaded, warm_up
    spans, real = {}, zoo_cache.translate

    def traced(model, vocab, text, **kw):
        start = time.monotonic()
        if text == DEFAULT_SENTENCE:
            time.sleep(1.0)  # a slow warm-up: the page must not start meanwhile
        record = real(model, vocab, text, **kw)
        spans[text] = (start, time.monotonic())
        return record

    monkeypatch.setattr(zoo_cache, "translate", traced)
    monkeypatch.setattr(warm_up, "started", True)
    zoo_cache._load_zoo.clear()
    zoo_cache.cached_translate.clear()
    models_loaded.clear()
    warm_up.figures_ready.clear()
    warm_up.finished.clear()
    thread = threading.Thread(target=server.warm_up)
    try:
        thread.start()
        at = translate_app("3 1 4")
        thread.join()
        assert [f["data"][0]["type"] for f in figures(at)] == ["heatmap", "bar"]
        assert spans[DEFAULT_SENTENCE][1] <= spans["3 1 4"][0]
    finally:
        thread.join()
        zoo_cache.cached_translate.clear()


def test_server_warm_up_fills_the_shared_model_cache(tiny_zoo, monkeypatch):
    """app.py's start-up hook loads the zoo into the cache the pages read, so the first page
    does not load it again."""
    import app as server
    from ui import zoo_cache
    loads = []
    real_load = zoo_cache.load_zoo
    monkeypatch.setattr(zoo_cache, "load_zoo", lambda root, **kw: loads.append(root) or real_load(root, **kw))
    zoo_cache._load_zoo.clear()
    try:
        server.warm_up()
        assert loads == [str(tiny_zoo)]
        assert zoo_cache.zoo()["rnnsearch"].available and loads == [str(tiny_zoo)]  # a cache hit
    finally:
        zoo_cache._load_zoo.clear()


def test_streamlit_run_finds_the_server():
    """``streamlit run app.py`` serves the st.App only if it finds ``app = st.App(...)`` by reading
    the file (its AST); otherwise it runs app.py as a page script, and every page is blank."""
    from pathlib import Path
    from streamlit.web.server.app_discovery import discover_asgi_app
    found = discover_asgi_app(Path(__file__).resolve().parent.parent / "app.py")
    assert found.is_asgi_app and found.app_name == "app"
