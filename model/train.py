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
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
import torch.distributed as dist
from tqdm import tqdm

from .checkpoint import (CheckpointError, load_checkpoint, load_resume, save_checkpoint, save_resume, save_snapshot,
                         TRAIN_LOG, WEIGHTS)
from .attention import LocalPAttention
from .config import load_run_config, PRECISIONS, RunConfig
from .data import (Batch, encode_pairs, joined_pairs, multi_reference, oversampled, read_split, split_path,
                   token_batches)
from .metrics import corpus_bleu
from .model import Seq2Seq, build_model
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


@dataclass
class TrainingProgress:
    """Where a run stands; saved in ``OUT/resume/progress.json`` and read back by ``--resume``."""
    epoch: int = 0
    batch_in_epoch: int | None = 0  # None: continuing a shipped checkpoint, placed by epoch_fraction
    epoch_fraction: float = 0.0
    steps: int = 0
    best_dev_bleu: float = -1.0
    bad_evals: int = 0                # evaluations in a row without a better dev BLEU
    train_seconds: float = 0.0
    target_tokens: int = 0
    initialised_from: dict | None = None

    @classmethod
    def from_dict(cls, d: dict) -> TrainingProgress:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    @property
    def epochs(self) -> float:
        return round(self.epoch + self.epoch_fraction, 3)


def parse_args(argv=None) -> argparse.Namespace:
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
    p.add_argument("--lr", type=float, default=None,
                   help="override train.lr, the starting learning rate (e.g. lower for fine-tuning with --init-from); "
                        "--resume keeps the run's own")
    p.add_argument("--batch-tokens", type=int, default=None,
                   help="override train.batch_tokens (larger on a GPU, where a step costs about the same for more tokens)")
    p.add_argument("--precision", choices=PRECISIONS, default=None,
                   help="override train.precision: bfloat16 autocasts the forward pass (AVX-512 BF16 CPUs, GPUs)")
    p.add_argument("--vocab", default=None, help="override train.vocab (a SentencePiece model; trained on --data if missing)")
    p.add_argument("--vocab-size", type=int, default=None, help="pieces of a vocabulary trained here (default: model.vocab_size)")
    p.add_argument("--oversample", action="append", default=[], metavar="ORIGIN=K",
                   help="K copies of ORIGIN's pairs per epoch (repeatable); overrides train.oversample")
    p.add_argument("--keep-snapshots", type=int, default=None, metavar="N",
                   help="keep the weights of the last N evaluations in OUT/snapshots/ for "
                        "scripts/average_checkpoints.py; overrides train.keep_snapshots")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def run_config(args: argparse.Namespace) -> RunConfig:
    """The YAML config with the command line's overrides."""
    try:
        run = load_run_config(args.config)
    except (OSError, TypeError, ValueError) as e:  # a missing file, an unknown key, a bad value
        raise SystemExit(f"error: {e}") from None
    if args.eval_every:
        run.train.eval_every = args.eval_every
    if args.lr is not None:
        if not args.lr > 0:
            raise SystemExit(f"--lr takes a learning rate > 0, not {args.lr}")
        run.train.lr = args.lr
    if args.batch_tokens is not None:
        if args.batch_tokens < 1:
            raise SystemExit(f"--batch-tokens takes a whole number ≥ 1, not {args.batch_tokens}")
        run.train.batch_tokens = args.batch_tokens
    if args.vocab:
        run.train.vocab = args.vocab
    if args.precision:
        run.train.precision = args.precision
    if args.vocab_size:
        run.model.vocab_size = args.vocab_size
    if args.keep_snapshots is not None:
        if args.keep_snapshots < 0:
            raise SystemExit(f"--keep-snapshots takes a whole number ≥ 0, not {args.keep_snapshots}")
        run.train.keep_snapshots = args.keep_snapshots
    if args.oversample:
        try:
            run.train.oversample = {o: int(k) for o, k in (a.split("=", 1) for a in args.oversample)}
            if min(run.train.oversample.values()) < 1:
                raise ValueError
        except ValueError:
            raise SystemExit(f"--oversample takes ORIGIN=K with a whole K ≥ 1, not {args.oversample}") from None
    return run


def set_up_process(args: argparse.Namespace, out: Path) -> tuple[int, int, torch.device]:
    """Rank, world size and device (DistributedDataParallel under torchrun); logging to OUT/train.log."""
    rank, world = 0, 1
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if args.device == "cuda" else "cpu")
    if args.threads:
        torch.set_num_threads(args.threads)
    handlers = [logging.StreamHandler(sys.stderr)]
    if rank == 0:
        handlers.append(logging.FileHandler(out / "train.log"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", handlers=handlers, force=True)
    return rank, world, device


def restore(args, run: RunConfig, out: Path, model: Seq2Seq, optimizer, device) -> TrainingProgress:
    """A fresh run, or one continued (``--resume``) or warm-started (``--init-from``);
    a broken checkpoint or resume state ends with its message, not a traceback."""
    progress = TrainingProgress()
    try:
        restored = load_resume(out, model, optimizer) if args.resume else None
        if restored:
            progress = TrainingProgress.from_dict(restored)
            log.info("resumed at epoch %d, batch %d, step %d", progress.epoch, progress.batch_in_epoch, progress.steps)
        elif args.resume:
            restored = continue_shipped(out, model, optimizer)
            if restored is None:
                raise SystemExit(f"error: --resume: {out} has neither resume/ nor a shipped checkpoint to continue")
            progress = TrainingProgress.from_dict(restored)
            log.info("no %s/resume/: continuing the shipped checkpoint at epoch %.3f, step %d, lr %g (fresh Adam moments)",
                     out, progress.epochs, progress.steps, optimizer.param_groups[0]["lr"])
        init_from = args.init_from or run.train.init_from
        if init_from and not restored:  # a warm start only begins a run; a resumed one keeps its own weights
            progress.initialised_from = initialise_from(model, init_from, device)
            log.info("initialised from %s; fresh: %s", init_from, ", ".join(progress.initialised_from["fresh"]) or "nothing")
    except CheckpointError as e:
        raise SystemExit(f"error: {e}") from None
    return progress


def forward_precision(device: torch.device | str, precision: str):
    """The context a training forward pass runs in: bf16 autocast for ``bfloat16`` (matrix
    products in bfloat16; weights, Adam and the output softmax stay float32), else none."""
    device_type = torch.device(device).type
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=precision == "bfloat16")


def window_half_width(D: float, start: float, warmup_steps: int, step: int) -> float:
    """local-p's half-width at optimiser step ``step`` (0-based) under the window warm-up.

    From ``start`` pieces (wider than most sentences: local-p then attends like global
    attention, and align learns where to look as fast as Luong ``general`` does) down to D,
    linearly; D from step ``warmup_steps`` on. Without it align can only learn inside a window
    centred where p_i starts (mid-sentence), and p_i only moves towards where align looks: the
    two hold each other still for thousands of steps (docs/results.md, local-p)."""
    if warmup_steps <= 0 or step >= warmup_steps or start <= D:
        return D
    return D + (start - D) * (1 - step / warmup_steps)


class Trainer:
    """One training run: the optimiser loop, evaluation on dev, checkpoints and the logs."""

    def __init__(self, args, run: RunConfig, out: Path, rank: int, world: int, device: torch.device):
        self.args, self.run, self.out, self.rank, self.world, self.device = args, run, out, rank, world, device
        torch.manual_seed(run.train.seed)
        train_file, dev_file = split_path(args.data, "train"), split_path(args.data, "dev")
        self.vocab = get_vocabulary(run.train.vocab, train_file, run.model.vocab_size)
        run.model.vocab_size = len(self.vocab)
        train_df = read_split(train_file)
        self.train_df = train_df[train_df["en"].str.split().str.len() <= run.train.max_words].reset_index(drop=True)
        # joined pairs are drawn from the corpus as it is; only the fixed pairs are oversampled
        self.base = encode_pairs(self.vocab, oversampled(self.train_df, run.train.oversample))
        log.info("%s: %d training pairs (≤ %d words%s), vocabulary %d", run.name, len(self.base[0]),
                 run.train.max_words, f", oversampled {run.train.oversample}" if run.train.oversample else "",
                 len(self.vocab))
        self.dev = DevSet(self.vocab, dev_file, run.train.dev_sentences) if rank == 0 else None
        self.model = build_model(run.model).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=run.train.lr)
        self.local_p = [m for m in self.model.modules() if isinstance(m, LocalPAttention)]
        self.progress = restore(args, run, out, self.model, self.optimizer, device)
        # the window warm-up starts local-p from scratch; a warm start's p_i is already trained,
        # and its step count starting at 0 must not widen the window again
        self.window_warmup_steps = 0 if self.progress.initialised_from else run.train.window_warmup_steps
        if self.local_p and run.train.window_warmup_steps and not self.window_warmup_steps:
            log.info("local-p window warm-up skipped: the run starts from trained weights (D = %g)",
                     run.model.local_window)
        self.train_model = torch.nn.parallel.DistributedDataParallel(self.model) if world > 1 else self.model
        log.info("%s: %.2fM parameters, decoder %s, attention %s", run.name, self.model.num_parameters() / 1e6,
                 run.model.decoder, run.model.attention)

    def checkpoint_config(self) -> dict:
        p = self.progress
        gpu = f" ({torch.cuda.get_device_name(self.device)})" if self.device.type == "cuda" else ""
        return {"name": self.run.name, "description": self.run.description, "train": asdict(self.run.train),
                "training": {"data": str(self.args.data), "train_pairs": len(self.base[0]), "steps": p.steps,
                             "epochs": p.epochs, "wall_time_minutes": round(p.train_seconds / 60, 1),
                             "target_tokens_seen": p.target_tokens, "best_dev_bleu": p.best_dev_bleu,
                             "initialised_from": p.initialised_from,
                             "machine": f"{cpu_name()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch "
                                        f"thread(s), torch {torch.__version__}, device {self.device}{gpu}, "
                                        f"{self.world} process(es)"}}

    def evaluate_and_save(self, train_loss: float, tokens_per_second: float) -> None:
        """Dev loss and BLEU, a train_log.csv row, the checkpoint when dev BLEU improves, the
        learning-rate decay when it has not for ``patience`` evaluations, the resume state."""
        p, optimizer = self.progress, self.optimizer
        dev_loss, dev_bleu = self.dev.evaluate(self.model, self.vocab, self.device)
        row = {"epoch": p.epochs, "steps": p.steps, "train_loss": round(train_loss, 4), "dev_loss": round(dev_loss, 4),
               "dev_bleu": round(dev_bleu, 2), "tokens_per_second": round(tokens_per_second),
               "lr": optimizer.param_groups[0]["lr"], "minutes": round(p.train_seconds / 60, 1)}
        new = not (self.out / TRAIN_LOG).exists()
        with open(self.out / TRAIN_LOG, "a", newline="") as f:
            w = csv.DictWriter(f, LOG_FIELDS)
            if new:
                w.writeheader()
            w.writerow(row)
        log.info("eval %s", json.dumps(row))
        if self.local_p and self.window_warmup_steps:
            log.info("local-p half-width D = %.1f (window warm-up)", self.local_p[0].D)
        if dev_bleu > p.best_dev_bleu:
            p.best_dev_bleu, p.bad_evals = dev_bleu, 0
            save_checkpoint(self.out, self.model, self.vocab, self.checkpoint_config())
            log.info("new best dev BLEU %.2f: saved %s", dev_bleu, self.out)
        else:
            p.bad_evals += 1
            if p.bad_evals >= self.run.train.patience:
                for g in optimizer.param_groups:
                    g["lr"] = max(self.run.train.min_lr, g["lr"] * self.run.train.lr_decay)
                p.bad_evals = 0
                log.info("dev BLEU did not improve: lr -> %g", optimizer.param_groups[0]["lr"])
        save_resume(self.out, self.model, optimizer, asdict(p))
        if self.run.train.keep_snapshots:
            save_snapshot(self.out, self.model, asdict(p), self.run.train.keep_snapshots)

    def train_step(self, src, trg, indices) -> tuple[float, int]:
        batch = Batch([src[i] for i in indices], [trg[i] for i in indices]).to(self.device)
        cfg, steps = self.run.train, self.progress.steps
        if cfg.warmup_steps and steps < cfg.warmup_steps:  # linear warm-up; the plateau decay takes over after it
            for g in self.optimizer.param_groups:
                g["lr"] = cfg.lr * (steps + 1) / cfg.warmup_steps
        if steps <= self.window_warmup_steps:  # the warm-up's steps, and D once at its end
            for attention in self.local_p:  # this process's own modules: nothing served is widened
                attention.set_half_width(window_half_width(self.run.model.local_window, cfg.window_warmup_start,
                                                           self.window_warmup_steps, steps))
        with forward_precision(self.device, cfg.precision):
            loss, ntok = self.train_model(batch.src, batch.src_len, batch.trg_in, batch.trg_out, cfg.label_smoothing)
        self.optimizer.zero_grad(set_to_none=True)
        (loss / ntok).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.run.train.clip_norm)
        self.optimizer.step()
        return float(loss.detach()), ntok

    def train(self) -> None:
        """Epochs of length-bucketed batches until max_epochs, --max-steps, --max-minutes or the
        learning rate's floor; an evaluation every eval_every steps and at the end."""
        args, p, cfg = self.args, self.progress, self.run.train
        start, seconds_at_start = time.time(), p.train_seconds
        self.model.train()
        window_loss, window_tokens, window_time = 0.0, 0, time.time()
        stop = False
        while p.epoch < cfg.max_epochs and not stop:
            src, trg, batches = epoch_batches(self.train_df, self.vocab, self.run, p.epoch, self.base)
            mine = batches[self.rank::self.world]
            if p.batch_in_epoch is None:  # continuing a shipped checkpoint: its place in this epoch
                p.batch_in_epoch = round(p.epoch_fraction * len(mine))
            bar = tqdm(total=len(mine), initial=p.batch_in_epoch, desc=f"{self.run.name} epoch {p.epoch}",
                       disable=args.quiet or self.rank != 0, mininterval=5 if sys.stderr.isatty() else 60, file=sys.stderr)
            for bi in range(p.batch_in_epoch, len(mine)):
                loss, ntok = self.train_step(src, trg, mine[bi])
                p.steps, p.batch_in_epoch, p.epoch_fraction = p.steps + 1, bi + 1, (bi + 1) / len(mine)
                p.target_tokens += ntok * self.world
                window_loss, window_tokens = window_loss + loss, window_tokens + ntok
                p.train_seconds = seconds_at_start + time.time() - start
                bar.update(1)
                if self.rank == 0 and bar.n % 50 == 0:
                    bar.set_postfix(loss=f"{window_loss / max(1, window_tokens):.3f}")
                out_of_time = args.max_minutes is not None and time.time() - start > args.max_minutes * 60
                out_of_steps = args.max_steps is not None and p.steps >= args.max_steps
                if p.steps % cfg.eval_every == 0 or out_of_time or out_of_steps:
                    rate = window_tokens * self.world / max(time.time() - window_time, 1e-9)
                    if self.rank == 0:
                        self.evaluate_and_save(window_loss / max(1, window_tokens), rate)
                        log.info("%d steps, %.1f min, %.0f target tokens/s", p.steps, p.train_seconds / 60, rate)
                    if self.world > 1:
                        dist.barrier()
                    window_loss, window_tokens, window_time = 0.0, 0, time.time()
                    if self.optimizer.param_groups[0]["lr"] <= cfg.min_lr:
                        log.info("learning rate reached its minimum: early stop")
                        stop = True
                    if out_of_time or out_of_steps or stop:
                        stop = True
                        break
            bar.close()
            if not stop:
                p.epoch, p.batch_in_epoch, p.epoch_fraction = p.epoch + 1, 0, 0.0

    def finish(self) -> None:
        """The resume state, and the run so far in the shipped config (even if its best weights are older)."""
        p = self.progress
        save_resume(self.out, self.model, self.optimizer, asdict(p))
        cfg_path = self.out / "config.json"
        if cfg_path.exists():
            saved = json.loads(cfg_path.read_text())
            saved["training"]["total_steps_run"] = p.steps
            saved["training"]["total_minutes_run"] = round(p.train_seconds / 60, 1)
            cfg_path.write_text(json.dumps(saved, indent=2, ensure_ascii=False) + "\n")
        log.info("done: %d steps, %.1f minutes, best dev BLEU %.2f", p.steps, p.train_seconds / 60, p.best_dev_bleu)


def main(argv=None) -> dict:
    args = parse_args(argv)
    run = run_config(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rank, world, device = set_up_process(args, out)
    trainer = Trainer(args, run, out, rank, world, device)
    trainer.train()
    if rank == 0:
        trainer.finish()
    if world > 1:
        dist.destroy_process_group()
    return asdict(trainer.progress)


if __name__ == "__main__":
    main()
