"""Where a greedy decoding step's time goes (docs/performance.md, where the time goes); one JSON line.

    python bench/step_cost.py [--checkpoint checkpoints/rnnsearch]

- ``encode_us``: the encoder and the per-sentence keys for a 21-piece (20-word) source;
- ``step_us``: one greedy step (``Seq2Seq.step``) of the checkpoint, median over repeats;
- ``tiny_step_us``: the same step on a model of the same kind whose every size is 8: the
  arithmetic is nothing, so this is the fixed cost of the step's operations (dispatch, Python);
- ``products_us``: the products one step makes (``step_products`` of them, ``step_megabytes``
  of fp32 weights), alone, one after another, on the copies decoding uses (model/packed.py);
- ``one_row_us``: one row times an 8 x 8, a 768 x 768 and the 8000 x 256 output matrix: packed
  (oneDNN), MKL on a transposed fp32 copy, and MKL on a plain fp32 copy (what a one-row product
  on a small decoder matrix now uses).
One core, as the latency targets are.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from model.checkpoint import load_checkpoint  # noqa: E402
from model.config import ModelConfig  # noqa: E402
from model.data import Batch  # noqa: E402
from model.model import Seq2Seq  # noqa: E402
from model.packed import pack_for_decoding, PackedMatrix  # noqa: E402

SOURCE_PIECES = 21  # a 20-word sentence


def median_us(fn, repeats: int) -> float:
    times = []
    with torch.no_grad():
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e6)
    return round(statistics.median(times), 1)


def encode_and_step_times(model: Seq2Seq, repeats: int) -> tuple[float, float]:
    batch = Batch([list(range(4, 4 + SOURCE_PIECES))])
    with torch.no_grad():
        _, memory, state = model.encode(batch.src, batch.src_len)
    prev = torch.tensor([5])
    return (median_us(lambda: model.encode(batch.src, batch.src_len), repeats // 5),
            median_us(lambda: model.step(prev, state, memory), repeats))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default="checkpoints/rnnsearch")
    p.add_argument("--repeats", type=int, default=500)
    args = p.parse_args()
    torch.set_num_threads(1)
    model, _, _ = load_checkpoint(args.checkpoint)
    tiny_cfg = ModelConfig(**{**vars(model.cfg), "vocab_size": 64, "emb_size": 8, "enc_hidden": 8,
                              "dec_hidden": 8, "attention_size": 8, "maxout_size": 8})
    tiny = Seq2Seq(tiny_cfg).eval()
    pack_for_decoding(tiny)
    # the products one step really makes: record every packed-matrix call of one step
    calls, call = [], PackedMatrix.__call__
    PackedMatrix.__call__ = lambda self, x, add=None: calls.append((self, x, add)) or call(self, x, add)
    batch = Batch([list(range(4, 4 + SOURCE_PIECES))])
    with torch.no_grad():
        _, memory, state = model.encode(batch.src, batch.src_len)
        calls.clear()
        model.step(torch.tensor([5]), state, memory)
    PackedMatrix.__call__ = call

    def products():
        for matrix, x, add in calls:
            matrix(x, add)

    one_row = {}
    for out, inp in ((8, 8), (768, 768), (8000, 256)):  # 8 x 8: the fixed cost of one product
        w, b, x = torch.randn(out, inp), torch.randn(out), torch.randn(1, inp)
        packed_w = torch.ops.mkldnn._reorder_linear_weight(w, 5)
        w_t = w.t().contiguous()
        one_row[f"{out}x{inp}"] = {
            "packed": median_us(lambda x=x, p=packed_w, b=b: torch.ops.mkldnn._linear_pointwise(x, p, b, "none", [], ""),
                                args.repeats),
            "mkl_transposed": median_us(lambda x=x, w_t=w_t, b=b: torch.addmm(b, x, w_t), args.repeats),
            "mkl_plain": median_us(lambda x=x, w=w, b=b: torch.nn.functional.linear(x, w, b), args.repeats)}
    encode_us, step_us = encode_and_step_times(model, args.repeats)
    print(json.dumps({"checkpoint": args.checkpoint, "encode_us": encode_us, "step_us": step_us,
                      "tiny_step_us": encode_and_step_times(tiny, args.repeats)[1],
                      "products_us": median_us(products, args.repeats),
                      "step_products": len(calls),
                      "step_megabytes": round(sum(m._packed.numel() if m._plain is None or x.numel() != x.size(-1)
                                                  else m._plain.numel() for m, x, _ in calls) * 4 / 1e6, 1),
                      "one_row_us": one_row}))


if __name__ == "__main__":
    main()
