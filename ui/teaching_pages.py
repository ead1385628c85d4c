"""What the teaching pages share: the model picker, the sentence box, and the cached
calls into ``model/`` they make. No model logic here, only wiring and caching: the same
(model, sentence, choice) is computed once per process, so moving a slider only redraws."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from server import settings
from model.search import beam_search, DecodingRecord, forced, greedy, InputError, prepare_source, PreparedSource
from ui.url_state import query_param, set_query_params
from ui.widgets import sentence_input
from ui.zoo_cache import cached_translate, COSTLY_KEPT, pick_model, shared_decoding, shared_result, STEPS_KEPT, zoo
from model.align import forced_alignment, ForcedAlignment, read_gold
from model.internals import annotation_values, local_p_steps, LocalPSteps, recomputed_energies
from model.zoo import ZooEntry


def gold_folder() -> Path:
    """The Hansards word-alignment gold set (Mihalcea & Pedersen 2003); the Forced
    alignment page works without it."""
    return settings.gold()


def gold_pairs():
    """The gold set's sentence pairs (``model.align.read_gold``), read once per process; None
    when the folder is missing or unreadable."""
    return _gold_pairs(str(gold_folder()))


@shared_result()
def _gold_pairs(folder: str):
    try:
        return read_gold(folder)
    except (OSError, ValueError):
        return None


def keep_in_url(name: str, text: str, **more) -> None:
    set_query_params(text=text.strip() or None, model=name, **more)


def source_or_stop(entry: ZooEntry, text: str) -> PreparedSource:
    """The cleaned source, or a friendly message and the end of the page."""
    try:
        src = prepare_source(entry.vocab, text)
    except InputError as e:
        st.info(f"{e} Or pick one of the examples above.", icon=":material/edit:")
        st.stop()
    for notice in src.notices:
        st.warning(notice, icon=":material/content_cut:")
    return src


def step_in_range(key: str, T: int) -> None:
    """Session state ``key`` holds a target step 1…T: on the first visit the link's ``?step=``
    (else 1), afterwards the slider's last value, kept in range when a new sentence is shorter."""
    if key not in st.session_state:
        try:
            st.session_state[key] = int(query_param("step", "1"))
        except ValueError:
            st.session_state[key] = 1
    st.session_state[key] = min(max(1, st.session_state[key]), T)


# Each cache is keyed by the checkpoint folder as well, as ``ui.zoo_cache.cached_translate`` is, so
# that a test pointing the app at other checkpoints never gets another folder's results; each is a
# ``shared_decoding``: what it reads of Translate's record first, then its cache, then a decoding slot.
def _translated(model_name: str, text: str, *_) -> DecodingRecord:
    return cached_translate(model_name, text, 1)


def cached_greedy(model_name: str, text: str, prefix: tuple[int, ...] = ()) -> DecodingRecord:
    """Greedy decoding, with ``prefix`` forced first (the What-if page). Without a prefix it
    is Translate's own greedy record (one cache: a sentence already translated on Translate
    or Compare is not decoded again here)."""
    if not prefix:
        return cached_translate(model_name, text, 1)
    return _greedy(model_name, text, tuple(prefix))


@shared_decoding(STEPS_KEPT)
def _greedy(root: str, model_name: str, text: str, prefix: tuple[int, ...], *, needed=None, check) -> DecodingRecord:
    entry = zoo(root)[model_name]
    # a superseded rerun stops between two decoder steps
    return greedy(entry.model, entry.vocab, prepare_source(entry.vocab, text), topk=5, prefix=list(prefix), check=check)


@shared_decoding(STEPS_KEPT)
def cached_values(root: str, model_name: str, text: str, *, needed=None, check):
    """The vectors c_i averages (S x C numpy; None for RNNenc)."""
    entry = zoo(root)[model_name]
    return annotation_values(entry.model, prepare_source(entry.vocab, text).ids)


@shared_decoding(STEPS_KEPT, needs=_translated)
def cached_energies(root: str, model_name: str, text: str, *, needed: DecodingRecord, check):
    """e_ij scored again from the greedy record's query states by the model's own attention
    (T x S numpy; None for RNNenc and the Transformer)."""
    entry = zoo(root)[model_name]
    return recomputed_energies(entry.model, prepare_source(entry.vocab, text).ids, needed.query_states)


@shared_decoding(STEPS_KEPT, needs=_translated)
def cached_local_p(root: str, model_name: str, text: str, *, needed: DecodingRecord, check) -> LocalPSteps | None:
    """The greedy record's local-p steps before the Gaussian and in both forms (None for
    every other model)."""
    entry = zoo(root)[model_name]
    return local_p_steps(entry.model, prepare_source(entry.vocab, text).ids, needed.query_states)


def cached_beam(model_name: str, text: str, beam: int) -> DecodingRecord:
    """Beam search with its tree, for any k ≥ 1 (k = 1 is greedy, drawn as a one-branch tree).
    For k > 1 it is Translate's own beam record, from the same cache."""
    if beam > 1:
        return cached_translate(model_name, text, beam)
    return _beam(model_name, text, beam)


@shared_decoding(COSTLY_KEPT)
def _beam(root: str, model_name: str, text: str, beam: int, *, needed=None, check) -> DecodingRecord:
    entry = zoo(root)[model_name]
    return beam_search(entry.model, entry.vocab, prepare_source(entry.vocab, text), beam, check=check)


def cached_forced_alignment(model_name: str, english: tuple[str, ...], french: tuple[str, ...],
                            hansards: bool = False) -> ForcedAlignment:
    """A given French sentence scored word by word, with its attention links; hansards=True
    writes gold-set tokens back as ordinary text first, as ``python -m model.align`` does."""
    return _forced_alignment(model_name, tuple(english), tuple(french), hansards)


@shared_decoding(STEPS_KEPT)
def _forced_alignment(root: str, model_name: str, english: tuple[str, ...], french: tuple[str, ...],
                      hansards: bool, *, needed=None, check) -> ForcedAlignment:
    entry = zoo(root)[model_name]
    return forced_alignment(entry.model, entry.vocab, list(english), list(french), hansards)


@shared_decoding(COSTLY_KEPT)
def cached_forced(root: str, model_name: str, text: str, target_text: str, *, needed=None, check) -> DecodingRecord:
    """``target_text`` (another model's translation, say) force-decoded by this model: its
    attention along the same French words, whatever its vocabulary."""
    entry = zoo(root)[model_name]
    return forced(entry.model, entry.vocab, prepare_source(entry.vocab, text), entry.vocab.encode_target(target_text))


__all__ = ["gold_folder", "gold_pairs", "pick_model", "sentence_input", "keep_in_url", "source_or_stop", "cached_greedy",
           "cached_values", "cached_energies", "cached_local_p", "cached_beam", "cached_forced_alignment",
           "cached_forced", "step_in_range"]
