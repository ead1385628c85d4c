"""Translation latency of a model made elsewhere: a MarianMT of Helsinki-NLP/opus-mt-en-fr's
size behind the zoo's interface (``model/hf.py``), greedy, with every layer's attention.

    python bench/hf_speed.py [--repeats 7] [--threads 1]

The model is built from its config (6 + 6 layers, d_model 512, 8 heads, d_ff 2048, a
59,514-piece vocabulary; random weights, no network), saved with ``save_pretrained`` and
loaded the way the app loads one (``model.hf.load_hf``); its tokenizer cuts text with the
zoo's own SentencePiece model (checkpoints/_vocab/spm.model). Random weights never choose
</s>, so the translation is held to a French sentence's usual length, 1.2 × the source
pieces + </s> (``greedy(..., max_len=…)``; ``uncapped_ms`` runs on to the search's length
limit, 2 × source + 10, for comparison). Prints one JSON line: median milliseconds over
``--repeats`` runs of the text-to-record path (``model.search.greedy``) on a 20-word sentence,
and ``matrix_products_ms``: the same tokens' unavoidable matrix products alone (the floor: on a
busy shared host it moves with the load, and the difference is the adapter's and transformers' own time).
Target (issue 29): ≤ 600 ms on one core.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from helpers.hf_tiny import save_marian  # noqa: E402
from model.hf import load_hf  # noqa: E402
from model.search import greedy, max_output_length, prepare_source  # noqa: E402

SENTENCE = "The young woman in the red coat walked across the old bridge while her two children played by the river."
OPUS_MT_EN_FR = dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                     decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                     max_position_embeddings=512, activation_function="swish")
VOCAB = 59514


def timed(fn, repeats: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


@torch.no_grad()
def matrix_products(marian, tokens: int) -> None:
    """The floor under greedy decoding: only the products a step cannot skip, one row each,
    ``tokens`` times: every decoder matrix but the cross-attention keys and values (computed
    once per sentence) and the output matrix. Memory-bound: it moves with the host's load."""
    names = ("encoder_attn.k_proj", "encoder_attn.v_proj")
    mats = [m.weight for layer in marian.model.decoder.layers for n, m in layer.named_modules()
            if isinstance(m, torch.nn.Linear) and not n.endswith(names)] + [marian.get_output_embeddings().weight]
    rows = {w.size(1): torch.randn(1, w.size(1)) for w in mats}
    for _ in range(tokens):
        for w in mats:
            torch.nn.functional.linear(rows[w.size(1)], w)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    spm = ROOT / "checkpoints" / "_vocab" / "spm.model"
    with tempfile.TemporaryDirectory() as tmp:
        folder = save_marian(Path(tmp) / "opus-mt-size", spm, spm, vocab_size=VOCAB, **OPUS_MT_EN_FR)
        t = time.perf_counter()
        model, vocab, _ = load_hf(str(folder))
        load_s = time.perf_counter() - t
    src = prepare_source(vocab, SENTENCE)
    T = round(1.2 * len(src.ids)) + 1
    capped = timed(lambda: greedy(model, vocab, src, max_len=T), args.repeats)
    floor = timed(lambda: matrix_products(model.hf, T), args.repeats)
    uncapped = timed(lambda: greedy(model, vocab, src), max(3, args.repeats // 2))
    record = greedy(model, vocab, src, max_len=T)
    print(json.dumps({
        "model": "MarianMT, opus-mt-en-fr's config, random weights", "parameters_m": round(model.num_parameters() / 1e6, 1),
        "words": len(SENTENCE.split()), "source_pieces": len(src.ids) + 1, "target_tokens": len(record.target_tokens),
        "greedy_ms": round(statistics.median(capped), 1), "greedy_runs_ms": [round(x, 1) for x in capped],
        "uncapped_ms": round(statistics.median(uncapped), 1), "uncapped_tokens": max_output_length(len(src.ids) + 1),
        "per_token_ms": round(statistics.median(capped) / len(record.target_tokens), 2),
        "matrix_products_ms": round(statistics.median(floor), 1),  # the same tokens' unavoidable products alone
        "attention_heads_shape": list(record.head_weights.shape), "load_s": round(load_s, 2),
        "threads": args.threads, "machine": f"{platform.machine()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}",
    }))


if __name__ == "__main__":
    main()
