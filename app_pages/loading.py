"""The first visit after a server start, while the models are still loading.

Kept free of torch (and of every module that imports it) on purpose: ``explorer.py``
imports this before any page, so it runs while the server's warm-up thread (``app.py``)
is still importing torch and loading the checkpoints.
"""
import threading

# set by app_pages.common.zoo() once the shared model cache is filled
models_loaded = threading.Event()
