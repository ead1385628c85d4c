"""A MarianMT model made here from its config, random weights and SentencePiece models, saved
with ``save_pretrained``: a model "made elsewhere" that needs no network (tests, bench/hf_speed.py).

Marian's conventions (``transformers`` ``MarianTokenizer``): one SentencePiece model per
language (source.spm, target.spm), one vocab.json over both with ``</s>`` = 0, ``<unk>`` = 1
and ``<pad>`` last, which is also the decoder's start token.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import sentencepiece as spm
import torch

EN = ["the cat sat on the mat", "a small dog runs in the park", "the red car is fast", "I will eat an apple",
      "where is the train station", "the parliament adopted the new policy", "she bought a book last year",
      "two children play by the river", "the old man walks to the house", "we like green tea and coffee"]
FR = ["le chat est assis sur le tapis", "un petit chien court dans le parc", "la voiture rouge est rapide",
      "je vais manger une pomme", "où est la gare", "le parlement a adopté la nouvelle politique",
      "elle a acheté un livre l'an dernier", "deux enfants jouent près de la rivière",
      "le vieil homme marche vers la maison", "nous aimons le thé vert et le café"]


def train_spm(lines: list[str], prefix: Path, vocab_size: int = 60) -> Path:
    """A unigram SentencePiece model on toy text (Marian's: no pad/bos, </s> and <unk> only)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("\n".join(lines * 5) + "\n")
    spm.SentencePieceTrainer.train(input=f.name, model_prefix=str(prefix), vocab_size=vocab_size, model_type="unigram",
                                   character_coverage=1.0, hard_vocab_limit=False, minloglevel=2, num_threads=1,
                                   pad_id=-1, bos_id=-1, eos_id=0, unk_id=1)
    Path(f.name).unlink()
    return prefix.with_suffix(".model")


def save_marian(folder: Path, source_spm: Path, target_spm: Path, vocab_size: int | None = None,
                source_lang: str = "en", target_lang: str = "fr", seed: int = 0, **config) -> Path:
    """Save a random-weight MarianMTModel and its MarianTokenizer to ``folder``. The joint
    vocabulary is both models' pieces (then filler pieces up to ``vocab_size``, if given,
    for a model of a real one's size), ``<pad>`` last."""
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pieces = ["</s>", "<unk>"]
    for path in (source_spm, target_spm):
        sp = spm.SentencePieceProcessor(model_file=str(path))
        pieces += [p for p in (sp.id_to_piece(i) for i in range(sp.get_piece_size())) if p not in pieces]
    pieces = [p for p in pieces if p not in ("<s>", "<pad>")]
    if vocab_size:
        pieces += [f"<filler{k}>" for k in range(vocab_size - 1 - len(pieces))]
    vocab = {p: i for i, p in enumerate(pieces + ["<pad>"])}
    work = folder / "_tokenizer_source"
    work.mkdir(exist_ok=True)
    (work / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    tokenizer = MarianTokenizer(source_spm=str(source_spm), target_spm=str(target_spm), vocab=str(work / "vocab.json"),
                                source_lang=source_lang, target_lang=target_lang)
    V, pad = len(vocab), vocab["<pad>"]
    settings = dict(vocab_size=V, decoder_vocab_size=V, pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0,
                    d_model=16, encoder_layers=2, decoder_layers=3, encoder_attention_heads=2,
                    decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=256,
                    dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, scale_embedding=True)
    settings.update(config)
    torch.manual_seed(seed)
    model = MarianMTModel(MarianConfig(**settings))
    with torch.no_grad():  # random weights, but larger than the default init, so attention is not uniform
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.3)
    model.save_pretrained(folder)  # safetensors
    tokenizer.save_pretrained(folder)
    for f in work.iterdir():
        f.unlink()
    work.rmdir()
    return folder


def tiny_marian(folder: Path, **kw) -> Path:
    """The tests' model: SentencePiece models trained on the toy sentences above, d_model 16."""
    folder = Path(folder)
    spm_dir = folder.parent / f"{folder.name}_spm"
    spm_dir.mkdir(parents=True, exist_ok=True)
    return save_marian(folder, train_spm(EN, spm_dir / "source"), train_spm(FR, spm_dir / "target"), **kw)
