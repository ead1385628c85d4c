"""Training (python -m model.train, model/train.py) on the toy split: resume, snapshot averaging,
oversampling, bf16 with local-p's window warm-up, warm starts, two CPU processes."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers.cli import run

pytestmark = pytest.mark.slow
SPREAD = True  # each training on the next free worker (tests/conftest.py)


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
    for flags, message in [(["--oversample", "toy-a=many"], "ORIGIN=K"), (["--lr", "0"], "--lr takes a learning rate > 0"),
                           (["--batch-tokens", "0"], "--batch-tokens takes a whole number")]:
        refused(cfg, toy_split, tmp_path, flags, message)


def refused(cfg, toy_split, tmp_path, flags: list[str], message: str) -> None:
    """The command line ``flags`` are refused with ``message`` before any training starts (the
    checks of model.train's run_config, read in this process: a subprocess would only add the
    seconds of importing torch)."""
    from model.train import parse_args, run_config
    with pytest.raises(SystemExit, match=message):
        run_config(parse_args(["--config", str(cfg), "--data", str(toy_split), "--out", str(tmp_path / "bad"), *flags]))
    assert not (tmp_path / "bad").exists()


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
    refused(cfg, toy_split, tmp_path, [], "train.precision must be")


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
    from model.data import split_path
    from model.vocabulary import train_vocabulary
    train_vocabulary(split_path(toy_split, "train"), tmp_path / "spm.model", 300)  # once, before the two ranks start
    out = tmp_path / "ddp"
    run("-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "model.train",
        "--config", str(cfg), "--data", str(toy_split), "--out", str(out), "--max-steps", "4", "--quiet",
        fresh=True)  # torchrun starts its two ranks as new interpreters of its own
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
