"""The command-line entry points, run as a user would (python -m …) on tiny checkpoints and data."""
from __future__ import annotations

import csv
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from model.evaluate import stress_set

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))


def run(*args, input=None, check=True):
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=ENV, capture_output=True, text=True,
                          input=input, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_translate_text_and_json(tiny_checkpoint):
    out = run("-m", "model.translate", "--checkpoint", str(tiny_checkpoint), "1 2 3 4").stdout
    assert "attends to" in out and "</s>" in out
    js = json.loads(run("-m", "model.translate", "--checkpoint", str(tiny_checkpoint), "--json", "--beam", "3",
                        "1 2 3 4").stdout)
    assert set(js) >= {"translation", "source_tokens", "target_tokens", "attention"}
    assert len(js["attention"]) == len(js["target_tokens"])
    assert all(len(row) == len(js["source_tokens"]) for row in js["attention"])
    assert js["translation"].split() == ["4", "3", "2", "1"]  # the tiny model learned to reverse
    assert js["positions"] is None  # local-p only


def test_translate_json_gives_local_p_positions_and_evaluate_scores_them(tiny_zoo, toy_split, tmp_path):
    js = json.loads(run("-m", "model.translate", "--checkpoint", str(tiny_zoo / "luong-local"), "--json",
                        "1 2 3 4 5 6").stdout)
    assert len(js["positions"]) == len(js["target_tokens"])
    assert all(0 <= p <= len(js["source_tokens"]) - 1 for p in js["positions"])
    folder = tmp_path / "luong-local"
    shutil.copytree(tiny_zoo / "luong-local", folder)
    out = json.loads(run("-m", "model.evaluate", "--checkpoint", str(folder), "--data", str(toy_split / "test.tsv.gz"),
                         "--positions", "--min-pieces", "3", "--write-metrics", "--json").stdout)
    assert out["sentences"] > 0 and all(-1 <= out[k] <= 1 for k in ("spearman_align", "chance_align", "spearman_weights"))
    assert 0 <= out["window_share"]["min"] <= out["window_share"]["mean"] <= 1
    assert json.loads((folder / "metrics.json").read_text())["position_tracking"] == out
    proc = run("-m", "model.evaluate", "--checkpoint", str(tiny_zoo / "rnnsearch"), "--data",
               str(toy_split / "test.tsv.gz"), "--positions", check=False)
    assert proc.returncode != 0 and "local-p" in proc.stderr


def test_position_tracking_is_spearmans_rho():
    from model.analysis import position_tracking, rank_correlation
    assert rank_correlation([1, 2, 3, 4], [10, 20, 30, 45]) == pytest.approx(1.0)
    assert rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert rank_correlation([1, 1, 1], [1, 2, 3]) != rank_correlation([1, 1, 1], [1, 2, 3])  # NaN: constant
    weights = np.eye(5)[[0, 1, 1, 3, 4]]  # argmax 0 1 1 3 4; the last row (</s>) is left out
    assert position_tracking(np.array([0.2, 0.9, 1.5, 2.8, 0.0]), weights) == pytest.approx(
        rank_correlation([0.2, 0.9, 1.5, 2.8], [0, 1, 1, 3]))


@pytest.mark.parametrize("text,expect", [
    ("", "empty"),
    ("1 2 " * 2500, "too long"),
    ("1 😀 2", None),
    ("<b>1</b> <script>x</script>", None),
    ("1\x00\x1b[31m2", "Control characters"),
], ids=["empty", "5000-characters", "emoji", "markup", "control-characters"])  # short names in pytest's report
def test_translate_bad_input_never_crashes(tiny_checkpoint, text, expect):
    proc = run("-m", "model.translate", "--checkpoint", str(tiny_checkpoint), "--json", input=text + "\n", check=False)
    assert "Traceback" not in proc.stderr
    if expect == "empty":
        assert proc.returncode == 1 and "empty" in proc.stderr
    else:
        assert proc.returncode == 0
        json.loads(proc.stdout)
        if expect:
            assert expect in proc.stderr


def test_translate_reports_a_corrupt_checkpoint(tiny_zoo):
    proc = run("-m", "model.translate", "--checkpoint", str(tiny_zoo / "broken"), "1 2", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "model.safetensors" in proc.stderr and "corrupt or truncated" in proc.stderr


@pytest.fixture(scope="module")
def toy_split(tmp_path_factory) -> Path:
    """A small en/fr/origin TSV in the real format: digit reversal, two 'corpora', repeated
    English sides for multi-reference scoring."""
    rng = random.Random(7)
    rows = []
    for k in range(120):
        digits = [str(rng.randint(0, 9)) for _ in range(rng.randint(2, 12))]
        rows.append((" ".join(digits), " ".join(digits[::-1]), "toy-a" if k % 2 else "toy-b"))
    rows.append((rows[0][0], "9 9 9", rows[0][2]))  # a second reference for the first source
    folder = tmp_path_factory.mktemp("data")
    for split in ("train", "dev", "test"):
        with gzip.open(folder / f"{split}.tsv.gz", "wt", encoding="utf-8") as f:
            f.write("en\tfr\torigin\n")
            for r in rows:
                f.write("\t".join(r) + "\n")
    return folder


def test_evaluate_json(tiny_checkpoint, toy_split, tmp_path):
    csv = tmp_path / "bleu_by_length.csv"
    js = json.loads(run("-m", "model.evaluate", "--checkpoint", str(tiny_checkpoint), "--data",
                        str(toy_split / "test.tsv.gz"), "--json", "--length-csv", str(csv), "--bootstrap", "50").stdout)
    assert js["segments"] == 120  # the repeated English side is one segment with two references
    assert js["signature"].startswith("nrefs:var|case:mixed|eff:no|tok:13a")
    assert set(js["per_origin"]) == {"toy-a", "toy-b"}
    assert js["bleu"] > 50  # the tiny model reverses digits well
    assert sum(b["segments"] for b in js["by_length"]) == 120
    assert js["perplexity"] >= 1.0 and js["seconds"] >= 0
    trained = json.loads((tiny_checkpoint / "config.json").read_text())["training"]["steps"]
    assert js["steps"] == trained > 0  # the figure names the weights it was measured on
    table = pd.read_csv(csv)
    assert list(table.columns[:4]) == ["model", "set", "beam", "bucket"] and (table["ci_low"] <= table["bleu"]).all()


def test_evaluate_src_ref_files(tiny_checkpoint, tmp_path):
    (tmp_path / "src.txt").write_text("1 2 3\n4 5 6 7\n")
    (tmp_path / "ref1.txt").write_text("3 2 1\n7 6 5 4\n")
    (tmp_path / "ref2.txt").write_text("3 2 1\n7 6 5\n")
    out = run("-m", "model.evaluate", "--checkpoint", str(tiny_checkpoint), "--src", str(tmp_path / "src.txt"),
              "--ref", str(tmp_path / "ref1.txt"), "--ref", str(tmp_path / "ref2.txt"), "--beam", "2").stdout
    assert "BLEU" in out and "signature: nrefs:2" in out


def test_stress_set_recipe():
    sources = [f"s{i}" for i in range(10)]
    refs = [[f"r{i}", f"alt{i}"] for i in range(10)]
    origins = ["a"] * 6 + ["b"] * 4
    src, ref, orig = stress_set(sources, refs, origins)
    assert all(2 <= len(s.split()) <= 5 for s in src)
    assert all(len(r) == 1 and len(r[0].split()) == len(s.split()) for s, r in zip(src, ref))
    for s, o in zip(src, orig):  # never joins across corpora
        assert {origins[int(w[1:])] for w in s.split()} == {o}
    assert stress_set(sources, refs, origins) == (src, ref, orig)  # seeded


def test_align_on_gold_format(tiny_checkpoint, tmp_path):
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 ||| 3 2 1\n4 5 ||| 5 4\n")
    (gold / "enfr.gold").write_text("1-3 2-2 3-1\n1-2 2p1\n")
    js = json.loads(run("-m", "model.align", "--checkpoint", str(tiny_checkpoint), "--gold", str(gold),
                        "--json").stdout)
    assert 0.0 <= js["aer"] <= 1.0 and js["sentences"] == 2 and js["sure"] == 4
    assert js["aer"] < 0.5  # the reversal model's attention is anti-diagonal, as the gold links are


def test_align_scores_every_transformer_head(tiny_zoo, tmp_path):
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 ||| 3 2 1\n4 5 6 7 ||| 7 6 5 4\n")
    (gold / "enfr.gold").write_text("1-3 2-2 3-1\n1-4 2-3 3-2 4-1\n")
    folder = tmp_path / "transformer"
    shutil.copytree(tiny_zoo / "transformer", folder)
    js = json.loads(run("-m", "model.align", "--checkpoint", str(folder), "--gold", str(gold), "--json",
                        "--write-metrics").stdout)
    heads = js["heads"]
    layers, n_heads = 2, 4  # model.toy.tiny_config
    assert len(heads["rows"]) == layers * n_heads + layers + 1  # every head, each layer's mean, all
    assert heads["best"]["aer"] == min(r["aer"] for r in heads["rows"])
    assert heads["shown"]["layer"] == 2 and heads["shown"]["head"] == "mean"  # the toy shows its last layer
    assert heads["shown"]["aer"] == js["aer"]  # the record's attention is that layer's head average
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["alignment"]["steps"] == json.loads((folder / "config.json").read_text())["training"]["steps"] > 0
    stored = metrics["alignment_heads"]
    assert set(stored) == {"written", "as_given"} and stored["written"]["best"]["aer"] <= stored["written"]["shown"]["aer"]


def test_align_refuses_rnnenc(tiny_zoo, tmp_path):
    gold = tmp_path / "g"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 ||| 1\n")
    (gold / "enfr.gold").write_text("1-1\n")
    proc = run("-m", "model.align", "--checkpoint", str(tiny_zoo / "rnnenc"), "--gold", str(gold), check=False)
    assert proc.returncode == 1 and "no attention" in proc.stderr


def _tiny_config(tmp_path, vocab_path) -> Path:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(f"""name: tiny
model: {{decoder: rnnsearch, attention: additive, vocab_size: 300, emb_size: 16, enc_hidden: 16,
         dec_hidden: 16, attention_size: 16, maxout_size: 16, dropout: 0.0}}
train: {{batch_tokens: 200, eval_every: 4, dev_sentences: 20, lr: 0.01, joined_fraction: 0.1,
         vocab: {vocab_path}}}
""")
    return cfg


def test_train_resume_and_checkpoint(toy_split, tmp_path):
    cfg = _tiny_config(tmp_path, tmp_path / "spm.model")
    out = tmp_path / "ck"
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(out), "--max-steps", "6",
        "--quiet")
    assert (tmp_path / "spm.model").exists()  # the vocabulary was trained on the train split
    log = pd.read_csv(out / "train_log.csv")
    assert list(log.columns) == ["epoch", "steps", "train_loss", "dev_loss", "dev_bleu", "tokens_per_second", "lr", "minutes"]
    assert list(log["steps"]) == [4, 6]
    progress = json.loads((out / "resume" / "progress.json").read_text())
    assert progress["steps"] == 6
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(out), "--max-steps", "10",
        "--resume", "--quiet")
    log = pd.read_csv(out / "train_log.csv")
    assert list(log["steps"]) == [4, 6, 8, 10]  # continued, not restarted
    config = json.loads((out / "config.json").read_text())
    assert config["training"]["total_steps_run"] == 10 and "machine" in config["training"]
    js = json.loads(run("-m", "model.translate", "--checkpoint", str(out), "--json", "1 2").stdout)
    assert js["source_tokens"][-1] == "</s>"


def test_snapshots_average_into_a_checkpoint_chosen_on_dev(toy_split, tmp_path):
    """--keep-snapshots N keeps the fp32 weights of the last N evaluations; average_checkpoints.py
    writes their mean (the count chosen on dev BLEU) as a checkpoint folder that loads, translates
    and records what it averaged; a run without snapshots gets a message, not a traceback."""
    cfg = _tiny_config(tmp_path, tmp_path / "spm.model")
    out = tmp_path / "ck"
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(out), "--max-steps", "12",
        "--keep-snapshots", "2", "--quiet")
    from model.checkpoint import snapshot_paths
    from safetensors.torch import load_file
    assert [p.name for p in snapshot_paths(out)] == ["step-0000008.safetensors", "step-0000012.safetensors"]
    run("scripts/average_checkpoints.py", str(out), "--last", "1", "2", "--out", str(tmp_path / "avg"),
        "--data", str(toy_split))
    config = json.loads((tmp_path / "avg" / "config.json").read_text())
    averaged = config["training"]["averaged"]
    assert set(averaged["dev_bleu_by_count"]) == {"1", "2"} and config["training"]["steps"] == 12
    chosen = averaged["snapshots_at_steps"]
    assert chosen in ([12], [8, 12]) and config["training"]["best_dev_bleu"] == pytest.approx(
        max(averaged["dev_bleu_by_count"].values()), abs=0.01)
    snaps = [load_file(str(p))["encoder.embed.weight"] for p in snapshot_paths(out)]
    assert not np.allclose(snaps[0], snaps[1])  # two different points of the run
    mean = sum(snaps[-len(chosen):]) / len(chosen)
    shipped = load_file(str(tmp_path / "avg" / "model.safetensors"))["encoder.embed.weight"]
    assert shipped.dtype.itemsize == 2 and np.allclose(shipped.float(), mean, atol=1e-3)
    js = json.loads(run("-m", "model.translate", "--checkpoint", str(tmp_path / "avg"), "--json", "1 2").stdout)
    assert js["source_tokens"][-1] == "</s>"
    bare = run("scripts/average_checkpoints.py", str(tmp_path / "avg"), "--data", str(toy_split), check=False)
    assert bare.returncode != 0 and "no snapshots to average" in bare.stderr


def test_oversample_and_lr_are_recorded(toy_split, tmp_path):
    """--oversample ORIGIN=K (mixed fine-tuning): K copies of that origin's pairs per epoch;
    --lr: the starting learning rate; --batch-tokens: the batch size (larger on a GPU);
    --precision: bf16 autocast; all recorded with the run."""
    from model.data import oversampled
    df = pd.DataFrame({"en": ["a", "b", "c"], "fr": ["x", "y", "z"], "origin": ["toy-a", "toy-b", "toy-a"]})
    assert list(oversampled(df, {"toy-a": 3})["en"]) == ["a", "b", "c", "a", "c", "a", "c"]
    assert oversampled(df, {}) is df and len(oversampled(df, {"toy-b": 1})) == 3
    cfg = _tiny_config(tmp_path, tmp_path / "spm.model")
    plain, over = tmp_path / "plain", tmp_path / "over"
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(plain), "--max-steps", "2",
        "--quiet")
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(over), "--max-steps", "2",
        "--oversample", "toy-a=3", "--lr", "0.0003", "--batch-tokens", "800", "--precision", "bfloat16", "--quiet")
    plain_cfg, over_cfg = (json.loads((d / "config.json").read_text()) for d in (plain, over))
    assert over_cfg["train"]["oversample"] == {"toy-a": 3} and plain_cfg["train"]["oversample"] == {}
    assert over_cfg["train"]["lr"] == 0.0003 and plain_cfg["train"]["lr"] != 0.0003
    assert (over_cfg["train"]["batch_tokens"], plain_cfg["train"]["batch_tokens"]) == (800, 200)
    assert (over_cfg["train"]["precision"], plain_cfg["train"]["precision"]) == ("bfloat16", "float32")
    assert over_cfg["training"]["target_tokens_seen"] > 2 * plain_cfg["training"]["target_tokens_seen"]
    assert over_cfg["training"]["train_pairs"] == plain_cfg["training"]["train_pairs"] + 2 * 60
    bad = run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(tmp_path / "bad"),
              "--oversample", "toy-a=many", check=False)
    assert bad.returncode != 0 and "ORIGIN=K" in bad.stderr
    bad = run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(tmp_path / "bad"),
              "--lr", "0", check=False)
    assert bad.returncode != 0 and "--lr takes a learning rate > 0" in bad.stderr
    bad = run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(tmp_path / "bad"),
              "--batch-tokens", "0", check=False)
    assert bad.returncode != 0 and "--batch-tokens takes a whole number" in bad.stderr


def _local_p_config(tmp_path, train_extra: str):
    """A tiny local-p config whose window warms up from 30 pieces to D = 10 over 8 steps."""
    cfg = tmp_path / "local.yaml"
    cfg.write_text(f"""name: local
model: {{decoder: luong, attention: local-general, local_window: 10, vocab_size: 300, emb_size: 16,
         enc_hidden: 16, dec_hidden: 16, attention_size: 16, dropout: 0.0}}
train: {{batch_tokens: 200, dev_sentences: 10, lr: 0.01, joined_fraction: 0.1, {train_extra},
         window_warmup_steps: 8, window_warmup_start: 30, vocab: {tmp_path / "spm.model"}}}
""")
    return cfg


def test_train_in_bf16_with_the_local_p_window_warm_up(toy_split, tmp_path):
    """train.precision and train.window_warmup_steps reach the training loop: the half-width
    used for step i is start − (start − D)·i/warm-up (logged at each evaluation), the run
    trains, and both settings are recorded with the checkpoint; a bad precision is refused."""
    cfg = _local_p_config(tmp_path, "eval_every: 4, precision: bfloat16")
    out = tmp_path / "ck"
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(out), "--max-steps", "8",
        "--quiet")
    log = (out / "train.log").read_text()
    assert "half-width D = 22.5" in log and "half-width D = 12.5" in log  # steps 3 and 7 of 8: 30 → 10
    assert np.isfinite(pd.read_csv(out / "train_log.csv")["train_loss"]).all()
    train = json.loads((out / "config.json").read_text())["train"]
    assert (train["precision"], train["window_warmup_steps"], train["window_warmup_start"]) == ("bfloat16", 8, 30)
    cfg.write_text(cfg.read_text().replace("precision: bfloat16", "precision: fp8"))
    bad = run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(tmp_path / "bad"),
              check=False)
    assert bad.returncode != 0 and "train.precision must be" in bad.stderr


def test_a_warm_started_local_p_run_skips_the_window_warm_up(toy_split, tmp_path):
    """Mixed fine-tuning (--init-from) counts its steps from 0: with the warm-up in its config
    it would widen a trained p_i's window again. It keeps D from the first step and says so."""
    cfg = _local_p_config(tmp_path, "eval_every: 2")
    base = tmp_path / "base"
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(base), "--max-steps", "2",
        "--quiet")
    assert "half-width D = 27.5" in (base / "train.log").read_text()  # from scratch the warm-up runs: step 1 of 8, 30 → 10
    tuned = tmp_path / "tuned"
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(tuned), "--init-from",
        str(base), "--max-steps", "4", "--quiet")
    log = (tuned / "train.log").read_text()
    assert "window warm-up skipped" in log and "half-width D =" not in log


def test_resume_without_resume_state_continues_the_shipped_checkpoint(toy_split, tmp_path):
    """A fresh clone has no OUT/resume/: --resume then continues the shipped (best-on-dev)
    checkpoint from its own step, epoch, wall time and learning rate, with its weights."""
    import shutil
    import torch
    from safetensors.torch import load_file
    from model.checkpoint import read_config
    from model.model import Seq2Seq
    from model.config import ModelConfig
    from model.train import continue_shipped
    cfg = _tiny_config(tmp_path, tmp_path / "spm.model")
    out = tmp_path / "ck"
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(out), "--max-steps", "4",
        "--quiet")  # one evaluation, so the shipped weights are those of step 4
    shutil.rmtree(out / "resume")
    shipped = read_config(out)
    fresh = Seq2Seq(ModelConfig(**shipped["model"]))
    optimizer = torch.optim.Adam(fresh.parameters(), lr=0.5)
    progress = continue_shipped(out, fresh, optimizer)
    assert progress["steps"] == 4 and progress["best_dev_bleu"] == shipped["training"]["best_dev_bleu"]
    assert progress["epoch"] + progress["epoch_fraction"] == pytest.approx(shipped["training"]["epochs"])
    assert optimizer.param_groups[0]["lr"] == pd.read_csv(out / "train_log.csv")["lr"].iloc[-1]  # not the 0.5 above
    weights = load_file(str(out / "model.safetensors"))
    assert all(torch.equal(fresh.state_dict()[k], v.float()) for k, v in weights.items())
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(out), "--max-steps", "8",
        "--resume", "--quiet")
    assert list(pd.read_csv(out / "train_log.csv")["steps"]) == [4, 8]  # from the shipped step on
    assert read_config(out)["training"]["total_steps_run"] == 8
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(empty),
                 "--max-steps", "2", "--resume", "--quiet", check=False)
    assert result.returncode != 0 and "neither resume/ nor a shipped checkpoint" in result.stderr
    shutil.rmtree(out / "resume")
    (out / "model.safetensors").write_bytes((out / "model.safetensors").read_bytes()[:500])  # truncated
    result = run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(out),
                 "--max-steps", "10", "--resume", "--quiet", check=False)
    assert result.returncode != 0 and "corrupt or truncated" in result.stderr and "Traceback" not in result.stderr


def test_train_distributed_two_cpu_processes(toy_split, tmp_path):
    """torchrun with 2 gloo processes writes the same checkpoint format."""
    cfg = _tiny_config(tmp_path, tmp_path / "spm.model")
    run("-m", "model.train", "--config", str(cfg), "--data", str(toy_split), "--out", str(tmp_path / "warm"),
        "--max-steps", "1", "--quiet")  # trains the vocabulary once, before the two ranks start
    out = tmp_path / "ddp"
    run("-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "model.train",
        "--config", str(cfg), "--data", str(toy_split), "--out", str(out), "--max-steps", "4", "--quiet")
    config = json.loads((out / "config.json").read_text())
    assert "2 process(es)" in config["training"]["machine"]
    assert (out / "model.safetensors").exists() and (out / "spm.model").exists()


def test_init_from_a_global_model_leaves_only_local_p_fresh(tiny_zoo):
    """``--init-from``: a local-p model starts from a global model of the same score; only
    W_p and v_p (Luong eq. 9) stay fresh. Another architecture is refused by name."""
    import torch
    from model.checkpoint import load_checkpoint
    from model.model import Seq2Seq
    from model.train import initialise_from
    local_cfg = load_checkpoint(tiny_zoo / "luong-local")[0].cfg
    model = Seq2Seq(local_cfg)
    note = initialise_from(model, str(tiny_zoo / "luong-general"), torch.device("cpu"))
    assert note["fresh"] == ["decoder.attention.W_p.weight", "decoder.attention.v_p.weight"]
    general = load_checkpoint(tiny_zoo / "luong-general")[0].state_dict()
    ours = model.state_dict()
    assert torch.equal(ours["decoder.attention.inner.W_a.weight"], general["decoder.attention.W_a.weight"].float())
    assert all(torch.equal(ours[k], v.float()) for k, v in general.items() if not k.startswith("decoder.attention."))
    with pytest.raises(SystemExit, match="different architecture.*U_o"):
        initialise_from(Seq2Seq(local_cfg), str(tiny_zoo / "rnnsearch"), torch.device("cpu"))


def test_results_table_reads_each_models_files(tmp_path, capsys):
    """scripts/results_table.py: the README's table, one row per zoo model from its config.json
    and metrics.json; the corpus columns come from the broad test split's origins, a missing
    model says so, and the decoding line says greedy only when every set was decoded greedily."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from results_table import main
    run_dir = tmp_path / "rnnsearch"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps({"training": {
        "data": "../shared/data/enfr-broad", "steps": 9143, "total_steps_run": 9143, "total_minutes_run": 277.0,
        "best_dev_bleu": 28.76}}))
    (run_dir / "metrics.json").write_text(json.dumps({
        "test": {"bleu": 44.06, "beam": 1, "signature": "nrefs:var|case:mixed",
                 "per_origin": {"tatoeba": {"bleu": 1.0}}},
        "broad-test": {"bleu": 30.2, "beam": 1, "per_origin": {"tatoeba": {"bleu": 43.68},
                                                                "multi30k-test_2017_flickr": {"bleu": 40.13}}},
        "newstest2014": {"bleu": 14.32, "beam": 1},
        "alignment": {"aer": 0.425, "as_given": {"aer": 0.447}}, "parameters": 6469184}))
    main(tmp_path)
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in out.splitlines()[2:]
            if line.startswith("|")}
    cells = rows["RNNsearch (Bahdanau, additive)"]
    assert cells[:7] == ["44.1", "30.2", "–", "40.1", "43.7", "14.3", "–"]
    assert cells[7:] == ["0.425", "0.447", "6,469,184", "`enfr-broad`", "9,143", "277 min", "28.8"]
    assert rows["Luong global, dot"][0] == "not trained yet"
    assert "\nGreedy; cased sacreBLEU, signature `nrefs:var|case:mixed`" in out
    (run_dir / "metrics.json").write_text(json.dumps({"test": {"bleu": 50.0, "beam": 5},
                                                      "newstest2014": {"bleu": 14.0, "beam": 1}}))
    main(tmp_path)
    assert "test: beam 5; newstest2014: greedy;" in capsys.readouterr().out
    from results_table import stages  # --stages: a model trained in one run is one stage
    stages(tmp_path)
    assert "| `rnnsearch` | 1, from scratch | – | – | 9,143 / – | 277 | 28.8 |" in capsys.readouterr().out.splitlines()



def test_history_table_prints_the_recorded_rounds(capsys):
    """scripts/history_table.py: every table in results/history/ is listed; one prints as
    markdown with each recorded row (the A/B rounds by commit); notes are found by a word."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from history_table import main, rows
    assert main([]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert {"cpu-per-click-ab", "lecture-by-commit", "soak-by-commit", "budget-from-scratch"} <= listed
    assert main(["cpu-per-click-ab"]) == 0
    out = capsys.readouterr().out
    recorded = [r["row"] for r in rows("doc_tables.jsonl") if r["table"] == "cpu-per-click-ab"]
    assert len(recorded) == 29 and "| 1 | 60.0 ms | 45.3 ms | `c56285e` |" in out
    assert all(f"| {r['round']} |" in out for r in recorded)
    assert main(["--notes", "malloc arenas"]) == 0 and "M_ARENA_MAX" in capsys.readouterr().out
    assert main(["no-such-table"]) == 2


def test_promote_finetuned_keeps_the_weights_whole_history(tmp_path):
    """scripts/promote_finetuned.py: the fine-tuned weights replace the shipped ones only when
    their dev BLEU is higher; config.json keeps each stage and adds the counts up, train_log.csv
    continues where the shipped weights were saved, and the stale metrics.json goes."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from promote_finetuned import promote

    def folder(name, training, train, log_steps, weights):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps({"name": "rnnsearch", "train": train, "training": training}))
        (d / "train_log.csv").write_text("epoch,steps,dev_bleu,minutes\n" + "".join(
            f"{s / 100},{s},{s / 10},{s / 10}\n" for s in log_steps))
        (d / "model.safetensors").write_bytes(weights)
        (d / "spm.model").write_bytes(b"vocab")
        return d

    shipped = folder("shipped", {"steps": 100, "total_steps_run": 120, "wall_time_minutes": 10.0,
                                 "total_minutes_run": 12.0, "target_tokens_seen": 1000, "best_dev_bleu": 20.0},
                     {"lr": 0.001}, [50, 100, 120], b"old")
    (shipped / "metrics.json").write_text("{}")
    worse = folder("worse", {"steps": 30, "wall_time_minutes": 3.0, "target_tokens_seen": 300,
                             "best_dev_bleu": 19.0}, {"lr": 0.00025}, [30], b"worse")
    with pytest.raises(SystemExit, match="not above the shipped 20.00"):
        promote(worse, shipped)
    assert (shipped / "model.safetensors").read_bytes() == b"old" and (shipped / "metrics.json").exists()

    tuned = folder("tuned", {"steps": 30, "total_steps_run": 40, "wall_time_minutes": 3.0, "total_minutes_run": 4.0,
                             "target_tokens_seen": 300, "best_dev_bleu": 22.0,
                             "initialised_from": {"checkpoint": "checkpoints/rnnsearch", "fresh": []}},
                    {"lr": 0.00025, "oversample": {"tatoeba": 3}}, [30, 40], b"new")
    merged = promote(tuned, shipped)
    t = merged["training"]
    assert (t["steps"], t["wall_time_minutes"], t["target_tokens_seen"]) == (130, 13.0, 1300)
    assert (t["total_steps_run"], t["total_minutes_run"], t["best_dev_bleu"]) == (160, 16.0, 22.0)
    assert [s["train"]["lr"] for s in t["stages"]] == [0.001, 0.00025] and "initialised_from" not in t
    assert merged["train"]["oversample"] == {"tatoeba": 3}
    assert json.loads((shipped / "config.json").read_text()) == merged
    assert (shipped / "model.safetensors").read_bytes() == b"new" and not (shipped / "metrics.json").exists()
    with (shipped / "train_log.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["steps"]) for r in rows] == [50, 100, 130, 140]  # 120 came after the shipped weights
    assert [float(r["minutes"]) for r in rows[2:]] == [13.0, 14.0]

    again = folder("again", {"steps": 10, "wall_time_minutes": 1.0, "target_tokens_seen": 100,
                             "best_dev_bleu": 23.0}, {"lr": 0.0001}, [10], b"newer")
    training = promote(again, shipped)["training"]
    assert [s["steps"] for s in training["stages"]] == [100, 30, 10]
    from results_table import history
    assert history(training) == " (12 + 4 mixed + 1)"  # the README table's CPU-minutes cell
    from results_table import minutes
    gpu = {**training["stages"][-1], "machine": "Xeon, 16 cores, torch 2.11, device cuda:0 (NVIDIA H200), 1 process(es)",
           "initialised_from": {"checkpoint": "checkpoints/rnnsearch"}, "train": {"oversample": {"tatoeba": 3}}}
    with_gpu = {**training, "stages": [*training["stages"], gpu]}
    assert minutes({"training": training}) == "17 min (12 + 4 mixed + 1)"
    assert minutes({"training": with_gpu}) == "17 CPU min (12 + 4 mixed + 1) + 1 GPU min"  # GPU minutes are not added to CPU ones
    from model.checkpoint import stage_kind
    assert [stage_kind(s) for s in with_gpu["stages"]][-1] == "mixed fine-tuning on a GPU"
    continued = folder("continued", {"steps": 20, "total_steps_run": 25, "wall_time_minutes": 2.0,
                                     "target_tokens_seen": 200, "best_dev_bleu": 24.0}, {"lr": 0.0001}, [10, 20, 25],
                       b"newest")  # the last run resumed: its record replaces its own stage
    training = promote(continued, shipped, continued=True)["training"]
    assert [s["steps"] for s in training["stages"]] == [100, 30, 20] and training["total_steps_run"] == 185
    with (shipped / "train_log.csv").open() as f:
        assert [int(r["steps"]) for r in csv.DictReader(f)] == [50, 100, 130, 140, 150, 155]
    from results_table import copies
    assert copies(training["stages"][1]["train"]["oversample"]) == "tatoeba ×3"
    assert copies({"a": 2, "b": 3, "c": 2, "d": 2}) == "b ×3; 3 corpora ×2"


def test_compare_curves_reads_the_first_stage_step_for_step(tmp_path):
    """scripts/compare_curves.py: a shipped log's later stages (steps restarting) are left out,
    and a step a run did not evaluate is a dash."""
    shipped, run_ = tmp_path / "shipped.csv", tmp_path / "run.csv"
    pd.DataFrame({"steps": [600, 1200, 300, 600], "dev_bleu": [2.0, 5.5, 9.0, 9.5]}).to_csv(shipped, index=False)
    pd.DataFrame({"steps": [600, 1800], "dev_bleu": [3.25, 9.8]}).to_csv(run_, index=False)
    out = run("scripts/compare_curves.py", f"shipped={shipped}", f"new={run_}").stdout.splitlines()
    assert out[0] == "| steps | shipped | new |"
    assert out[2:] == ["| 600 | 2.00 | 3.25 |", "| 1,200 | 5.50 | – |", "| 1,800 | – | 9.80 |"]
    bad = run("scripts/compare_curves.py", "nothing", check=False)
    assert bad.returncode != 0 and "NAME=PATH" in bad.stderr


def test_compute_budget_converts_each_stages_tokens_at_the_models_own_speed(tmp_path):
    """scripts/compute_budget.py: the tokens of every stage (CPU or GPU) add up, and one-core
    minutes are those tokens over the model's measured throughput in each precision."""
    stages = [{"target_tokens_seen": 1_200_000, "machine": "AMD EPYC, 2 cores, device cpu"},
              {"target_tokens_seen": 600_000, "machine": "Intel Xeon, device cuda:0 (NVIDIA H200)"}]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({"training": {"stages": stages}}))
    (tmp_path / "m" / "metrics.json").write_text(json.dumps({"newstest2014": {"bleu": 12.345, "beam": 1}}))
    speeds = tmp_path / "speeds.csv"
    pd.DataFrame({"config": ["configs/m.yaml"] * 2, "precision": ["float32", "bfloat16"],
                  "tokens_per_second": [1000, 2000]}).to_csv(speeds, index=False)
    out = run("scripts/compute_budget.py", "m", "--checkpoints", str(tmp_path), "--speeds", str(speeds)).stdout
    assert "| `m` | 1.2M CPU + 0.6M GPU | 1.8M | 30 | 15 | 12.35 |" in out.splitlines()
    missing = run("scripts/compute_budget.py", "m", "--checkpoints", str(tmp_path),
                  "--speeds", str(ROOT / "results" / "train_speed.csv"), check=False)
    assert missing.returncode != 0 and "no training throughput" in missing.stderr
