"""Toy tasks on which attention is learned in seconds: reversing or copying digit strings.

Used by the learning tests ("the attention of a model trained to reverse is
anti-diagonal"), by the tests' tiny checkpoint, and by the app's "Watch attention
emerge" view, which calls :func:`train_toy` with a callback to animate the alignment.
The models are the real ``Seq2Seq`` classes, only smaller, with a real SentencePiece
vocabulary trained on the toy data.
"""
from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from collections.abc import Callable

import numpy as np
import torch

from .checkpoint import save_checkpoint
from .config import ModelConfig
from .data import Batch
from .model import Seq2Seq, build_model
from .search import forced, greedy_batch, PreparedSource
from .vocabulary import Vocabulary
from .zoo import KINDS

TASKS = ("reverse", "copy", "sort")


def toy_pair(task: str, rng: random.Random, min_len: int = 4, max_len: int = 9) -> tuple[str, str]:
    digits = [str(rng.randint(0, 9)) for _ in range(rng.randint(min_len, max_len))]
    if task == "reverse":
        target = digits[::-1]
    elif task == "copy":
        target = digits
    elif task == "sort":
        target = sorted(digits)
    else:
        raise ValueError(f"unknown toy task {task!r}; choose from {TASKS}")
    return " ".join(digits), " ".join(target)


_VOCAB_CACHE: dict[str, Vocabulary] = {}


def toy_vocabulary(folder: str | Path | None = None) -> Vocabulary:
    """A SentencePiece model over digit strings: one piece per digit (plus bytes and specials)."""
    import sentencepiece as spm
    key = str(folder)
    if key in _VOCAB_CACHE and _VOCAB_CACHE[key].path.exists():
        return _VOCAB_CACHE[key]
    folder = Path(folder or tempfile.mkdtemp(prefix="toy-vocab-"))
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    lines = [toy_pair("copy", rng, 1, 12)[0] for _ in range(2000)]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=str(folder / "spm"), vocab_size=300, model_type="unigram",
        byte_fallback=True, pad_id=0, unk_id=1, bos_id=2, eos_id=3, hard_vocab_limit=False, minloglevel=2,
        character_coverage=1.0)
    vocab = Vocabulary(folder / "spm.model")
    _VOCAB_CACHE[key] = vocab
    return vocab


def tiny_config(vocab: Vocabulary, decoder: str = "rnnsearch", attention: str = "additive", size: int = 32) -> ModelConfig:
    return ModelConfig(decoder=decoder, attention=attention, vocab_size=len(vocab), emb_size=size,
                       enc_hidden=size, dec_hidden=size, attention_size=size, maxout_size=size,
                       dropout=0.0, local_window=4, layers=2, heads=4, ff_size=2 * size,
                       # two layers: on digit reversal the alignment forms in the last one (its
                       # heads averaged find the anti-diagonal at seeds 0, 1, 2; the first layer
                       # 2-4 of 7 positions, and which of them varies with the CPU's rounding)
                       shown_layer=-1)


def train_toy(cfg: ModelConfig, vocab: Vocabulary, task: str = "reverse", steps: int = 300,
              batch_size: int = 64, lr: float = 0.01, seed: int = 0, probe: str = "1 2 3 4 5 6",
              every: int = 25, on_frame: Callable[[int, float, np.ndarray], None] | None = None,
              time_limit: float | None = None, model: Seq2Seq | None = None,
              lengths: tuple[int, int] = (4, 9)) -> Seq2Seq:
    """Train a small model on a toy task. Every ``every`` steps, ``on_frame(step, loss,
    weights)`` receives the attention (T x S) of the forced decoding of ``probe``.
    ``model`` continues an existing model instead of a fresh one of ``cfg``; ``lengths``
    bounds the digit strings drawn."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    model = model if model is not None else build_model(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    probe_src = PreparedSource(probe, vocab.encode(probe), False)
    probe_trg = vocab.encode(toy_pair_target(task, probe))
    start = time.time()
    for step in range(1, steps + 1):
        pairs = [toy_pair(task, rng, *lengths) for _ in range(batch_size)]
        batch = Batch(vocab.encode_batch([p[0] for p in pairs]), vocab.encode_batch([p[1] for p in pairs]))
        model.train()
        loss, n = model(batch.src, batch.src_len, batch.trg_in, batch.trg_out)
        opt.zero_grad()
        (loss / n).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if on_frame and (step % every == 0 or step == 1 or step == steps):
            rec = forced(model, vocab, probe_src, probe_trg)
            on_frame(step, float(loss.detach()) / n, rec.weights)
        if time_limit and time.time() - start > time_limit:
            break
    model.eval()
    return model


def toy_pair_target(task: str, source: str) -> str:
    digits = source.split()
    return " ".join(digits[::-1] if task == "reverse" else sorted(digits) if task == "sort" else digits)


def toy_accuracy(model: Seq2Seq, vocab: Vocabulary, task: str = "reverse", n: int = 200, seed: int = 99) -> float:
    """Share of fresh toy sentences translated exactly right (greedy)."""
    rng = random.Random(seed)
    pairs = [toy_pair(task, rng) for _ in range(n)]
    hyps = vocab.decode_batch(greedy_batch(model, vocab.encode_batch([p[0] for p in pairs])))
    return sum(h.split() == p[1].split() for h, p in zip(hyps, pairs)) / n


def make_tiny_checkpoint(folder: str | Path, decoder: str = "rnnsearch", attention: str = "additive",
                         steps: int = 150, task: str = "reverse", lr: float = 0.01,
                         lengths: tuple[int, int] = (4, 9)) -> Path:
    """Train a tiny model on a toy task for a few seconds and save it as a real checkpoint folder."""
    folder = Path(folder)
    vocab = toy_vocabulary(folder / "_vocab")
    cfg = tiny_config(vocab, decoder, attention)
    if decoder == "transformer":  # no recurrence to carry order: it needs a gentler rate and more steps
        model = train_toy(cfg, vocab, task, max(steps, 300), lr=0.003, lengths=lengths)
    else:
        model = train_toy(cfg, vocab, task, steps, lr=lr, lengths=lengths)
    save_checkpoint(folder, model, vocab, {"name": folder.name, "description": f"tiny {decoder}/{attention} on toy task {task}",
                                           "training": {"data": f"toy:{task}", "steps": steps}})
    return folder


# The tests' zoo: one tiny checkpoint per kind of the shipped zoo, name -> (decoder, attention),
# the shipped zoo's own kinds (model/zoo.py). Made once by ``python scripts/make_tiny_zoo.py`` and
# kept in tests/fixtures/tiny_zoo/, so what a tiny model learned (float32 training differs across
# CPUs) is the same on every host.
TINY_ZOO = dict(KINDS)
TINY_ZOO_STEPS = 120  # training steps of each (the Transformer's: at least 300, make_tiny_checkpoint)
