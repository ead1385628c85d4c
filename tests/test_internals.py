"""The decoder's internals for the teaching pages (model/internals.py): the values the context sums,
and the beam's hypotheses."""
from __future__ import annotations

import numpy as np
import pytest

from model.internals import annotation_values, beam_hypotheses
from model.search import beam_search, greedy, prepare_source
from helpers.apptest import DIGITS


@pytest.mark.parametrize("name", ["rnnsearch", "luong-general", "luong-local"])
def test_context_is_the_weighted_sum_of_the_values(tiny, name):
    model, vocab = tiny[name]
    src = prepare_source(vocab, DIGITS)
    rec = greedy(model, vocab, src)
    values = annotation_values(model, src.ids)
    assert values.shape == (len(rec.source_tokens), rec.contexts.shape[1])
    # local-p (eq. 10): the weights the context sums are α_ij times the window mass m_i
    mass = rec.window_masses[:, None] if rec.window_masses is not None else 1.0
    assert (name == "luong-local") == (rec.window_masses is not None)
    assert np.allclose(mass * rec.weights @ values, rec.contexts, atol=1e-5)
    if model.cfg.decoder == "luong":
        assert rec.attentional.shape == rec.states.shape
    else:
        assert rec.attentional is None


def test_beam_hypotheses_rank_the_returned_one_first(tiny):
    model, vocab = tiny["rnnsearch"]
    rec = beam_search(model, vocab, prepare_source(vocab, "1 2 3 4 5 6 7"), beam=4)
    hyps = beam_hypotheses(rec.beam_tree)
    assert hyps[0].chosen and hyps[0].tokens == rec.target_tokens
    assert sum(h.chosen for h in hyps) == 1 and len(hyps) >= 2
