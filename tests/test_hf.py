"""A model made elsewhere (``model/hf.py``): a tiny MarianMT built and saved here (``hf_tiny``),
offline. Its weights are random, so its French is nonsense; the tests check that it gives the
zoo's record with the same guarantees as ours (every head's rows sum to 1, beam 1 = greedy,
forced decoding reproduces greedy's log-probabilities, the shown attention is one layer's
heads averaged), that the CLIs take ``hf:``; and the adapter's corrections: byte spans from a
fast tokenizer, metrics keyed on the whole spec, no punctuation normalisation, the layer chosen
on held-out gold pairs (docs/own-model.md). The pages with it: tests/test_hf_app.py."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ROOT
from helpers.cli import run
from helpers.hf_tiny import save_marian, train_spm, EN, FR
from model.hf import character_to_byte_spans, HFLoadError, HFVocabulary, IdMap, load_hf, metrics_folder
from model.search import beam_search, forced, greedy, prepare_source, translate
from model.evaluate import greedy_batch

TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def hf(tiny_hf, tmp_path_factory):
    return load_hf(str(tiny_hf), metrics_root=tmp_path_factory.mktemp("no-metrics"))


def test_id_map_puts_the_models_special_ids_at_ours():
    """PAD, UNK, BOS, EOS = 0…3 for search.py; the model's own ids after them, in order."""
    from model.hf import IdMap
    marian = IdMap(6, pad=5, unk=1, start=5, eos=0)  # </s> 0, <unk> 1, <pad> last, also the start token
    assert marian.to_hf.tolist() == [5, 1, 5, 0, 2, 3, 4] and marian.zoo_ids([0, 1, 2, 5]) == [3, 1, 4, 0]
    lp = torch.log_softmax(torch.randn(2, 6), -1)
    out = marian.logprobs(lp)
    assert torch.isinf(out[:, 0]).all() and torch.isinf(out[:, 2]).all()  # PAD and BOS are never written
    assert torch.equal(out[:, 3], lp[:, 0]) and torch.equal(out[:, 1], lp[:, 1]) and torch.equal(out[:, 4:], lp[:, 2:5])
    bart = IdMap(6, pad=1, unk=3, start=2, eos=2)  # <s> 0, <pad> 1, </s> 2 (also the start), <unk> 3
    assert bart.to_hf.tolist() == [1, 3, 2, 2, 0, 4, 5] and bart.zoo_ids([2, 0, 1]) == [3, 4, 0]
    no_unk = IdMap(4, pad=3, unk=None, start=3, eos=0)
    assert no_unk.zoo_ids([3, 1]) == [0, 4] and torch.isinf(no_unk.logprobs(torch.zeros(1, 4))[0, 1])


# -- the record ---------------------------------------------------------------------------------
def test_every_head_is_a_distribution_with_the_zoo_shapes(hf):
    model, vocab, _ = hf
    rec = translate(model, vocab, TEXT)
    T, S = len(rec.target_tokens), len(rec.source_tokens)
    assert rec.source_tokens[-1] == "</s>" and S == len(vocab.encode(TEXT)) + 1
    assert rec.head_weights.shape == (T, model.cfg.layers, model.cfg.heads, S)
    np.testing.assert_allclose(rec.head_weights.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(rec.weights.sum(-1), 1.0, atol=1e-5)
    assert rec.encoder_attention.shape == (model.cfg.encoder_layers, model.cfg.encoder_heads, S, S)
    np.testing.assert_allclose(rec.encoder_attention.sum(-1), 1.0, atol=1e-5)
    # decoder self-attention: step i over y_0 … y_i, nothing on the future
    assert rec.self_weights.shape == (T, model.cfg.layers, model.cfg.heads, T)
    np.testing.assert_allclose(rec.self_weights.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(rec.self_weights.transpose(1, 2, 0, 3), 1) == 0)
    assert np.all(np.exp(rec.topk_probs).sum(1) > 0) and rec.topk_ids.shape == (T, 5)
    assert np.all(np.diff(rec.topk_probs, axis=1) <= 1e-7)  # best first
    probs = np.exp(model.step(torch.tensor([2]), model.encode(torch.tensor([[5, 3]]), torch.tensor([2]))[2],
                              model.encode(torch.tensor([[5, 3]]), torch.tensor([2]))[1])[0])
    assert probs.sum().item() == pytest.approx(1.0, abs=1e-5)  # over the zoo's ids, padding never written
    assert probs[0, 0] == 0 and probs[0, 2] == 0  # PAD, BOS


def test_shown_attention_is_the_mean_of_the_chosen_layers_heads(hf):
    model, vocab, _ = hf
    rec = translate(model, vocab, TEXT)
    assert model.cfg.shown_layer == model.cfg.layers - 2 and model.cfg.shown_by_aer is None  # the stated default
    np.testing.assert_allclose(rec.weights, rec.head_weights[:, model.cfg.shown_layer].mean(1), atol=1e-6)
    # the record's context vector is Bahdanau's c_i = Σ_j α_ij h_j over the encoder's output
    _, memory, _ = model.encode(torch.tensor([vocab.encode(TEXT) + [3]]), torch.tensor([len(vocab.encode(TEXT)) + 1]))
    np.testing.assert_allclose(rec.contexts, rec.weights @ memory.values[0].numpy(), atol=1e-4)


def test_beam_one_is_greedy_and_forced_reproduces_greedy(hf):
    model, vocab, _ = hf
    src = prepare_source(vocab, TEXT)
    g = greedy(model, vocab, src)
    b = beam_search(model, vocab, src, beam=1)
    assert b.target_ids == g.target_ids
    np.testing.assert_allclose(b.token_logprobs, g.token_logprobs, atol=1e-5)
    np.testing.assert_allclose(b.weights, g.weights, atol=1e-6)
    ended = g.target_ids[-1] == 3
    f = forced(model, vocab, src, g.target_ids, append_eos=ended)
    assert f.target_ids == g.target_ids
    np.testing.assert_allclose(f.token_logprobs, g.token_logprobs, atol=1e-5)
    np.testing.assert_allclose(f.head_weights, g.head_weights, atol=1e-6)
    # a forced prefix: the model continues from it
    p = greedy(model, vocab, src, prefix=g.target_ids[:1] + [vocab.encode_target("la")[0]])
    assert p.target_ids[:2] == g.target_ids[:1] + [vocab.encode_target("la")[0]]


@pytest.mark.slow
def test_beam_tree_and_batched_decoding(hf):
    model, vocab, _ = hf
    rec = translate(model, vocab, TEXT, beam=3)
    assert rec.beam_tree[0].parent is None and len(rec.beam_tree) > 3
    for node in rec.beam_tree[1:]:
        assert sum(node.attention) == pytest.approx(1.0, abs=1e-5)
    # batched greedy (model.evaluate's) gives each sentence's own greedy output, padding and all
    texts = [TEXT, "two children play by the river", "I will eat"]
    singles = [greedy(model, vocab, prepare_source(vocab, t)).target_ids for t in texts]
    assert greedy_batch(model, [vocab.encode(t) for t in texts]) == [s[:-1] if s[-1] == 3 else s for s in singles]


def test_perplexity_pass_agrees_with_forced_decoding(hf):
    from model.data import Batch
    model, vocab, _ = hf
    src, trg = vocab.encode(TEXT), vocab.encode_target("le chat est assis")
    total, n = model(*(lambda b: (b.src, b.src_len, b.trg_in, b.trg_out))(Batch([src], [trg])))
    rec = forced(model, vocab, prepare_source(vocab, TEXT), trg)
    assert n == len(trg) + 1 and float(total) == pytest.approx(-rec.token_logprobs.sum(), abs=1e-3)


@pytest.mark.slow
def test_records_unchanged_under_concurrent_callers(hf):
    """One loaded model serves every session: 4 threads decoding at once (greedy, beam, forced)
    get exactly the records each gets alone."""
    from concurrent.futures import ThreadPoolExecutor
    model, vocab, _ = hf
    jobs = [(t, beam) for t in (TEXT, *EN[1:4]) for beam in (1, 3)]
    alone = [translate(model, vocab, t, beam=b) for t, b in jobs]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda job: translate(model, vocab, job[0], beam=job[1]), jobs * 2))
    for a, b in zip(alone * 2, together):
        assert a.target_ids == b.target_ids and a.source_tokens == b.source_tokens
        np.testing.assert_array_equal(a.head_weights, b.head_weights)


# -- loading ------------------------------------------------------------------------------------
def test_languages_come_from_the_model(tiny_hf, tmp_path, capsys):
    from model.align import main as align_main
    spm_dir = tiny_hf.parent / f"{tiny_hf.name}_spm"
    de = save_marian(tmp_path / "tiny-en-de", spm_dir / "source.model", spm_dir / "target.model", target_lang="de")
    model, _, _ = load_hf(str(de), metrics_root=tmp_path)
    assert (model.cfg.source_language, model.cfg.target_language) == ("en", "de")
    assert align_main(["--checkpoint", f"hf:{de}", "--gold", str(ROOT.parent / "shared" / "data" / "hansards-align")]) == 1
    assert "English–French" in capsys.readouterr().err


def test_unloadable_models_say_why(tmp_path):
    with pytest.raises(HFLoadError, match="not in the local Hugging Face cache"):
        load_hf("hf:no-such-org/opus-mt-xx-yy", metrics_root=tmp_path)
    with pytest.raises(HFLoadError, match="no such folder"):
        load_hf(str(tmp_path / "missing"), metrics_root=tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(HFLoadError, match="no model.safetensors"):
        load_hf(str(tmp_path / "empty"), metrics_root=tmp_path)


class Payload:
    """A pickle that would run code when fully unpickled."""

    def __reduce__(self):
        return (exec, ("open(__import__('os').environ['PWNED'], 'w').write('ran')",))


def test_pickled_weights_load_only_as_tensors(tiny_hf, tmp_path, monkeypatch):
    """A folder with only pytorch_model.bin loads through torch's weights_only loading: real
    tensors load, a pickle that would run code is refused (and does not run)."""
    from safetensors.torch import load_file
    good = tmp_path / "bin-only"
    good.mkdir()
    for f in tiny_hf.iterdir():
        if f.name != "model.safetensors":
            (good / f.name).write_bytes(f.read_bytes())
    torch.save(load_file(tiny_hf / "model.safetensors"), good / "pytorch_model.bin")
    model, vocab, config = load_hf(str(good), metrics_root=tmp_path)
    assert config["hf"]["weights"].startswith("pytorch_model.bin")
    reference, ref_vocab, _ = load_hf(str(tiny_hf), metrics_root=tmp_path)
    assert translate(model, vocab, TEXT).target_ids == translate(reference, ref_vocab, TEXT).target_ids
    evil = tmp_path / "evil"
    evil.mkdir()
    for f in good.iterdir():
        if f.name != "pytorch_model.bin":
            (evil / f.name).write_bytes(f.read_bytes())
    (evil / "pytorch_model.bin").write_bytes(pickle.dumps({"weight": Payload()}))
    marker = tmp_path / "pwned"
    monkeypatch.setenv("PWNED", str(marker))
    with pytest.raises(HFLoadError):
        load_hf(str(evil), metrics_root=tmp_path)
    assert not marker.exists()


# -- the CLIs -----------------------------------------------------------------------------------
def cli(*args) -> subprocess.CompletedProcess:
    return run("-m", *args)


@pytest.mark.slow
def test_translate_cli_json(tiny_hf):
    out = cli("model.translate", "--checkpoint", f"hf:{tiny_hf}", "--json", TEXT)
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    heads = np.array(rec["attention_heads"])  # [layers][heads][target][source]
    assert heads.shape[:2] == (3, 2) and heads.shape[2:] == np.array(rec["attention"]).shape
    np.testing.assert_allclose(heads.sum(-1), 1.0, atol=1e-4)
    np.testing.assert_allclose(np.array(rec["attention"]).sum(-1), 1.0, atol=1e-4)
    np.testing.assert_allclose(rec["attention"], heads[1].mean(0), atol=1e-5)  # layer 2 of 3: the default


@pytest.mark.slow
def test_align_cli_scores_and_records_the_layer(tiny_hf, tmp_path):
    """model.align on the Hansards gold prints an AER; --write-metrics records the layer whose
    head average aligns best on the held-out pairs, with its AER on the *other* pairs, and the
    adapter then shows it."""
    from model.align import read_gold, score_heads
    from model.hf import metrics_folder
    gold = ROOT.parent / "shared" / "data" / "hansards-align"
    out = cli("model.align", "--checkpoint", f"hf:{tiny_hf}", "--gold", str(gold), "--limit", "6", "--held-out", "3",
              "--write-metrics", "--results", str(tmp_path))
    assert "AER" in out.stdout and "layer 3 head mean" in out.stdout
    metrics = json.loads((metrics_folder(str(tiny_hf), tmp_path / "hf") / "metrics.json").read_text())
    model, vocab, _ = load_hf(str(tiny_hf), metrics_root=tmp_path / "hf")
    pairs = read_gold(gold)[:6]

    def means(part):
        heads = score_heads(model, vocab, part, True)
        return {r["layer"]: r["aer"] for r in heads["rows"] if r["head"] == "mean" and r["layer"] != "all"}
    chosen_on, reported_on = means(pairs[:3]), means(pairs[3:])
    best = min(chosen_on, key=chosen_on.get)
    choice = metrics["attention_layer"]
    assert (choice["layer"], choice["chosen_on"], choice["sentences"]) == (best, 3, 3)
    assert choice["aer"] == reported_on[best] and choice["aer_where_chosen"] == chosen_on[best]
    assert model.cfg.shown_layer == best - 1 and model.cfg.shown_by_aer == reported_on[best]
    best = {"layer": best}
    rec = translate(model, vocab, TEXT)
    np.testing.assert_allclose(rec.weights, rec.head_weights[:, best["layer"] - 1].mean(1), atol=1e-6)


def test_toy_text_round_trips_through_the_tokenizers(hf, tmp_path):
    _, vocab, _ = hf
    assert vocab.decode(vocab.encode_target(FR[0])) == FR[0]
    ids, spans = vocab.pieces_with_spans(EN[1])
    assert ids == vocab.encode(EN[1]) and spans[-1][1] == len(EN[1])
    assert train_spm(EN, tmp_path / "again").exists()


@pytest.mark.slow
def test_no_transformers_without_a_model_made_elsewhere(tiny_zoo):
    """The app's start without ATTN_EXPLORER_HF_MODELS never imports transformers (its cold start
    is unchanged): the zoo, the pages' shared module and the CLIs' modules load without it."""
    code = ("import sys, ui.zoo_cache; from model import zoo, search, align, evaluate, translate; "
            f"entries = zoo.load_zoo({str(tiny_zoo)!r}); assert entries['rnnsearch'].available; "
            "assert 'transformers' not in sys.modules, 'transformers imported'")
    env = {k: v for k, v in __import__("os").environ.items() if k != "ATTN_EXPLORER_HF_MODELS"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]


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
