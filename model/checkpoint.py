"""Self-describing checkpoint folders, loaded without unpickling.

    checkpoints/NAME/
        model.safetensors   weights (fp16)
        config.json         {"name", "model": ModelConfig, "train": TrainConfig, "training": {...}}
        spm.model           the SentencePiece vocabulary
        metrics.json        written by ``python -m model.evaluate`` (optional)
        train_log.csv       one row per evaluation during training (optional)
        resume/             full-precision weights + optimiser state for --resume (not shipped)
        snapshots/          fp32 weights of the last evaluations, for averaging (optional, not shipped)

Every failure is a :class:`CheckpointError` naming the file and the problem.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors import safe_open, SafetensorError
from safetensors.torch import load_file, save_file

from .config import ModelConfig
from .model import Seq2Seq, build_model
from .packed import pack_for_decoding
from .vocabulary import Vocabulary

WEIGHTS, CONFIG, VOCAB, METRICS, TRAIN_LOG = "model.safetensors", "config.json", "spm.model", "metrics.json", "train_log.csv"
SNAPSHOTS = "snapshots"


class CheckpointError(Exception):
    """A checkpoint folder that cannot be loaded; str() is a message for users."""


def save_checkpoint(folder: str | Path, model: Seq2Seq, vocab: Vocabulary, config: dict,
                    dtype: torch.dtype = torch.float16) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # tied weights share storage; safetensors refuses shared tensors, and they are one matrix anyway
    tensors = {k: v.detach().to(dtype).contiguous().clone() for k, v in model.state_dict().items()}
    tmp = folder / (WEIGHTS + ".tmp")
    save_file(tensors, str(tmp), metadata={"format": "pt"})
    tmp.replace(folder / WEIGHTS)  # atomic: a kill mid-save never leaves a half-written checkpoint
    config = dict(config, model=asdict(model.cfg))
    (folder / CONFIG).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if vocab.path.resolve() != (folder / VOCAB).resolve():
        (folder / VOCAB).write_bytes(vocab.path.read_bytes())


def read_config(folder: str | Path) -> dict:
    path = Path(folder) / CONFIG
    if not path.exists():
        raise CheckpointError(f"{path}: missing (a checkpoint folder needs {CONFIG}, {WEIGHTS} and {VOCAB})")
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("model"), dict):
        raise CheckpointError(f"{path}: has no 'model' section describing the architecture")
    return cfg


def load_checkpoint(folder: str | Path, device: str = "cpu",
                    for_decoding: bool = True) -> tuple[Seq2Seq, Vocabulary, dict]:
    """Rebuild the model a folder describes. Returns (model in eval mode, vocabulary, config).

    On CPU the decoder's matrices are set up for fast decoding (``model/packed.py``: the
    same fp32 arithmetic, training unaffected); ``for_decoding=False`` skips that, for
    training code that only wants the weights (``--init-from``, ``--resume``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: no such checkpoint folder")
    cfg = read_config(folder)
    try:
        model_cfg = ModelConfig(**cfg["model"])
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{folder / CONFIG}: invalid model section ({e})") from None

    vocab_path = folder / VOCAB
    if not vocab_path.exists():
        raise CheckpointError(f"{vocab_path}: missing SentencePiece model")
    try:
        vocab = Vocabulary(vocab_path)
    except (RuntimeError, OSError, ValueError) as e:
        raise CheckpointError(f"{vocab_path}: cannot be read as a SentencePiece model ({e})") from None
    if len(vocab) != model_cfg.vocab_size:
        raise CheckpointError(f"{vocab_path}: has {len(vocab)} pieces but {CONFIG} says vocab_size={model_cfg.vocab_size}")

    weights_path = folder / WEIGHTS
    if not weights_path.exists():
        raise CheckpointError(f"{weights_path}: missing weights file")
    try:
        tensors = load_file(str(weights_path), device=device)
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise CheckpointError(f"{weights_path}: corrupt or truncated safetensors file ({e})") from None

    model = build_model(model_cfg)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{weights_path}: does not match {CONFIG} "
                              f"(missing {missing[:3]}{'…' if len(missing) > 3 else ''}, "
                              f"unexpected {unexpected[:3]}{'…' if len(unexpected) > 3 else ''})")
    for name, t in tensors.items():
        if t.shape != expected[name].shape:
            raise CheckpointError(f"{weights_path}: tensor {name} has shape {tuple(t.shape)}, "
                                  f"{CONFIG} implies {tuple(expected[name].shape)}")
        if not torch.isfinite(t).all():
            raise CheckpointError(f"{weights_path}: tensor {name} holds NaN or infinite values")
    model.load_state_dict({k: v.float() for k, v in tensors.items()})
    del tensors, expected  # garbage once packed: expected holds the fp32 parameters held in fp16 from here on
    model.to(device).eval()
    if device == "cpu" and for_decoding:
        pack_for_decoding(model)
    return model, vocab, cfg


def read_metrics(folder: str | Path) -> dict | None:
    path = Path(folder) / METRICS
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return None


def write_metrics(folder: str | Path, metrics: dict) -> None:
    path = Path(folder) / METRICS
    path.parent.mkdir(parents=True, exist_ok=True)  # a model made elsewhere: results/hf/NAME/ on its first score
    old = read_metrics(folder) or {}
    old.update(metrics)
    path.write_text(json.dumps(old, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def training_stages(config: dict) -> list[dict]:
    """Each training run behind a checkpoint's weights, oldest first: ``training.stages`` where
    runs were chained (scripts/promote_finetuned.py), else the one run's own ``training`` block;
    every stage carries its ``train`` settings."""
    training = config.get("training", {})
    return training.get("stages") or ([{**training, "train": config.get("train", {})}] if training else [])


def stage_minutes(stage: dict) -> float | None:
    """The wall-clock minutes a stage spent, on a CPU or a GPU (:func:`stage_on_gpu`): every
    evaluation it ran, or its best weights' where it never finished."""
    return stage.get("total_minutes_run", stage.get("wall_time_minutes"))


def stage_on_gpu(stage: dict) -> bool:
    """Whether a stage trained on a GPU (``model.train --device cuda`` records ``device cuda:N``
    in its machine): its minutes are not CPU minutes and are counted apart."""
    return "device cuda" in stage.get("machine", "")


def training_minutes(config: dict) -> tuple[float | None, float]:
    """(CPU minutes, GPU minutes) that every stage behind a checkpoint (:func:`training_stages`)
    spent; CPU minutes are None where no stage recorded any."""
    stages = training_stages(config)
    cpu = [stage_minutes(s) for s in stages if not stage_on_gpu(s) and stage_minutes(s) is not None]
    return (sum(cpu) if cpu else None), sum(stage_minutes(s) or 0 for s in stages if stage_on_gpu(s))


def stage_kind(stage: dict) -> str:
    """A training stage named by how it started, what it read and where it ran."""
    if not stage.get("initialised_from"):
        kind = "from scratch"
    else:
        kind = "mixed fine-tuning" if stage.get("train", {}).get("oversample") else "fine-tuning"
    return f"{kind} on a GPU" if stage_on_gpu(stage) else kind


# -- resume state: fp32 weights and Adam moments, as safetensors + JSON (never pickle) ---------
def save_resume(folder: str | Path, model: Seq2Seq, optimizer: torch.optim.Optimizer, progress: dict) -> None:
    folder = Path(folder) / "resume"
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v.detach().contiguous().clone() for k, v in model.state_dict().items()}
    opt = optimizer.state_dict()
    for pid, st in opt["state"].items():
        for key, val in st.items():
            if torch.is_tensor(val):
                tensors[f"optim.{pid}.{key}"] = val.detach().float().reshape(-1).contiguous() if val.dim() == 0 \
                    else val.detach().contiguous()
    save_file(tensors, str(folder / "state.safetensors.tmp"))
    (folder / "state.safetensors.tmp").replace(folder / "state.safetensors")
    progress = dict(progress, lr=[g["lr"] for g in opt["param_groups"]])
    (folder / "progress.json").write_text(json.dumps(progress, indent=2) + "\n")


def load_resume(folder: str | Path, model: Seq2Seq, optimizer: torch.optim.Optimizer) -> dict | None:
    folder = Path(folder) / "resume"
    if not (folder / "state.safetensors").exists() or not (folder / "progress.json").exists():
        return None
    try:
        tensors = load_file(str(folder / "state.safetensors"))
        progress = json.loads((folder / "progress.json").read_text())
    except (SafetensorError, OSError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{folder}: resume state unreadable ({e}); delete it to start afresh") from None
    model.load_state_dict({k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")})
    opt = optimizer.state_dict()
    state = {}
    for name, val in tensors.items():
        if name.startswith("optim."):
            _, pid, key = name.split(".", 2)
            state.setdefault(int(pid), {})[key] = val.reshape(()) if key == "step" else val
    opt["state"] = state
    for g, lr in zip(opt["param_groups"], progress.get("lr", [])):
        g["lr"] = lr
    optimizer.load_state_dict(opt)
    return progress


# -- snapshots: the weights at each evaluation, for checkpoint averaging ------------------------
def save_snapshot(folder: str | Path, model: Seq2Seq, progress: dict, keep: int) -> Path:
    """This evaluation's fp32 weights as ``OUT/snapshots/step-NNNNNNN.safetensors``, with the
    run's ``steps``, ``train_seconds`` and ``target_tokens`` as metadata; only the ``keep``
    latest snapshots stay."""
    (Path(folder) / SNAPSHOTS).mkdir(parents=True, exist_ok=True)
    path = Path(folder) / SNAPSHOTS / f"step-{progress['steps']:07d}.safetensors"
    tensors = {k: v.detach().float().contiguous().clone() for k, v in model.state_dict().items()}
    meta = {k: str(progress[k]) for k in ("steps", "train_seconds", "target_tokens") if k in progress}
    save_file(tensors, str(path.with_suffix(".tmp")), metadata=meta)
    path.with_suffix(".tmp").replace(path)
    for old in snapshot_paths(folder)[:-keep]:
        old.unlink()
    return path


def snapshot_paths(folder: str | Path) -> list[Path]:
    """A run's snapshots, oldest first."""
    return sorted((Path(folder) / SNAPSHOTS).glob("step-*.safetensors"))


def average_snapshots(paths: list[Path]) -> tuple[dict[str, torch.Tensor], list[dict]]:
    """The element-wise mean of the snapshots' weights (checkpoint averaging: Vaswani et al. 2017
    §6.1 average their last 5 checkpoints; Junczys-Dowmunt et al. 2016) and each one's metadata.
    Late in a run the weights wander around one minimum with the optimiser's noise, and their
    mean can sit nearer it than any one of them; whether it does is measured on dev
    (scripts/average_checkpoints.py). Returns ({name: mean tensor}, [metadata per snapshot])."""
    if not paths:
        raise CheckpointError("no snapshots to average (train with --keep-snapshots N)")
    total, metas = None, []
    for path in paths:
        try:
            with safe_open(str(path), "pt") as f:
                tensors, meta = {k: f.get_tensor(k) for k in f.keys()}, f.metadata() or {}
        except (SafetensorError, OSError, ValueError) as e:
            raise CheckpointError(f"{path}: unreadable snapshot ({e})") from None
        if total is not None and set(tensors) != set(total):
            raise CheckpointError(f"{path}: holds other tensors than {paths[0].name}")
        total = tensors if total is None else {k: total[k] + tensors[k] for k in total}
        metas.append(meta)
    return {k: v / len(paths) for k, v in total.items()}, metas
