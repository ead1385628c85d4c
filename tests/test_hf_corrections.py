"""The Hugging Face adapter's corrections (model/hf.py, model/align.py, docs/own-model.md):
byte spans from a fast tokenizer, metrics keyed on the whole spec, no punctuation
normalisation, the layer chosen on held-out gold pairs (tests/test_hf.py runs the CLI)."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT
from model.hf import character_to_byte_spans, HFVocabulary, IdMap, load_hf, metrics_folder

ACCENTED = "Le café à Noël coûte très cher"


@pytest.fixture(scope="module")
def fast_tokenizer():
    """A fast (Rust) tokenizer made here: words as pieces, over text with accents."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    words = ["<pad>", "<unk>", "</s>", *dict.fromkeys(ACCENTED.split())]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="</s>")


def test_a_fast_tokenizers_spans_are_bytes(fast_tokenizer):
    """Word alignment reads byte spans (model.hansards.Written); a fast tokenizer gives character
    offsets, which differ from the first accent on: each span must cut its word out of the bytes."""
    vocab = HFVocabulary(fast_tokenizer, IdMap(len(fast_tokenizer), pad=0, unk=1, start=0, eos=2))
    ids, spans = vocab.pieces_with_spans(ACCENTED)
    data = ACCENTED.encode("utf-8")
    assert [data[b:e].decode("utf-8") for b, e in spans] == ACCENTED.split()
    assert spans[-1][1] == len(data) != len(ACCENTED)
    assert character_to_byte_spans("aé b", [(0, 2), (3, 4)]) == [(0, 3), (4, 5)]


def test_a_fast_tokenizer_aligns_accented_words_to_their_own_gold_tokens(fast_tokenizer):
    from model.align import word_pieces
    from model.hansards import as_typed
    vocab = HFVocabulary(fast_tokenizer, IdMap(len(fast_tokenizer), pad=0, unk=1, start=0, eos=2))
    _, owner = word_pieces(vocab, as_typed(ACCENTED.split()))
    assert (owner == __import__("numpy").eye(len(ACCENTED.split()))).all()  # piece k belongs to word k only


def test_metrics_of_two_folders_with_one_name_do_not_mix(tmp_path):
    a, b = tmp_path / "one" / "marian", tmp_path / "two" / "marian"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    assert metrics_folder(str(a), tmp_path) != metrics_folder(str(b), tmp_path)
    assert metrics_folder(str(a), tmp_path).name.startswith("marian-")
    assert metrics_folder(f"hf:{a}", tmp_path) == metrics_folder(str(a), tmp_path)  # one spec, one folder
    assert metrics_folder("Helsinki-NLP/opus-mt-en-fr", tmp_path) == Path(tmp_path) / "Helsinki-NLP--opus-mt-en-fr"


def test_two_copies_keep_their_own_layer(tiny_hf, tmp_path):
    """A layer chosen for one folder is not read by another of the same name."""
    import json
    import shutil
    other = tmp_path / "elsewhere" / tiny_hf.name
    shutil.copytree(tiny_hf, other)
    folder = metrics_folder(str(tiny_hf), tmp_path)
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps({"attention_layer": {"layer": 1, "aer": 0.5}}))
    assert load_hf(str(tiny_hf), metrics_root=tmp_path)[0].cfg.shown_layer == 0
    assert load_hf(str(other), metrics_root=tmp_path)[0].cfg.shown_by_aer is None


def test_the_tokenizer_does_not_normalise_punctuation(tiny_hf, tmp_path):
    """docs/own-model.md says so: MarianTokenizer loads sacremoses' normaliser but never applies
    it, so «guillemets» are cut as typed, not as Moses would rewrite them."""
    from sacremoses import MosesPunctNormalizer
    _, vocab, _ = load_hf(str(tiny_hf), metrics_root=tmp_path)
    text = "the cat « sat » on the mat…"
    normalised = MosesPunctNormalizer("en").normalize(text)
    pieces = vocab.tokenizer.tokenize(text)  # the SentencePiece pieces, before they become ids
    assert normalised != text and pieces != vocab.tokenizer.tokenize(normalised)
    # « stays « (Moses would write "); SentencePiece's own NFKC rule still turns … into ...
    assert "«" in "".join(pieces) and '"' not in "".join(pieces) and '"' in normalised
    assert "**not** normalised" in (ROOT / "docs" / "own-model.md").read_text(encoding="utf-8")


def test_beam_search_forces_no_eos_where_generate_does(tiny_hf, tmp_path):
    """docs/own-model.md: at the length limit (2·S + 10 pieces) our beam search finishes the live
    hypotheses as they are, while generate() with the config's forced_eos_token_id writes EOS there."""
    import torch
    from model.search import beam_search, max_output_length, prepare_source
    from model.vocabulary import EOS_ID
    model, vocab, _ = load_hf(str(tiny_hf), metrics_root=tmp_path)
    eos = model.hf.config.eos_token_id
    with torch.no_grad():
        model.hf.final_logits_bias[0, eos] = -1e4  # this copy never chooses EOS by itself
    src = prepare_source(vocab, "the cat sat on the mat")
    limit = max_output_length(len(src.ids) + 1)
    ours = beam_search(model, vocab, src, beam=3)
    assert len(ours.target_ids) == limit and EOS_ID not in ours.target_ids
    theirs = model.hf.generate(torch.tensor([model.ids.hf_ids(src.ids + [EOS_ID])]), num_beams=3, max_length=limit + 1,
                               forced_eos_token_id=eos, do_sample=False)
    assert theirs[0, -1].item() == eos  # the start token, limit - 1 pieces, then the forced EOS
    assert "No forced EOS" in (ROOT / "docs" / "own-model.md").read_text(encoding="utf-8")
