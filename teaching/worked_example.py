"""The worked example: one attention step by hand, on "Turn off the lights".

The classroom version of Bahdanau's alignment model (eq. 6, Appendix A.1.2): hidden size
4, so the decoder state s_{i-1} and every annotation h_j are 4 numbers, and an alignment
layer of 3 units. For the 4 source words the computation is a handful of small matrices:

    X   = [s_{i-1} ; h_j]  one row per word               4 x 8
    Z   = X W              W = [W_a^T ; U_a^T]            (4 x 8)(8 x 3) = 4 x 3
    T   = tanh(Z)                                         4 x 3
    e   = T v              v = v_a                        (4 x 3)(3 x 1) = 4 x 1
    α   = softmax(e)                                      4 x 1
    c   = α^T H            H: the annotations, one row each   (1 x 4)(4 x 4) = 1 x 4

Row j of X W is W_a s_{i-1} + U_a h_j, so e_j = v_a^T tanh(W_a s_{i-1} + U_a h_j): the
same function as ``AdditiveAttention.score`` in ``model/attention.py`` (the real layer also
adds a bias to U_a h_j; the example leaves it out). The dot-product score of Luong eq. 8,
e_j = s^T h_j, is computed from the same inputs so the two can be compared number for
number, and :func:`cost` counts what each one needs.

numpy only: every intermediate is a small array the page shows with its shape.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

SOURCE_WORDS = ("Turn", "off", "the", "lights")
HIDDEN = 4      # size of s_{i-1} and of each h_j
ALIGNMENT = 3   # units of the alignment layer


@dataclass
class WorkedInputs:
    """decoder_state: s_{i-1}, (hidden,); annotations: H, one row h_j per word, (words, hidden);
    W: (2·hidden, alignment), top half W_a^T (acts on s_{i-1}), bottom half U_a^T (acts on h_j);
    v: v_a, (alignment, 1)."""
    decoder_state: np.ndarray
    annotations: np.ndarray
    W: np.ndarray
    v: np.ndarray

    def __post_init__(self):
        self.decoder_state = np.asarray(self.decoder_state, dtype=float).reshape(-1)
        self.annotations = np.asarray(self.annotations, dtype=float)
        self.W = np.asarray(self.W, dtype=float)
        self.v = np.asarray(self.v, dtype=float).reshape(-1, 1)
        h = self.decoder_state.shape[0]
        if self.annotations.ndim != 2 or self.annotations.shape[1] != h:
            raise ValueError(f"annotations must be (words, {h}), got {self.annotations.shape}")
        if self.W.shape != (2 * h, self.v.shape[0]):
            raise ValueError(f"W must be ({2 * h}, {self.v.shape[0]}), got {self.W.shape}")
        for name in ("decoder_state", "annotations", "W", "v"):
            if not np.isfinite(getattr(self, name)).all():
                raise ValueError(f"{name} has an empty or non-numeric entry")


@functools.lru_cache(maxsize=256)
def random_inputs(seed: int = 0, words: int = len(SOURCE_WORDS), hidden: int = HIDDEN,
                  alignment: int = ALIGNMENT) -> WorkedInputs:
    """Inputs a student can follow by hand: uniform in [-1, 1], rounded to one decimal. Made once
    per arguments and process (a class sent one seed draws it on every tab's rerun), so the
    arrays are read-only: a caller that would change them works on copies."""
    rng = np.random.default_rng(seed)

    def draw(*shape):
        return np.round(rng.uniform(-1.0, 1.0, size=shape), 1)

    inputs = WorkedInputs(decoder_state=draw(hidden), annotations=draw(words, hidden),
                          W=draw(2 * hidden, alignment), v=draw(alignment, 1))
    for array in (inputs.decoder_state, inputs.annotations, inputs.W, inputs.v):
        array.flags.writeable = False
    return inputs


def softmax(energies: np.ndarray) -> np.ndarray:
    """α_j = exp(e_j) / Σ_k exp(e_k) (Bahdanau eq. 6); the max is subtracted for stability."""
    z = np.exp(energies - energies.max())
    return z / z.sum()


@dataclass
class AttentionSteps:
    """Every intermediate of one attention step. ``concat``, ``pre_activation`` and
    ``hidden`` are None for the dot-product score, which has no alignment layer."""
    concat: np.ndarray | None          # X = [s_{i-1} ; h_j]: words x 2·hidden
    pre_activation: np.ndarray | None  # X W: words x alignment
    hidden: np.ndarray | None          # tanh(X W): words x alignment
    energies: np.ndarray               # e: words x 1
    weights: np.ndarray                # α: words x 1
    contributions: np.ndarray          # α_j h_j: words x hidden
    context: np.ndarray                # c = Σ_j α_j h_j: 1 x hidden


def _weigh(energies: np.ndarray, annotations: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    weights = softmax(energies)                  # words x 1
    contributions = weights * annotations        # words x hidden: row j is α_j h_j
    return weights, contributions, contributions.sum(0, keepdims=True)  # c: 1 x hidden (eq. 5)


def additive_attention(inputs: WorkedInputs) -> AttentionSteps:
    """Bahdanau's score, e_j = v_a^T tanh(W_a s_{i-1} + U_a h_j), as one matrix product."""
    words = inputs.annotations.shape[0]
    concat = np.hstack([np.tile(inputs.decoder_state, (words, 1)), inputs.annotations])  # words x 2h
    pre_activation = concat @ inputs.W            # words x A
    hidden = np.tanh(pre_activation)              # words x A
    energies = hidden @ inputs.v                  # words x 1
    weights, contributions, context = _weigh(energies, inputs.annotations)
    return AttentionSteps(concat, pre_activation, hidden, energies, weights, contributions, context)


def dot_attention(inputs: WorkedInputs) -> AttentionSteps:
    """Luong's ``dot`` score (eq. 8), e_j = s^T h_j, on the same state and annotations."""
    energies = inputs.annotations @ inputs.decoder_state.reshape(-1, 1)  # words x 1
    weights, contributions, context = _weigh(energies, inputs.annotations)
    return AttentionSteps(None, None, None, energies, weights, contributions, context)


def general_attention(inputs: WorkedInputs, W_g: np.ndarray) -> AttentionSteps:
    """Luong's ``general`` score (eq. 8), e_j = s^T W_a h_j, with W_a = ``W_g`` (hidden x hidden)."""
    W_g = np.asarray(W_g, dtype=float)
    energies = inputs.annotations @ W_g.T @ inputs.decoder_state.reshape(-1, 1)  # row j: (W_a h_j)^T s; words x 1
    weights, contributions, context = _weigh(energies, inputs.annotations)
    return AttentionSteps(None, None, None, energies, weights, contributions, context)


def cost(words: int = len(SOURCE_WORDS), hidden: int = HIDDEN, alignment: int = ALIGNMENT) -> list[dict]:
    """Parameters and multiplications of each score for one decoder step over ``words`` words.

    Additive, as drawn: X W (words·2h·A) then T v (words·A), plus words·A tanh. Because
    U_a h_j does not change from step to step, the real code computes it once per sentence
    (``compute_proj_keys``), leaving h·A + words·A per step. Dot: words·h, no parameters
    (the toy's: the shipped luong-dot learns W_m, which maps its annotations to the decoder's size).
    """
    return [
        {"score": "additive (Bahdanau)", "parameters": 2 * hidden * alignment + alignment,
         "multiplications per step (as drawn)": words * 2 * hidden * alignment + words * alignment,
         "multiplications per step (U_a h_j cached)": hidden * alignment + words * alignment,
         "tanh per step": words * alignment},
        {"score": "dot (Luong)", "parameters": 0,
         "multiplications per step (as drawn)": words * hidden,
         "multiplications per step (U_a h_j cached)": words * hidden,
         "tanh per step": 0},
    ]
