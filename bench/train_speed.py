"""Training throughput on the real data: N optimiser steps, target tokens per second.

    python bench/train_speed.py --config configs/rnnsearch.yaml --data ../shared/data/enfr --steps 50 \
        [--precision float32|bfloat16]

Prints one JSON line. Target tokens exclude padding; the first `--warmup` steps are not
timed. Batches are the trainer's own (length-bucketed, joined pairs included).
"""
import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from model.config import load_run_config, PRECISIONS  # noqa: E402
from model.data import Batch, encode_pairs, read_split, split_path  # noqa: E402
from model.model import build_model  # noqa: E402
from model.train import epoch_batches, forward_precision, get_vocabulary  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--batch-tokens", type=int, default=None)
    p.add_argument("--precision", choices=PRECISIONS, default=None,
                   help="the forward pass's precision, as train.precision (default: the config's)")
    p.add_argument("--vocab", default=None, help="SentencePiece model (default: the config's train.vocab)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    run = load_run_config(args.config)
    if args.batch_tokens:
        run.train.batch_tokens = args.batch_tokens
    if args.vocab:
        run.train.vocab = args.vocab
    if args.precision:
        run.train.precision = args.precision
    train_file = split_path(args.data, "train")
    vocab = get_vocabulary(run.train.vocab, train_file, run.model.vocab_size)
    run.model.vocab_size = len(vocab)
    df = read_split(train_file)
    df = df[df["en"].str.split().str.len() <= run.train.max_words].reset_index(drop=True)
    src, trg, batches = epoch_batches(df, vocab, run, 0, encode_pairs(vocab, df))
    random.Random(0).shuffle(batches)
    torch.manual_seed(0)
    model = build_model(run.model)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=run.train.lr)
    tokens, t0 = 0, None
    for step, b in enumerate(batches[:args.warmup + args.steps]):
        if step == args.warmup:
            tokens, t0 = 0, time.perf_counter()
        batch = Batch([src[i] for i in b], [trg[i] for i in b])
        with forward_precision("cpu", run.train.precision):
            loss, n = model(batch.src, batch.src_len, batch.trg_in, batch.trg_out, run.train.label_smoothing)
        opt.zero_grad()
        (loss / n).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), run.train.clip_norm)
        opt.step()
        tokens += n
    seconds = time.perf_counter() - t0
    print(json.dumps({"config": args.config, "decoder": run.model.decoder, "attention": run.model.attention,
                      "parameters": sum(p.numel() for p in model.parameters()),
                      "steps": args.steps, "precision": run.train.precision, "batch_tokens": run.train.batch_tokens,
                      "threads": torch.get_num_threads(),
                      "target_tokens": tokens, "seconds": round(seconds, 2),
                      "tokens_per_second": round(tokens / seconds, 1)}))


if __name__ == "__main__":
    main()
