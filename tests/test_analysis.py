"""numpy analysis of attention (model/analysis.py)."""
from __future__ import annotations

import numpy as np
import pytest


def test_position_tracking_is_spearmans_rho():
    from model.analysis import position_tracking, rank_correlation
    assert rank_correlation([1, 2, 3, 4], [10, 20, 30, 45]) == pytest.approx(1.0)
    assert rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert rank_correlation([1, 1, 1], [1, 2, 3]) != rank_correlation([1, 1, 1], [1, 2, 3])  # NaN: constant
    weights = np.eye(5)[[0, 1, 1, 3, 4]]  # argmax 0 1 1 3 4; the last row (</s>) is left out
    assert position_tracking(np.array([0.2, 0.9, 1.5, 2.8, 0.0]), weights) == pytest.approx(
        rank_correlation([0.2, 0.9, 1.5, 2.8], [0, 1, 1, 3]))
