"""Model configs (model/config.py): validation, and every shipped YAML builds its model."""
from __future__ import annotations

from pathlib import Path

import pytest

from model.config import ModelConfig


def test_transformer_config_is_validated():
    with pytest.raises(ValueError, match="scaled-dot"):
        ModelConfig(decoder="transformer", attention="dot")
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(decoder="transformer", attention="scaled-dot", emb_size=30, heads=4)
    with pytest.raises(ValueError, match="shown_layer"):
        ModelConfig(decoder="transformer", attention="scaled-dot", layers=3, shown_layer=3)


@pytest.mark.parametrize("path", sorted((Path(__file__).parent.parent / "configs").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_every_shipped_config_builds_its_model(path):
    """Each configs/NAME.yaml (the zoo's, and those of the measurements in docs/) parses,
    names itself after its file, and builds its model."""
    from model.config import load_run_config
    from model.model import build_model
    run = load_run_config(str(path))
    assert run.name == path.stem
    model = build_model(run.model)
    assert model.num_parameters() > 1_000_000 and run.train.batch_tokens > 0
