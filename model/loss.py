"""The output layer and the training loss, fused and chunked for CPU speed.

    p(y_i | y_<i, x) = softmax(W_o t_i + b_o)          (Bahdanau A.2.2; Luong eq. 6)
    loss = Σ_i −(1−ε) log p(y_i) − ε/V Σ_v log p(v)    (label smoothing, Szegedy et al. 2016)

Computing all B·T x V logits at once makes 100 MB temporaries every step; glibc hands
blocks that large straight back to the kernel, so every step pays page faults for them.
Here the rows go through in chunks of a few MB, and the gradient with respect to the
logits, p − q, is formed in the forward pass (the loss is the graph's end), so the
backward is two matrix products per chunk.
"""
from __future__ import annotations

import torch

from .vocabulary import PAD_ID

CHUNK_ROWS = 256


class FusedOutputCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, features, weight, bias, target, eps):
        # features: N x O, weight: V x O, bias: V, target: N (PAD_ID rows are ignored)
        V = weight.size(0)
        need_grad = any(ctx.needs_input_grad[:3])
        total = features.new_zeros(())
        grads = []
        for start in range(0, features.size(0), CHUNK_ROWS):
            f = features[start:start + CHUNK_ROWS]
            y = target[start:start + CHUNK_ROWS]
            keep = (y != PAD_ID).to(features.dtype).unsqueeze(1)  # rows x 1
            logp = torch.log_softmax(torch.addmm(bias, f, weight.t()), dim=-1)  # rows x V
            nll = -logp.gather(1, y.unsqueeze(1))  # rows x 1
            total += (keep * ((1 - eps) * nll - (eps / V) * logp.sum(-1, keepdim=True))).sum()
            if need_grad:
                g = logp.exp_().sub_(eps / V)  # p − ε/V, in place
                g.scatter_add_(1, y.unsqueeze(1), torch.full((g.size(0), 1), -(1 - eps), dtype=g.dtype, device=g.device))
                grads.append(g.mul_(keep))  # d loss / d logits for these rows
        ctx.save_for_backward(features, weight)
        ctx.grads = grads
        return total

    @staticmethod
    def backward(ctx, grad_out):
        features, weight = ctx.saved_tensors
        grad_f = torch.empty_like(features)
        grad_w = torch.zeros_like(weight)
        grad_b = torch.zeros(weight.size(0), dtype=weight.dtype, device=weight.device)
        for k, g in enumerate(ctx.grads):
            rows = slice(k * CHUNK_ROWS, k * CHUNK_ROWS + g.size(0))
            g = g * grad_out
            torch.mm(g, weight, out=grad_f[rows])
            grad_w.addmm_(g.t(), features[rows])
            grad_b += g.sum(0)
        ctx.grads = None
        return grad_f, grad_w, grad_b, None, None


def output_cross_entropy(features: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                         target: torch.Tensor, label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
    """Summed (label-smoothed) cross-entropy of W·features + b against target, padding excluded.

    features: B x T x O, target: B x T. Returns (loss, number of target tokens).
    """
    # under bf16 autocast the features arrive in bf16: the softmax and its gradient p − q stay in
    # the parameters' own precision (float32), where log-probabilities over 8k pieces are exact
    f = features.reshape(-1, features.size(-1)).to(bias.dtype).contiguous()
    weight = weight.to(bias.dtype)
    y = target.reshape(-1)
    with torch.autocast(device_type=f.device.type, enabled=False):
        loss = FusedOutputCrossEntropy.apply(f, weight, bias, y, label_smoothing)
    return loss, int((y != PAD_ID).sum())
