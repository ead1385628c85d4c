"""Training batches (model/data.py)."""
from __future__ import annotations

from model.data import token_batches


def test_token_batches_respect_the_budget():
    lengths = [(n % 17 + 1, n % 13 + 1) for n in range(500)]
    batches = token_batches(lengths, 64)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        assert len(b) == 1 or max(max(lengths[i]) for i in b) * len(b) <= 64
