"""The fused output cross-entropy (model/loss.py)."""
from __future__ import annotations

import torch


def test_fused_loss_creates_its_tensors_on_the_inputs_device():
    """``--device cuda`` trains through model/loss.py: every tensor it makes must live on the
    device of its inputs. The meta device (shapes only) makes any CPU-made tensor an error."""
    from model.loss import FusedOutputCrossEntropy
    features = torch.randn(300, 8, device="meta", requires_grad=True)  # > CHUNK_ROWS: several chunks
    weight = torch.randn(50, 8, device="meta", requires_grad=True)
    bias = torch.zeros(50, device="meta", requires_grad=True)
    target = torch.randint(0, 50, (300,), device="meta")
    loss = FusedOutputCrossEntropy.apply(features, weight, bias, target, 0.1)
    loss.backward()
    assert {t.device.type for t in (loss, features.grad, weight.grad, bias.grad)} == {"meta"}
