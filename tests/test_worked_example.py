"""The worked example's arithmetic (teaching/worked_example.py): shapes and sums, the same
numbers as the models' additive and dot scores, bad inputs refused."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from model.attention import AdditiveAttention, DotAttention
from teaching.worked_example import additive_attention, cost, dot_attention, random_inputs, WorkedInputs


def test_worked_example_shapes_and_sums():
    steps = additive_attention(random_inputs(0))
    assert steps.concat.shape == (4, 8) and steps.pre_activation.shape == (4, 3)
    assert steps.energies.shape == (4, 1) and steps.context.shape == (1, 4)
    assert steps.weights.sum() == pytest.approx(1.0)
    assert np.allclose(steps.context, steps.weights.T @ random_inputs(0).annotations)
    assert not np.allclose(additive_attention(random_inputs(1)).weights, steps.weights)
    assert [c["parameters"] for c in cost()] == [27, 0]


def test_worked_example_is_the_models_additive_and_dot_score():
    """The hand-sized numpy computation equals model/attention.py's layers with the same weights."""
    inputs = random_inputs(7)
    layer = AdditiveAttention(query_size=4, key_size=4, attention_size=3)
    with torch.no_grad():
        layer.W_a.weight.copy_(torch.tensor(inputs.W[:4].T))
        layer.U_a.weight.copy_(torch.tensor(inputs.W[4:].T))
        layer.U_a.bias.zero_()
        layer.v_a.weight.copy_(torch.tensor(inputs.v.T))
    query = torch.tensor(inputs.decoder_state, dtype=torch.float32).unsqueeze(0)
    keys = torch.tensor(inputs.annotations, dtype=torch.float32).unsqueeze(0)
    mask = torch.ones(1, 4, dtype=torch.bool)
    energies = layer.score(query, layer.compute_proj_keys(keys), mask)[0].detach().numpy()
    assert np.allclose(energies, additive_attention(inputs).energies[:, 0], atol=1e-5)
    dot = DotAttention().score(query, keys, mask)[0].numpy()
    assert np.allclose(dot, dot_attention(inputs).energies[:, 0], atol=1e-5)


def test_worked_inputs_reject_bad_numbers():
    good = random_inputs(0)
    with pytest.raises(ValueError):
        WorkedInputs(good.decoder_state, good.annotations, good.W[:7], good.v)
    with pytest.raises(ValueError):
        WorkedInputs(np.array([np.nan, 0, 0, 0]), good.annotations, good.W, good.v)


def test_a_seeds_numbers_are_made_once_per_process_and_no_session_can_change_them():
    """A class sent one seed draws its numbers on every tab's rerun: they are made once, shared,
    and read-only, so a page that changed them in place would fail, not change another's."""
    from teaching.exercises import step_exercise
    drawn = random_inputs(7)
    assert random_inputs(7) is drawn and random_inputs(8) is not drawn
    for array in (drawn.decoder_state, drawn.annotations, drawn.W, drawn.v):
        with pytest.raises(ValueError):
            array[0] = 9.0
    level2 = step_exercise(4)  # general: its W_a too
    assert step_exercise(4) is level2 and level2.general_weights is not None
    with pytest.raises(ValueError):
        level2.general_weights[0, 0] = 9.0
