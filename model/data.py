"""Reading the splits, the joined-pairs augmentation, and length-bucketed batches."""
from __future__ import annotations

import gzip
import random
from collections import OrderedDict
from pathlib import Path

import pandas as pd
import torch

from .vocabulary import BOS_ID, EOS_ID, PAD_ID, Vocabulary


def read_split(path: str | Path) -> pd.DataFrame:
    """A ``en<TAB>fr<TAB>origin`` file (optionally .gz) as a DataFrame, text kept verbatim."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    df = pd.DataFrame(rows, columns=header)
    if "origin" not in df:
        df["origin"] = "unknown"
    return df


def split_path(data: str | Path, split: str) -> Path:
    """``--data`` may name the folder (../shared/data/enfr) or a file directly."""
    data = Path(data)
    if data.is_file():
        return data
    for name in (f"{split}.tsv.gz", f"{split}.tsv"):
        if (data / name).exists():
            return data / name
    raise FileNotFoundError(f"no {split}.tsv[.gz] in {data}")


def multi_reference(df: pd.DataFrame) -> tuple[list[str], list[list[str]], list[str]]:
    """Group rows with the same English side into one segment with several references.

    Tatoeba often has several French translations of one English sentence; they are
    scored as one segment (see ../shared/data/README.md). Returns sources, a list of
    references per source, and each source's origin; order of first appearance kept.
    """
    groups: OrderedDict[str, tuple[list[str], str]] = OrderedDict()
    for en, fr, origin in zip(df["en"], df["fr"], df["origin"]):
        groups.setdefault(en, ([], origin))[0].append(fr)
    sources = list(groups)
    return sources, [groups[s][0] for s in sources], [groups[s][1] for s in sources]


def joined_pairs(df: pd.DataFrame, fraction: float, max_pairs: int, max_words: int,
                 rng: random.Random) -> pd.DataFrame:
    """Extra long examples: 2..max_pairs pairs of one origin, concatenated side by side.

    Seeded and documented augmentation (issue 3, "Length"): our corpora are short, so
    without it no model would see the 30–50-word sentences of the paper's "-50" setting.
    Pairs are drawn from the same corpus, so a joined example reads like a paragraph.
    """
    out_en, out_fr, out_origin = [], [], []
    by_origin = {o: g.reset_index(drop=True) for o, g in df.groupby("origin")}
    total = int(len(df) * fraction)
    for origin, g in by_origin.items():
        n = int(total * len(g) / len(df))
        for _ in range(n):
            k = rng.randint(2, max_pairs)
            start = rng.randrange(0, max(1, len(g) - k))
            en = " ".join(g["en"].iloc[start:start + k])
            if len(en.split()) > max_words:
                continue
            out_en.append(en)
            out_fr.append(" ".join(g["fr"].iloc[start:start + k]))
            out_origin.append(origin + "-joined")
    return pd.DataFrame({"en": out_en, "fr": out_fr, "origin": out_origin})


def oversampled(df: pd.DataFrame, copies: dict[str, int]) -> pd.DataFrame:
    """``df`` with the rows of each origin in ``copies`` repeated that many times in all.

    The repeats are appended whole, after the original rows; batching sorts and shuffles
    anyway, so only the mix of origins per epoch changes.
    """
    extra = [df[df["origin"] == origin] for origin, k in copies.items() for _ in range(k - 1)]
    return pd.concat([df, *extra], ignore_index=True) if extra else df


class Batch:
    """src: B x S (ids + EOS), src_len: B, trg_in: B x T (BOS + ids), trg_out: B x T (ids + EOS)."""

    def __init__(self, src: list[list[int]], trg: list[list[int]] | None = None):
        self.size = len(src)
        self.src_len = torch.tensor([len(s) + 1 for s in src])
        self.src = pad([s + [EOS_ID] for s in src])
        if trg is not None:
            self.trg_in = pad([[BOS_ID] + t for t in trg])
            self.trg_out = pad([t + [EOS_ID] for t in trg])
            self.ntokens = int((self.trg_out != PAD_ID).sum())

    def to(self, device):
        for name in ("src", "src_len", "trg_in", "trg_out"):
            if hasattr(self, name):
                setattr(self, name, getattr(self, name).to(device))
        return self


def pad(seqs: list[list[int]]) -> torch.Tensor:
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [PAD_ID] * (width - len(s)) for s in seqs], dtype=torch.long)


def token_batches(lengths: list[tuple[int, int]], batch_tokens: int, rng: random.Random | None = None,
                  ) -> list[list[int]]:
    """Length-bucketed batches: indices sorted by length, cut so that
    sentences × longest side ≤ batch_tokens, then the batch order shuffled.

    Sorting keeps padding low (each batch holds sentences of near-equal length), which is
    most of the speed of RNN training on a CPU.
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i][0], lengths[i][1],
                                                        rng.random() if rng else 0))
    batches, current, longest = [], [], 0
    for i in order:
        longest_if_added = max(longest, *lengths[i])
        if current and longest_if_added * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest_if_added = [], max(lengths[i])
        current.append(i)
        longest = longest_if_added
    if current:
        batches.append(current)
    if rng:
        rng.shuffle(batches)
    return batches


def encode_pairs(vocab: Vocabulary, df: pd.DataFrame, max_tokens: int = 128):
    """Subword ids of both sides; pairs longer than max_tokens on either side are dropped."""
    src = vocab.encode_batch(df["en"].tolist())
    trg = vocab.encode_batch(df["fr"].tolist())
    keep = [i for i in range(len(src)) if 0 < len(src[i]) < max_tokens and 0 < len(trg[i]) < max_tokens]
    return [src[i] for i in keep], [trg[i] for i in keep]
