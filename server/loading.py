"""The first visit after a server start, while the models are still loading.

Kept free of torch (and of every module that imports it) on purpose: ``navigation.py``
imports this before any page, so it runs while the server's warm-up thread (``app.py``)
is still importing torch and loading the checkpoints.
"""
import threading

# the server's readiness route (app.py): 200 once the warm-up has finished, 503 before
READY_PATH = "/_attn/ready"

# set by ui.zoo_cache.zoo() once the shared model cache is filled
models_loaded = threading.Event()


class WarmUp:
    """``app.py``'s start-up thread as the first page sees it.

    The page waits for it instead of working alongside it: it imports nothing the thread is
    still importing and loads nothing the thread is still loading. Two threads importing
    torch, Plotly and their C extensions, or decoding on one model, at the same moment is a
    race we have no reason to run; waiting costs the page nothing, since it needs exactly
    what the thread makes. Without a server (AppTest, the benchmarks) nothing starts it and
    every wait returns at once."""

    TIMEOUT_S = 120  # a warm-up that takes longer than this is stuck: the page goes on by itself

    def __init__(self):
        self.started = False
        self.figures_ready = threading.Event()  # Plotly and viz/ imported, one figure serialised
        self.finished = threading.Event()  # models loaded and the landing page translated (or failed)

    @property
    def pending(self) -> bool:
        return self.started and not self.finished.is_set()

    def wait(self, event: threading.Event) -> None:
        if self.started:
            event.wait(self.TIMEOUT_S)


warm_up = WarmUp()
