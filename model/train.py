"""Train a model of the zoo on the real corpora.

    python -m model.train --config configs/rnnsearch.yaml --data ../shared/data/enfr \
        --out checkpoints/rnnsearch [--max-steps N] [--max-minutes M] [--resume] [--device cpu|cuda]

Resumable: the latest full-precision weights and Adam state are kept in ``OUT/resume/``
(safetensors + JSON) at every evaluation and at exit, and ``--resume`` continues from
there (same epoch, same batch). ``OUT/resume/`` is not shipped, so on a fresh clone
``--resume`` continues the shipped checkpoint instead: its fp16 weights, step count, place
in the epoch, best dev BLEU, wall time and learning rate, with fresh Adam moments. The
best model on dev BLEU is saved to ``OUT`` as the fp16 checkpoint. Progress goes to a
progress bar, ``OUT/train.log`` and, one row per evaluation, ``OUT/train_log.csv``. Under
``torchrun --nproc_per_node N -m model.train …`` the same command trains with
DistributedDataParallel (gloo on CPU, nccl on GPU).
"""
from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import platform
import random
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist
from tqdm import tqdm

from .checkpoint import CheckpointError, load_checkpoint, load_resume, save_checkpoint, save_resume, TRAIN_LOG, WEIGHTS
from .config import load_run_config, RunConfig
from .data import Batch, encode_pairs, joined_pairs, multi_reference, read_split, split_path, token_batches
from .metrics import corpus_bleu
from .model import Seq2Seq
from .search import greedy_batch
from .vocabulary import train_vocabulary, Vocabulary

log = logging.getLogger("train")
LOG_FIELDS = ["epoch", "steps", "train_loss", "dev_loss", "dev_bleu", "tokens_per_second", "lr", "minutes"]


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def get_vocabulary(path: str, train_file: Path, vocab_size: int) -> Vocabulary:
    if not Path(path).exists():
        log.info("training SentencePiece model %s on %s", path, train_file)
        return train_vocabulary(train_file, path, vocab_size)
    return Vocabulary(path)


class DevSet:
    """A fixed subset of the dev split for model selection, and its pairs for dev loss.

    The same number of multi-reference segments is drawn from every origin (seeded), so a
    split that mixes short Tatoeba lines with long news sentences (``enfr-broad``: Tatoeba,
    Multi30k, Hansards, newstest2013) is represented corpus by corpus, whatever each corpus'
    share of the rows."""

    SEED = 2013

    def __init__(self, vocab: Vocabulary, dev_file: Path, n: int):
        df = read_split(dev_file)
        sources, refs, origins = multi_reference(df)
        by_origin: dict[str, list[int]] = {}
        for i, origin in enumerate(origins):
            by_origin.setdefault(origin, []).append(i)
        per_origin = max(1, n // len(by_origin))
        rng = random.Random(self.SEED)
        chosen = sorted(i for origin in sorted(by_origin)
                        for i in rng.sample(by_origin[origin], min(per_origin, len(by_origin[origin]))))
        self.sources = [sources[i] for i in chosen]
        self.refs = [refs[i] for i in chosen]
        self.src_ids = vocab.encode_batch(self.sources)
        picked = set(self.sources)
        src, trg = encode_pairs(vocab, df[df["en"].isin(picked)])
        self.loss_batches = [Batch([src[i] for i in b], [trg[i] for i in b])
                             for b in token_batches([(len(s), len(t)) for s, t in zip(src, trg)], 4000)]

    @torch.no_grad()
    def evaluate(self, model: Seq2Seq, vocab: Vocabulary, device) -> tuple[float, float]:
        model.eval()
        total, ntok = 0.0, 0
        for b in self.loss_batches:
            b = b.to(device)
            loss, n = model(b.src, b.src_len, b.trg_in, b.trg_out)
            total, ntok = total + float(loss), ntok + n
        hyps = []
        order = sorted(range(len(self.src_ids)), key=lambda i: len(self.src_ids[i]))
        out = [None] * len(order)
        for k in range(0, len(order), 100):
            idx = order[k:k + 100]
            for i, ids in zip(idx, greedy_batch(model, [self.src_ids[i] for i in idx])):
                out[i] = ids
        hyps = vocab.decode_batch(out)
        bleu, _ = corpus_bleu(hyps, self.refs)
        model.train()
        return total / max(1, ntok), bleu.score


def epoch_batches(train_df, vocab, run: RunConfig, epoch: int, base: tuple[list, list]):
    """This epoch's batches: the fixed pairs plus freshly drawn joined pairs, bucketed."""
    rng = random.Random(run.train.seed * 1000 + epoch)
    src, trg = list(base[0]), list(base[1])
    if run.train.joined_fraction > 0:
        joined = joined_pairs(train_df, run.train.joined_fraction, run.train.joined_max_pairs,
                              run.train.max_words, rng)
        js, jt = encode_pairs(vocab, joined)
        src += js
        trg += jt
    lengths = [(len(s) + 1, len(t) + 1) for s, t in zip(src, trg)]
    return src, trg, token_batches(lengths, run.train.batch_tokens, rng)


def initialise_from(model: Seq2Seq, folder: str, device) -> dict:
    """Start from another checkpoint's weights (``--init-from``): every tensor the two models
    share by name and shape is copied. Tensors only this model has stay freshly initialised,
    so a local-p model can start from a trained global one of the same score (local-p adds
    only W_p and v_p, eq. 9). Anything else that differs is an error, not a silent partial load."""
    theirs = load_checkpoint(folder, device=str(device), for_decoding=False)[0].state_dict()
    ours = model.state_dict()
    # local-p wraps its score (LocalPAttention.inner): a global model's scorer becomes that inner one
    inner = {k: k.replace("decoder.attention.", "decoder.attention.inner.", 1) for k in theirs}
    theirs = {(inner[k] if k not in ours and inner[k] in ours else k): v for k, v in theirs.items()}
    foreign = sorted(set(theirs) - set(ours))
    reshaped = sorted(k for k in set(theirs) & set(ours) if theirs[k].shape != ours[k].shape)
    if foreign or reshaped:
        raise SystemExit(f"error: --init-from {folder}: a different architecture "
                         f"({'weights this model lacks: ' + ', '.join(foreign[:5]) if foreign else ''}"
                         f"{'; ' if foreign and reshaped else ''}"
                         f"{'other shapes: ' + ', '.join(reshaped[:5]) if reshaped else ''})")
    model.load_state_dict(theirs, strict=False)
    return {"checkpoint": str(folder), "fresh": sorted(set(ours) - set(theirs))}


def continue_shipped(out: Path, model: Seq2Seq, optimizer: torch.optim.Optimizer) -> dict | None:
    """``--resume`` without ``OUT/resume/``: continue the checkpoint shipped in OUT.

    The shipped weights are the best on dev, so the run goes on from *their* step (config
    ``training.steps``), not from where the earlier run stopped; later rows of train_log.csv
    stay as history. Adam's moments were not shipped and start afresh (they re-estimate
    within a few hundred steps); the learning rate is the one logged at that step."""
    if not (out / WEIGHTS).exists():
        return None
    shipped, _, config = load_checkpoint(out, for_decoding=False)
    model.load_state_dict(shipped.state_dict())
    training = config.get("training", {})
    lr = optimizer.param_groups[0]["lr"]
    if (out / TRAIN_LOG).exists():
        with open(out / TRAIN_LOG, newline="") as f:
            rows = [r for r in csv.DictReader(f) if int(r["steps"]) <= training["steps"]]
        lr = float(rows[-1]["lr"]) if rows else lr
    for g in optimizer.param_groups:
        g["lr"] = lr
    epoch = int(training["epochs"])
    return {"epoch": epoch, "epoch_fraction": training["epochs"] - epoch, "batch_in_epoch": None,
            "steps": training["steps"], "best_dev_bleu": training["best_dev_bleu"], "bad_evals": 0,
            "train_seconds": training["wall_time_minutes"] * 60, "target_tokens": training["target_tokens_seen"],
            "initialised_from": training.get("initialised_from")}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="configs/NAME.yaml")
    p.add_argument("--data", required=True, help="folder with train/dev .tsv.gz (../shared/data/enfr)")
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many optimiser steps in total")
    p.add_argument("--max-minutes", type=float, default=None, help="stop cleanly after M minutes of training")
    p.add_argument("--resume", action="store_true", help="continue from OUT/resume/, or else from the checkpoint shipped in OUT")
    p.add_argument("--init-from", default=None,
                   help="start from another checkpoint's weights (fresh optimiser); overrides train.init_from")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: all cores)")
    p.add_argument("--eval-every", type=int, default=None, help="override train.eval_every")
    p.add_argument("--vocab", default=None, help="override train.vocab (a SentencePiece model; trained on --data if missing)")
    p.add_argument("--vocab-size", type=int, default=None, help="pieces of a vocabulary trained here (default: model.vocab_size)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(argv)

    run = load_run_config(args.config)
    if args.eval_every:
        run.train.eval_every = args.eval_every
    if args.vocab:
        run.train.vocab = args.vocab
    if args.vocab_size:
        run.model.vocab_size = args.vocab_size
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    rank, world = 0, 1
    if distributed:
        dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if args.device == "cuda" else "cpu")
    if args.threads:
        torch.set_num_threads(args.threads)

    handlers = [logging.StreamHandler(sys.stderr)]
    if rank == 0:
        handlers.append(logging.FileHandler(out / "train.log"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", handlers=handlers, force=True)

    torch.manual_seed(run.train.seed)
    train_file, dev_file = split_path(args.data, "train"), split_path(args.data, "dev")
    vocab = get_vocabulary(run.train.vocab, train_file, run.model.vocab_size)
    run.model.vocab_size = len(vocab)

    train_df = read_split(train_file)
    train_df = train_df[train_df["en"].str.split().str.len() <= run.train.max_words].reset_index(drop=True)
    base = encode_pairs(vocab, train_df)
    log.info("%s: %d training pairs (≤ %d words), vocabulary %d", run.name, len(base[0]), run.train.max_words, len(vocab))
    dev = DevSet(vocab, dev_file, run.train.dev_sentences) if rank == 0 else None

    model = Seq2Seq(run.model).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=run.train.lr)
    progress = {"epoch": 0, "batch_in_epoch": 0, "steps": 0, "best_dev_bleu": -1.0, "bad_evals": 0,
                "train_seconds": 0.0, "target_tokens": 0, "initialised_from": None}
    try:  # a broken checkpoint or resume state: its message, not a traceback
        restored = load_resume(out, model, optimizer) if args.resume else None
        if restored:
            progress.update(restored)
            log.info("resumed at epoch %d, batch %d, step %d", progress["epoch"], progress["batch_in_epoch"], progress["steps"])
        elif args.resume:
            restored = continue_shipped(out, model, optimizer)
            if restored is None:
                raise SystemExit(f"error: --resume: {out} has neither resume/ nor a shipped checkpoint to continue")
            progress.update(restored)
            log.info("no %s/resume/: continuing the shipped checkpoint at epoch %.3f, step %d, lr %g (fresh Adam moments)",
                     out, progress["epoch"] + progress["epoch_fraction"], progress["steps"], optimizer.param_groups[0]["lr"])
        init_from = args.init_from or run.train.init_from
        if init_from and not restored:  # a warm start only begins a run; a resumed one keeps its own weights
            progress["initialised_from"] = initialise_from(model, init_from, device)
            log.info("initialised from %s; fresh: %s", init_from, ", ".join(progress["initialised_from"]["fresh"]) or "nothing")
    except CheckpointError as e:
        raise SystemExit(f"error: {e}") from None
    train_model = torch.nn.parallel.DistributedDataParallel(model) if distributed else model
    log.info("%s: %.2fM parameters, decoder %s, attention %s", run.name, model.num_parameters() / 1e6,
             run.model.decoder, run.model.attention)

    def checkpoint_config() -> dict:
        return {"name": run.name, "description": run.description, "train": asdict(run.train),
                "training": {"data": str(args.data), "train_pairs": len(base[0]), "steps": progress["steps"],
                             "epochs": round(progress["epoch"] + progress.get("epoch_fraction", 0.0), 3),
                             "wall_time_minutes": round(progress["train_seconds"] / 60, 1),
                             "target_tokens_seen": progress["target_tokens"],
                             "best_dev_bleu": progress["best_dev_bleu"],
                             "initialised_from": progress.get("initialised_from"),
                             "machine": f"{cpu_name()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch "
                                        f"thread(s), torch {torch.__version__}, device {device}, {world} process(es)"}}

    def evaluate_and_save(train_loss: float, tokens_per_second: float) -> None:
        dev_loss, dev_bleu = dev.evaluate(model, vocab, device)
        row = {"epoch": round(progress["epoch"] + progress.get("epoch_fraction", 0.0), 3), "steps": progress["steps"],
               "train_loss": round(train_loss, 4), "dev_loss": round(dev_loss, 4), "dev_bleu": round(dev_bleu, 2),
               "tokens_per_second": round(tokens_per_second), "lr": optimizer.param_groups[0]["lr"],
               "minutes": round(progress["train_seconds"] / 60, 1)}
        new = not (out / TRAIN_LOG).exists()
        with open(out / TRAIN_LOG, "a", newline="") as f:
            w = csv.DictWriter(f, LOG_FIELDS)
            if new:
                w.writeheader()
            w.writerow(row)
        log.info("eval %s", json.dumps(row))
        if dev_bleu > progress["best_dev_bleu"]:
            progress["best_dev_bleu"], progress["bad_evals"] = dev_bleu, 0
            save_checkpoint(out, model, vocab, checkpoint_config())
            log.info("new best dev BLEU %.2f: saved %s", dev_bleu, out)
        else:
            progress["bad_evals"] += 1
            if progress["bad_evals"] >= run.train.patience:
                for g in optimizer.param_groups:
                    g["lr"] = max(run.train.min_lr, g["lr"] * run.train.lr_decay)
                progress["bad_evals"] = 0
                log.info("dev BLEU did not improve: lr -> %g", optimizer.param_groups[0]["lr"])
        save_resume(out, model, optimizer, progress)

    start = time.time()
    seconds_at_start = progress["train_seconds"]
    stop = False
    model.train()
    window_loss, window_tokens, window_time = 0.0, 0, time.time()
    while progress["epoch"] < run.train.max_epochs and not stop:
        src, trg, batches = epoch_batches(train_df, vocab, run, progress["epoch"], base)
        my_batches = batches[rank::world]
        if progress["batch_in_epoch"] is None:  # continuing a shipped checkpoint: its place in this epoch
            progress["batch_in_epoch"] = round(progress["epoch_fraction"] * len(my_batches))
        bar = tqdm(total=len(my_batches), initial=progress["batch_in_epoch"], desc=f"{run.name} epoch {progress['epoch']}",
                   disable=args.quiet or rank != 0, mininterval=5 if sys.stderr.isatty() else 60, file=sys.stderr)
        for bi in range(progress["batch_in_epoch"], len(my_batches)):
            batch = Batch([src[i] for i in my_batches[bi]], [trg[i] for i in my_batches[bi]]).to(device)
            loss, ntok = train_model(batch.src, batch.src_len, batch.trg_in, batch.trg_out, run.train.label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            (loss / ntok).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), run.train.clip_norm)
            optimizer.step()
            progress["steps"] += 1
            progress["batch_in_epoch"] = bi + 1
            progress["epoch_fraction"] = (bi + 1) / len(my_batches)
            progress["target_tokens"] += ntok * world
            window_loss += float(loss.detach())
            window_tokens += ntok
            progress["train_seconds"] = seconds_at_start + time.time() - start
            bar.update(1)
            if rank == 0 and bar.n % 50 == 0:
                bar.set_postfix(loss=f"{window_loss / max(1, window_tokens):.3f}")
            out_of_time = args.max_minutes is not None and time.time() - start > args.max_minutes * 60
            out_of_steps = args.max_steps is not None and progress["steps"] >= args.max_steps
            if progress["steps"] % run.train.eval_every == 0 or out_of_time or out_of_steps:
                elapsed = time.time() - window_time
                if rank == 0:
                    evaluate_and_save(window_loss / max(1, window_tokens), window_tokens * world / max(elapsed, 1e-9))
                    log.info("%d steps, %.1f min, %.0f target tokens/s", progress["steps"],
                             progress["train_seconds"] / 60, window_tokens * world / max(elapsed, 1e-9))
                if distributed:
                    dist.barrier()
                window_loss, window_tokens, window_time = 0.0, 0, time.time()
                if optimizer.param_groups[0]["lr"] <= run.train.min_lr:
                    log.info("learning rate reached its minimum: early stop")
                    stop = True
                if out_of_time or out_of_steps or stop:
                    stop = True
                    break
        bar.close()
        if not stop:
            progress["epoch"] += 1
            progress["batch_in_epoch"] = 0
            progress["epoch_fraction"] = 0.0
    if rank == 0:
        save_resume(out, model, optimizer, progress)
        # the shipped config records the run so far, even if the best weights are older
        cfg_path = out / "config.json"
        if cfg_path.exists():
            saved = json.loads(cfg_path.read_text())
            saved["training"]["total_steps_run"] = progress["steps"]
            saved["training"]["total_minutes_run"] = round(progress["train_seconds"] / 60, 1)
            cfg_path.write_text(json.dumps(saved, indent=2, ensure_ascii=False) + "\n")
        log.info("done: %d steps, %.1f minutes, best dev BLEU %.2f", progress["steps"],
                 progress["train_seconds"] / 60, progress["best_dev_bleu"])
    if distributed:
        dist.destroy_process_group()
    return progress


if __name__ == "__main__":
    main()
