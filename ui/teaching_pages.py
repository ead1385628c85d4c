"""What the teaching pages share: the model picker, the sentence box, and the cached
calls into ``model/`` they make. No model logic here, only wiring and caching: the same
(model, sentence, choice) is computed once per process, so moving a slider only redraws."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from server import settings
from server.limits import decoding_slot
from model.search import beam_search, DecodingRecord, forced, greedy, InputError, prepare_source, PreparedSource
from ui.url_state import query_param, set_query_params
from ui.widgets import sentence_input
from ui.zoo_cache import cached_translate, checkpoints_root, COSTLY_KEPT, pick_model, shared_result, STEPS_KEPT, zoo
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
# that a test pointing the app at other checkpoints never gets another folder's results.
def cached_greedy(model_name: str, text: str, prefix: tuple[int, ...] = ()) -> DecodingRecord:
    """Greedy decoding, with ``prefix`` forced first (the What-if page). Without a prefix it
    is Translate's own greedy record (one cache: a sentence already translated on Translate
    or Compare is not decoded again here)."""
    if not prefix:
        return cached_translate(model_name, text, 1)
    return _greedy(checkpoints_root(), model_name, text, tuple(prefix))


def cached_values(model_name: str, text: str):
    """The vectors c_i averages (S x C numpy; None for RNNenc)."""
    return _values(checkpoints_root(), model_name, text)


def cached_energies(model_name: str, text: str):
    """e_ij scored again from the greedy record's query states by the model's own attention
    (T x S numpy; None for RNNenc and the Transformer)."""
    return _energies(checkpoints_root(), model_name, text)


def cached_local_p(model_name: str, text: str) -> LocalPSteps | None:
    """The greedy record's local-p steps before the Gaussian and in both forms (None for
    every other model)."""
    return _local_p(checkpoints_root(), model_name, text)


def cached_beam(model_name: str, text: str, beam: int) -> DecodingRecord:
    """Beam search with its tree, for any k ≥ 1 (k = 1 is greedy, drawn as a one-branch tree).
    For k > 1 it is Translate's own beam record, from the same cache."""
    if beam > 1:
        return cached_translate(model_name, text, beam)
    return _beam(checkpoints_root(), model_name, text, beam)


def cached_forced_alignment(model_name: str, english: tuple[str, ...], french: tuple[str, ...],
                            hansards: bool = False) -> ForcedAlignment:
    """A given French sentence scored word by word, with its attention links; hansards=True
    writes gold-set tokens back as ordinary text first, as ``python -m model.align`` does."""
    return _forced_alignment(checkpoints_root(), model_name, tuple(english), tuple(french), hansards)


def cached_forced(model_name: str, text: str, target_text: str) -> DecodingRecord:
    """``target_text`` (another model's translation, say) force-decoded by this model: its
    attention along the same French words, whatever its vocabulary."""
    return _forced(checkpoints_root(), model_name, text, target_text)


@shared_result(max_entries=COSTLY_KEPT)
def _forced(root: str, model_name: str, text: str, target_text: str) -> DecodingRecord:
    entry = zoo(root)[model_name]
    with decoding_slot():
        return forced(entry.model, entry.vocab, prepare_source(entry.vocab, text), entry.vocab.encode_target(target_text))


@shared_result(max_entries=STEPS_KEPT)
def _greedy(root: str, model_name: str, text: str, prefix: tuple[int, ...]) -> DecodingRecord:
    entry = zoo(root)[model_name]
    with decoding_slot() as check:  # a superseded rerun stops between two decoder steps
        return greedy(entry.model, entry.vocab, prepare_source(entry.vocab, text), topk=5, prefix=list(prefix),
                      check=check)


@shared_result(max_entries=STEPS_KEPT)
def _values(root: str, model_name: str, text: str):
    entry = zoo(root)[model_name]
    with decoding_slot():
        return annotation_values(entry.model, prepare_source(entry.vocab, text).ids)


@shared_result(max_entries=STEPS_KEPT)
def _energies(root: str, model_name: str, text: str):
    entry = zoo(root)[model_name]
    record = cached_translate(model_name, text, 1)
    with decoding_slot():
        return recomputed_energies(entry.model, prepare_source(entry.vocab, text).ids, record.query_states)


@shared_result(max_entries=STEPS_KEPT)
def _local_p(root: str, model_name: str, text: str) -> LocalPSteps | None:
    entry = zoo(root)[model_name]
    record = cached_translate(model_name, text, 1)
    with decoding_slot():
        return local_p_steps(entry.model, prepare_source(entry.vocab, text).ids, record.query_states)


@shared_result(max_entries=COSTLY_KEPT)
def _beam(root: str, model_name: str, text: str, beam: int) -> DecodingRecord:
    entry = zoo(root)[model_name]
    with decoding_slot() as check:
        return beam_search(entry.model, entry.vocab, prepare_source(entry.vocab, text), beam, check=check)


@shared_result(max_entries=STEPS_KEPT)
def _forced_alignment(root: str, model_name: str, english: tuple[str, ...], french: tuple[str, ...],
                      hansards: bool) -> ForcedAlignment:
    entry = zoo(root)[model_name]
    with decoding_slot():
        return forced_alignment(entry.model, entry.vocab, list(english), list(french), hansards)


__all__ = ["gold_folder", "gold_pairs", "pick_model", "sentence_input", "keep_in_url", "source_or_stop", "cached_greedy",
           "cached_values", "cached_energies", "cached_local_p", "cached_beam", "cached_forced_alignment",
           "cached_forced", "step_in_range"]
