"""Configuration dataclasses. The model's fields are saved in every checkpoint's
``config.json``, so a checkpoint rebuilds its own model: ``Seq2Seq(ModelConfig(**cfg["model"]))``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import yaml

DECODER_KINDS = ("rnnsearch", "luong", "rnnenc", "transformer")
ATTENTION_KINDS = ("additive", "dot", "general", "concat", "local-general", "local-dot", "local-concat", "none",
                   "scaled-dot")


def check_half_width(D: float) -> None:
    """Refuse a local-p half-width below 1, naming it: a window narrower than that can hold
    no source position at all (below 0.5), and its weights are NaN."""
    if not D >= 1:
        raise ValueError(f"local-p half-width D (local_window) must be at least 1 source position, got {D!r}")


@dataclass
class ModelConfig:
    decoder: str = "rnnsearch"        # rnnsearch (Bahdanau) | luong | rnnenc (no attention)
    attention: str = "additive"       # additive for rnnsearch; dot/general/concat/local-* for luong; none for rnnenc
    vocab_size: int = 8000            # joint en+fr SentencePiece pieces
    emb_size: int = 256               # E: word embeddings (source and target)
    enc_hidden: int = 256             # H_enc per direction; annotations are 2*H_enc
    dec_hidden: int = 256             # H: decoder GRU state s_i
    attention_size: int = 256         # A: hidden units of the additive alignment model
    maxout_size: int = 256            # l: deep-output size after maxout (Bahdanau A.2.2)
    dropout: float = 0.2              # on embeddings and before the output layer
    local_window: int = 10            # D, local-p's half-width (Luong §3.2), at least 1
    local_p: str = "eq10"             # eq10: eq. 10's Gaussian-weighted align with the context scaled by the
                                      # window mass, align normalised over the whole sentence (Luong's over the
                                      # window's 2D+1 positions); renormalised: the Gaussian in the softmax
                                      # only, for checkpoints trained so (see LocalPAttention)
    tie_embeddings: bool = True       # output layer W_o shares the target embedding matrix
    # Transformer only (decoder "transformer", attention "scaled-dot"; d_model = emb_size)
    layers: int = 3                   # N: encoder layers, and as many decoder layers
    heads: int = 4                    # h: attention heads per layer (d_k = d_model / h)
    ff_size: int = 1024               # d_ff: inner size of each position-wise feed-forward block
    shown_layer: int = -2             # the cross-attention layer whose head average is "the" attention:
                                      # the penultimate, as Garg et al. 2019 found best for alignment

    def __post_init__(self):
        if self.decoder not in DECODER_KINDS:
            raise ValueError(f"decoder must be one of {DECODER_KINDS}, got {self.decoder!r}")
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {self.attention!r}")
        if (self.decoder == "rnnenc") != (self.attention == "none"):
            raise ValueError("rnnenc goes with attention 'none', and only it")
        if self.local_p not in ("eq10", "renormalised"):
            raise ValueError(f"local_p must be 'eq10' or 'renormalised', got {self.local_p!r}")
        check_half_width(self.local_window)
        if (self.decoder == "transformer") != (self.attention == "scaled-dot"):
            raise ValueError("transformer goes with attention 'scaled-dot', and only it")
        if self.decoder == "transformer":
            if self.emb_size % self.heads:
                raise ValueError(f"emb_size (d_model) {self.emb_size} must be divisible by heads {self.heads}")
            if not -self.layers <= self.shown_layer < self.layers:
                raise ValueError(f"shown_layer {self.shown_layer} is not a layer of {self.layers}")
        if self.decoder == "rnnsearch" and self.attention != "additive":
            raise ValueError("rnnsearch uses additive attention; use decoder 'luong' for the other scores")

    @property
    def has_attention(self) -> bool:
        return self.attention != "none"


PRECISIONS = ("float32", "bfloat16")  # train.precision: bfloat16 autocasts the forward pass


@dataclass
class TrainConfig:
    batch_tokens: int = 3000          # max (longest side × sentences) per batch, padding included
    max_words: int = 50               # the paper's "-50" setting: source sentences up to 50 words
    joined_fraction: float = 0.15     # extra examples per epoch made by joining 2–4 train pairs
    joined_max_pairs: int = 4
    lr: float = 0.001                 # Adam (Bahdanau used Adadelta; Adam converges faster on CPU)
    lr_decay: float = 0.5             # multiply lr when dev BLEU stops improving
    patience: int = 2                 # evaluations without dev improvement before decaying lr
    min_lr: float = 1e-5
    clip_norm: float = 1.0            # gradient-norm clipping (Bahdanau A.2.3 uses 1)
    label_smoothing: float = 0.1
    max_epochs: int = 30
    eval_every: int = 2000            # optimiser steps between dev evaluations / checkpoints
    dev_sentences: int = 1000         # dev rows decoded for BLEU at each evaluation (greedy)
    seed: int = 1
    vocab: str = "checkpoints/_vocab/spm.model"  # shared SentencePiece model; trained if missing
    warmup_steps: int = 0             # linear learning-rate warm-up over the first steps (the Transformer's)
    # local-p only: the window's half-width starts at window_warmup_start source pieces and narrows
    # linearly to the model's D over the first window_warmup_steps steps (0: D from the first step)
    window_warmup_steps: int = 0
    window_warmup_start: float = 50.0
    precision: str = "float32"        # float32 | bfloat16: bf16 autocast for the forward pass (CPUs with AVX-512 BF16, GPUs)
    init_from: str | None = None      # a checkpoint to warm-start from (see model.train.initialise_from); --init-from overrides
    # origin -> copies of its pairs in every epoch (e.g. {tatoeba: 3}): mixed fine-tuning (Chu et al. 2017)
    # leans a broad model back towards one domain without dropping the others; --oversample overrides
    oversample: dict[str, int] = field(default_factory=dict)
    # weights of the last keep_snapshots evaluations kept in OUT/snapshots/ for checkpoint averaging
    # (scripts/average_checkpoints.py; Vaswani et al. 2017 §6.1); 0 keeps none; --keep-snapshots overrides
    keep_snapshots: int = 0


@dataclass
class RunConfig:
    name: str
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    description: str = ""


def _only_known(cls, d: dict, where: str) -> dict:
    known = {f.name for f in fields(cls)}
    unknown = set(d) - known
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    return d


def load_run_config(path: str) -> RunConfig:
    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f) or {}
    model = ModelConfig(**_only_known(ModelConfig, raw.get("model", {}), f"{path}: model"))
    train = TrainConfig(**_only_known(TrainConfig, raw.get("train", {}), f"{path}: train"))
    if train.precision not in PRECISIONS:
        raise ValueError(f"{path}: train.precision must be one of {PRECISIONS}, got {train.precision!r}")
    return RunConfig(name=raw.get("name", path), model=model, train=train,
                     description=raw.get("description", ""))
