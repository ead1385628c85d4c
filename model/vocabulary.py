"""SentencePiece subword vocabulary shared by source (English) and target (French).

One joint unigram model (Kudo 2018) of about 8k pieces, trained on both sides of the
train split, so that every model of the zoo reads and writes the same pieces and their
attention matrices line up token for token. Byte fallback is on: a character the model
never saw (emoji, rare script) becomes its UTF-8 bytes (``<0xF0>`` …) instead of ``<unk>``,
so no input is ever unrepresentable.
"""
from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import sentencepiece as spm

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
WORD_BOUNDARY = "\u2581"  # "▁": SentencePiece's marker for a piece that starts a word


class Vocabulary:
    """Thin wrapper over a SentencePiece processor with the project's special ids."""

    def __init__(self, model_path: str | Path):
        self.path = Path(model_path)
        self.sp = spm.SentencePieceProcessor(model_file=str(self.path))
        if self.sp.pad_id() != PAD_ID or self.sp.eos_id() != EOS_ID or self.sp.bos_id() != BOS_ID:
            raise ValueError(f"{self.path}: SentencePiece model has unexpected special ids "
                             f"(pad={self.sp.pad_id()}, bos={self.sp.bos_id()}, eos={self.sp.eos_id()})")

    def __len__(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text, out_type=int)

    def encode_target(self, text: str) -> list[int]:
        """Target-side text (French to force-decode): the one joint model cuts both sides."""
        return self.encode(text)

    def pieces_with_spans(self, text: str, target: bool = False) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids of ``text`` and each piece's (begin, end) character span (word alignment)."""
        proto = self.sp.encode(text, return_type="proto")
        return [p.id for p in proto.pieces], [(p.begin, p.end) for p in proto.pieces]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return self.sp.encode(texts, out_type=int)

    def decode(self, ids: list[int]) -> str:
        return self.sp.decode([i for i in ids if i > EOS_ID or i == UNK_ID])

    def decode_batch(self, batch: list[list[int]]) -> list[str]:
        return self.sp.decode([[i for i in ids if i > EOS_ID or i == UNK_ID] for ids in batch])

    def pieces(self, ids: list[int]) -> list[str]:
        return [self.sp.id_to_piece(i) for i in ids]

    def id_to_piece(self, i: int) -> str:
        return self.sp.id_to_piece(i)


def train_vocabulary(train_tsv: str | Path, model_path: str | Path, vocab_size: int = 8000,
                     max_sentences: int = 400_000) -> Vocabulary:
    """Train a joint en+fr unigram SentencePiece model on the train split's two columns."""
    model_path = Path(model_path)
    model_path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if str(train_tsv).endswith(".gz") else open
    with opener(train_tsv, "rt", encoding="utf-8") as f, \
            tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as tmp:
        next(f)  # header: en, fr, origin
        for line in f:
            en, fr = line.rstrip("\n").split("\t")[:2]
            tmp.write(en + "\n" + fr + "\n")
    spm.SentencePieceTrainer.train(
        input=tmp.name, model_prefix=str(model_path.with_suffix("")), vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, byte_fallback=True,
        pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
        # sentence sampling is SentencePiece's own; fixed size keeps training under a minute
        input_sentence_size=max_sentences, shuffle_input_sentence=True,
        num_threads=2, minloglevel=2, hard_vocab_limit=False,
    )
    Path(tmp.name).unlink()
    return Vocabulary(model_path.with_suffix(".model"))
