"""The model zoo, loaded once per process and shared by every browser session, the model
pickers built on it, and the shared caches of results (``shared_result``, ``cached_translate``).
No model logic lives here: only loading and wiring."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
from collections import OrderedDict

import numpy as np
import streamlit as st

from model.search import BeamNode, DecodingRecord, MAX_SOURCE_TOKENS, translate
from model.zoo import load_zoo, ZooEntry
from server import settings
from server.loading import models_loaded
from server.costs import decoding_cost
from server.lanes import costly_work, pace
from server.limits import decoding_slot
from server.scheduler import CACHE, holding
from server.shared import per_process
from server.streamlit_patches.reads import script_run_ctx
from ui.url_state import query_param
from ui.widgets import plain

DEFAULT_MODEL = "rnnsearch"  # the paper's model: what a page shows when the link names none


def zoo(root: str | None = None) -> dict[str, ZooEntry]:
    """Every checkpoint, loaded once per process and shared by all browser sessions.

    The folder is read from ATTN_EXPLORER_CHECKPOINTS when called, not when this module is
    imported, so a test that sets it after importing still gets its own checkpoints."""
    args = (root or checkpoints_root(), settings.hf_models(), str(settings.results() / "hf"))
    if models_loaded.is_set() or script_run_ctx() is None:
        models = _load_zoo(*args)
    else:
        with st.spinner("Loading the models…"):
            models = _load_zoo(*args)
    models_loaded.set()
    return models


@per_process  # not st.cache_resource: a visitor's clear_cache must not unload them (server/shared.py)
def _load_zoo(root: str, made_elsewhere: tuple[str, ...] = (), metrics_root: str | None = None) -> dict[str, ZooEntry]:
    global zoo_loads
    zoo_loads += 1
    return load_zoo(root, made_elsewhere=made_elsewhere, metrics_root=metrics_root)


zoo_loads = 0  # how many times this process has loaded the zoo (app.py's /_attn/ready reports it)


def available_models() -> dict[str, ZooEntry]:
    return {n: e for n, e in zoo().items() if e.available}


def unavailable_models() -> dict[str, ZooEntry]:
    return {n: e for n, e in zoo().items() if not e.available}


def show_unavailable() -> None:
    """List the models that could not be loaded, with the reason, without stopping the page."""
    broken = unavailable_models()
    if broken:
        with st.expander(f"{len(broken)} model(s) unavailable", expanded=not available_models()):
            for e in broken.values():
                st.warning(f"**{e.display_name}** is unavailable: {e.error}")


# the one place that says why a view leaves the models made elsewhere out
OURS_ONLY = ("Models made elsewhere (Hugging Face) are not listed here: this view shows the decoder's internals "
             "step by step (the RNNs' annotations and query states, our Transformer's projections), which only "
             "our own models expose. Translate, Compare, Beam search, What if and Forced alignment show theirs.")
ENGLISH_FRENCH = ("en", "fr")


def usable_models(purpose: str, attention_only: bool = False, ours_only: bool = False,
                  pair: tuple[str, str] | None = None) -> dict[str, ZooEntry]:
    """The loaded models (with attention, if asked; only ours, if asked; only those translating
    ``pair``, e.g. the Hansards gold's English → French), after listing the unavailable ones;
    stops the page with a message if none is left, e.g. purpose="nothing can be translated"."""
    show_unavailable()
    models = {n: e for n, e in available_models().items() if (e.has_attention or not attention_only)
              and not (ours_only and e.made_elsewhere) and (pair is None or e.languages == pair)}
    if ours_only and any(e.made_elsewhere for e in available_models().values()):
        st.caption(OURS_ONLY)
    if not models:
        kind = "model with attention" if attention_only else "model"
        st.error(f"No {kind} could be loaded, so {purpose}. See the reasons above.")
        st.stop()
    return models


def target_language(entry: ZooEntry) -> str:
    """The language the model writes, by name ("French"), from the model itself."""
    from model.hf import language_name  # no transformers: only the names of languages
    return language_name(entry.languages[1])


def attention_caption(entry: ZooEntry) -> str | None:
    """Which layer × heads the one matrix of a Transformer is, and how that layer was chosen."""
    cfg = entry.model.cfg
    if cfg.decoder != "transformer":
        return None
    if entry.made_elsewhere:
        from model.hf import attention_layer_note
        return (f"{entry.display_name} has {cfg.layers} decoder layers × {cfg.heads} heads of cross-attention; this is "
                + attention_layer_note(cfg, entry.spec) + ". Compare and *From Luong to the Transformer* show every head.")
    return (f"A Transformer has {cfg.layers} layers × {cfg.heads} heads of cross-attention; this is layer "
            f"{cfg.shown_layer % cfg.layers + 1} with its heads averaged. *From Luong to the Transformer* shows every head.")


def pick_model(key: str, attention_only: bool = False, label: str = "Model",
               purpose: str = "there is nothing to show", ours_only: bool = False,
               pair: tuple[str, str] | None = None) -> tuple[str, ZooEntry]:
    """Model selectbox, first from the URL (``?model=``); says so when the link names a model
    that is not available here, and stops the page if no model is usable."""
    models = usable_models(purpose, attention_only, ours_only, pair)
    names = list(models)
    wanted = query_param("model", DEFAULT_MODEL)
    name = st.selectbox(label, names, index=names.index(wanted) if wanted in names else 0, key=key,
                        format_func=lambda n: models[n].display_name)
    if wanted not in names and query_param("model"):
        st.warning(f"The model in the link, {plain(wanted)}, is not available here; showing {models[name].display_name}.")
    return name, models[name]


def checkpoints_root() -> str:
    """The checkpoint folder (tests point it at tiny checkpoints; the app reads the shipped ones)."""
    return str(settings.checkpoints())


def read_only(value):
    """``value`` with every numpy array in it (in dataclasses, lists, tuples, dicts) made
    read-only, so that a page writing into a result every session shares raises at once."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            read_only(getattr(value, f.name))
    elif isinstance(value, (list, tuple)):
        # a list of tokens holds no array, nor does a beam-search tree (its nodes hold Python numbers)
        if value and not isinstance(value[0], (str, int, float, bool, BeamNode)):
            for v in value:
                read_only(v)
    elif isinstance(value, dict):
        for v in value.values():
            read_only(v)
    return value


# How many results a shared cache keeps for every browser tab of the process (the least recently
# used go first). One result is one sentence's work for one model: the landing sentence's record
# is 45 KiB on the shipped RNNsearch (10 pieces; it grows with the sentence). The caps bound what
# visitors typing sentences of their own make a process hold, and keep what a lesson reuses.
TRANSLATIONS_KEPT = 256  # Translate and Compare: the room's sentences, each on any of the zoo's models
STEPS_KEPT = 128         # a teaching page's per-sentence results: our models only, the sentences a lesson visits
COSTLY_KEPT = 64         # beam trees, forced decodings, attributions: asked for on fewer sentences, larger each


_SHARED: dict[tuple, object] = {}  # a shared result's cached function, by where it is defined (see below)


def shared_result(max_entries: int | None = None, keep_served: bool = False):
    """Cache a function's results once per process for every session, as ``st.cache_data``
    does, but hand out the one stored object: ``st.cache_data`` unpickles a fresh copy on
    every call, and Step through's slider asked for four records per move (a twentieth of the
    server's CPU in a class, docs/performance.md). The results are made read-only instead
    (``read_only``), which is the promise ``st.cache_data``'s copies kept.

    A page script runs again on every rerun, and with it the decorators of the functions it
    defines: Streamlit then names the cache again from the function's source
    (``inspect.getsource``, 4 % of a follower's rerun in a profile of the Exercises page). Where
    no file is watched the source cannot change while the server runs, so the cached function
    is built once per process, by the place it is defined, and every run gets that one.

    A call is inside ``server.scheduler.CACHE`` (waiting for another run's computation of the
    same key included): asked for while the run holds a decoding slot, it raises ``OutOfOrder``.

    With ``keep_served`` (``shared_decoding``'s), ``built.served(*args)`` is the result last handed
    out for these (hashable) arguments, or None: a plain dict read, so a caller can skip what only a computation needs (a cost
    estimate, a lane, the cache's own hashing of its arguments) when the result is there."""
    def wrap(fn):
        from server.serving import files_watched
        code = inspect.unwrap(fn).__code__  # where it is written (shared_decoding hands in its wrapper)
        where = (code.co_filename, code.co_firstlineno, fn.__qualname__, max_entries, keep_served)
        watched = files_watched()
        built = None if watched else _SHARED.get(where)
        if built is None:
            @functools.wraps(fn)
            def computed(*args, **kwargs):
                return read_only(fn(*args, **kwargs))
            cached = st.cache_resource(show_spinner=False, max_entries=max_entries)(computed)
            recent, guard = OrderedDict(), threading.Lock()  # the same bound as the cache, oldest out first

            @functools.wraps(fn)
            def built(*args, **kwargs):
                with holding(CACHE):
                    result = cached(*args, **kwargs)
                if not keep_served or any(not name.startswith("_") for name in kwargs):  # a key it does not see
                    return result
                try:
                    with guard:
                        recent[args] = result
                        recent.move_to_end(args)
                        while len(recent) > (max_entries or 256):
                            recent.popitem(last=False)
                except TypeError:  # an argument that cannot be a dict's key: the cache's own hash only
                    pass
                return result

            def served(*args):
                try:
                    with guard:
                        return recent.get(args)
                except TypeError:
                    return None

            def clear() -> None:
                with guard:
                    recent.clear()
                cached.clear()
            built.clear, built.served = clear, served
            if not watched:
                _SHARED[where] = built
        return built
    return wrap


def shared_decoding(max_entries: int, *, needs=None, lane=None, share=None):
    """One model's work on one sentence, shared by every tab of the process, in the one safe order
    (``server.scheduler.ORDER``): what it reads of other shared results first (``needs``, each in
    its own order, holding nothing), then the costly lane when its estimate asks for it
    (``lane``), then the shared cache, then a decoding slot around the computation alone.

    The decorated ``fn(root, model_name, *args, needed=…, check=…)`` computes; it gets the
    model's folder and name as cache keys, ``needed`` (what ``needs(model_name, *args)``
    returned, or None; not a cache key: it follows from the others) and ``check``, to call
    between decoder steps (a newer rerun of the tab, the costly lane's pause and seconds).
    ``lane(needed, model_name, *args)`` gives (cost, key): the estimate (``server/costs.py``)
    and the key the lane remembers computed; ``share(*args)`` the decoding's part of the tab's
    share (``server.limits.decoding_slot``; 1 by default). Returns ``call(model_name, *args)``,
    the checkpoint folder read at each call."""
    def wrap(fn):
        @functools.wraps(fn)
        def computed(root: str, model_name: str, *args, _needed=None):
            # the leading underscore keeps ``_needed`` out of the cache's key (st.cache_resource)
            with decoding_slot(cost=share(*args) if share else 1.0) as check:
                return fn(root, model_name, *args, needed=_needed, check=paced(check))
        cached = shared_result(max_entries, keep_served=True)(computed)

        @functools.wraps(fn)
        def call(model_name: str, *args):
            root = checkpoints_root()
            # a result already handed out (a follower's rerun, a slider's move): no estimate, no
            # lane, no hashing; its pieces were SentencePiece's work on every call (docs/performance.md)
            if (result := cached.served(root, model_name, *args)) is not None:
                return result
            needed = needs(model_name, *args) if needs else None
            if lane is None:
                return cached(root, model_name, *args, _needed=needed)
            cost, key = lane(needed, model_name, *args)
            with costly_work(cost, key):
                return cached(root, model_name, *args, _needed=needed)
        call.clear = cached.clear
        return call
    return wrap


@shared_decoding(TRANSLATIONS_KEPT, share=lambda text, beam: max(1.0, len(text) / 250),
                 lane=lambda _, model_name, text, beam: (source_cost(model_name, text, beam),
                                                         ("translate", checkpoints_root(), model_name, text, beam)))
def cached_translate(root: str, model_name: str, text: str, beam: int, *, needed=None, check) -> DecodingRecord:
    """Translate through the shared model; the same (model, text, beam) is computed once, in the
    costly lane when its cost asks for it (``server/lanes.py``). A long sentence costs more of the
    tab's share (``server/limits.py``): a text box's 1,000 characters, 4."""
    entry = zoo(root)[model_name]
    return translate(entry.model, entry.vocab, text, beam=beam, check=check)


def source_cost(model_name: str, text: str, beam: int = 1) -> int:
    """The estimate of one decoding of ``text`` (``server/costs.py``), from its pieces, before any model runs."""
    entry = zoo().get(model_name)
    try:
        pieces = len(entry.vocab.encode(text)) if entry is not None and entry.available else 0
    except Exception:  # noqa: BLE001 - a text the vocabulary refuses: the decoding itself says why
        pieces = 0
    return decoding_cost(min(pieces, MAX_SOURCE_TOKENS), beam)


def paced(check):
    """The decoding's check between steps, and the costly lane's pause (``server.lanes.pace``)."""
    def both() -> None:
        check()
        pace()
    return both
