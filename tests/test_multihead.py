"""The multi-head demo (teaching/multihead.py)."""
from __future__ import annotations

import numpy as np
import pytest


def test_multihead_rewrite_is_luongs_step():
    """Identity projections without the scale give Luong's dot step exactly; the heads' energies
    (times sqrt(d_k)) add up to Luong's; every head's weights are a distribution."""
    from teaching.multihead import as_query_keys_values, head_agreement
    rng = np.random.default_rng(0)
    s, H = rng.normal(size=8), rng.normal(size=(5, 8))
    step = as_query_keys_values(s, H, heads=4)
    assert np.allclose(step.qkv_energies, H @ s) and np.allclose(step.qkv_context, step.context)
    assert np.allclose(step.head_energies.sum(0) * np.sqrt(2), H @ s)
    assert step.head_weights.shape == (4, 5) and np.allclose(step.head_weights.sum(1), 1)
    assert np.allclose(step.scaled_weights, np.exp(H @ s / np.sqrt(8)) / np.exp(H @ s / np.sqrt(8)).sum())
    with pytest.raises(ValueError):
        as_query_keys_values(s, H, heads=3)
    words = np.zeros((2, 2, 3, 4))
    words[1, 0, np.arange(3), [3, 1, 0]] = 1  # layer 2 head 1 agrees with the reference on every word
    words[0, 1, np.arange(3), [3, 2, 2]] = 1  # layer 1 head 2 on the first word only
    reference = np.eye(4)[[3, 1, 0]]
    assert head_agreement(words, reference)[1, 0] == 1.0 and np.isclose(head_agreement(words, reference)[0, 1], 1 / 3)
