"""The model zoo: which checkpoint folders exist, and loading each one on its own.

One broken folder must not take the others down, so :func:`load_zoo` returns an entry
per folder with either a model or the reason it is unavailable.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from .checkpoint import CheckpointError, load_checkpoint, read_metrics
from .packed import release_free_memory
from .model import Seq2Seq
from .vocabulary import Vocabulary

# The shipped zoo, in the order the app lists it: each model's (decoder, attention) as its
# configs/NAME.yaml sets them (tests/test_config.py). The one list of the zoo's names: the app,
# the tests' tiny zoo (model/toy.py), the benches and the scripts (`python -m model.zoo --names`).
KINDS = {
    "rnnsearch": ("rnnsearch", "additive"),
    "luong-general": ("luong", "general"),
    "luong-dot": ("luong", "dot"),
    "luong-concat": ("luong", "concat"),
    "luong-local": ("luong", "local-general"),
    "rnnenc": ("rnnenc", "none"),
    "transformer": ("transformer", "scaled-dot"),
}
ZOO = tuple(KINDS)
DISPLAY_NAMES = {
    "rnnsearch": "RNNsearch (Bahdanau, additive)",
    "luong-dot": "Luong global, dot",
    "luong-general": "Luong global, general",
    "luong-concat": "Luong global, concat",
    "luong-local": "Luong local-p (general)",
    "rnnenc": "RNNenc (no attention)",
    "transformer": "Transformer (scaled dot-product, 4 heads)",
}


def zoo_names(attending: bool = False, recurrent: bool = False) -> list[str]:
    """The zoo's names in order; ``attending``: only the models with attention (not RNNenc);
    ``recurrent``: only the RNN encoder-decoders (not the Transformer)."""
    return [name for name, (decoder, attention) in KINDS.items()
            if (not attending or attention != "none") and (not recurrent or decoder != "transformer")]


@dataclass
class ZooEntry:
    name: str
    folder: Path
    model: Seq2Seq | None = None
    vocab: Vocabulary | None = None
    config: dict = field(default_factory=dict)
    metrics: dict | None = None
    error: str | None = None
    spec: str | None = None  # a model made elsewhere: its Hub name or folder (``hf:`` + spec is its name)

    @property
    def available(self) -> bool:
        return self.model is not None

    @property
    def made_elsewhere(self) -> bool:
        """A Hugging Face model (``model/hf.py``): the same record as ours, but none of the
        RNNs' internals (annotations, query states) for Step through."""
        return self.spec is not None

    @property
    def languages(self) -> tuple[str | None, str | None]:
        """(source, target) ISO 639-1 codes: every model we train is English → French."""
        if self.model is None or not self.made_elsewhere:
            return ("en", "fr")
        return self.model.cfg.source_language, self.model.cfg.target_language

    @property
    def display_name(self) -> str:
        if self.made_elsewhere:
            src, trg = self.languages if self.available else (None, None)
            pair = f"{src}→{trg}, " if src and trg else ""
            return f"{self.spec.rstrip('/').split('/')[-1]} ({pair}Hugging Face)"
        return DISPLAY_NAMES.get(self.name, self.name)

    @property
    def has_attention(self) -> bool:
        return self.model is not None and self.model.cfg.has_attention


def discover(root: str | Path = "checkpoints") -> list[str]:
    """Checkpoint folder names under root: the zoo's names first (even if missing), then any
    other folder holding a config.json or model.safetensors."""
    root = Path(root)
    names = list(ZOO)
    if root.is_dir():
        extra = sorted(p.name for p in root.iterdir()
                       if p.is_dir() and not p.name.startswith(("_", ".")) and p.name not in names
                       and ((p / "config.json").exists() or (p / "model.safetensors").exists()))
        names += extra
    return names


def load_entry(folder: str | Path) -> ZooEntry:
    folder = Path(folder)
    entry = ZooEntry(name=folder.name, folder=folder)
    try:
        entry.model, entry.vocab, entry.config = load_checkpoint(folder)
        entry.metrics = read_metrics(folder)
    except CheckpointError as e:
        entry.error = str(e)
    except Exception as e:  # noqa: BLE001 - any other failure still must not take the app down
        entry.error = f"{folder}: could not be loaded ({type(e).__name__}: {e})"
    return entry


def load_made_elsewhere(spec: str, metrics_root: str | Path | None = None) -> ZooEntry:
    """A Hugging Face model (a Hub name already in the local cache, or a saved folder) as a
    zoo entry; on any failure an unavailable entry with the reason."""
    from .hf import load_hf, metrics_folder, PREFIX  # transformers only when such a model is asked for
    entry = ZooEntry(name=PREFIX + spec, folder=metrics_folder(spec, metrics_root), spec=spec)
    try:
        entry.model, entry.vocab, entry.config = load_hf(spec, metrics_root)
        entry.metrics = read_metrics(entry.folder)
    except CheckpointError as e:
        entry.error = str(e)
    except Exception as e:  # noqa: BLE001 - any other failure still must not take the app down
        entry.error = f"{spec}: could not be loaded ({type(e).__name__}: {e})"
    return entry


def load_zoo(root: str | Path = "checkpoints", only_present: bool = False, made_elsewhere: tuple[str, ...] = (),
             metrics_root: str | Path | None = None) -> dict[str, ZooEntry]:
    """Load every checkpoint under root, then each model made elsewhere (``hf:`` specs; their
    metrics under ``metrics_root``). Missing zoo folders become unavailable entries (unless
    ``only_present``), so the app can say which model is missing and why."""
    root = Path(root)
    entries = {}
    for name in discover(root):
        folder = root / name
        if not folder.exists():
            if not only_present:
                entries[name] = ZooEntry(name=name, folder=folder, error=f"{folder}: not found (not trained or not shipped)")
            continue
        entries[name] = load_entry(folder)
    for spec in made_elsewhere:
        entry = load_made_elsewhere(spec, metrics_root)
        entries[entry.name] = entry
    # the fp32 copies made while loading and packing are garbage now: hand their pages back
    # once, after the last model (measured: the app's six models ~40 MB smaller; trimming after
    # every model instead made the next one's loading slower)
    release_free_memory()
    return entries


def load_for_cli(folder: str | Path, results: str | Path | None = None) -> tuple[Seq2Seq, Vocabulary, dict]:
    """load_checkpoint for the command-line tools: a broken checkpoint ends the program with
    its message on stderr and exit status 2, never a traceback. ``hf:NAME_OR_FOLDER`` loads a
    Hugging Face model (``model/hf.py``; its metrics.json under ``results``/hf/)."""
    try:
        if str(folder).startswith("hf:"):
            from .hf import load_hf
            return load_hf(str(folder), metrics_root=Path(results) / "hf" if results else None, allow_download=True)
        return load_checkpoint(folder)
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


def main(argv=None) -> int:
    """``python -m model.zoo --names [--attending] [--recurrent]``: the names, one line, space-separated,
    for the shell scripts (scripts/train_zoo.sh, evaluate_zoo.sh, run_benchmarks.sh, attribution_results.sh)."""
    import argparse
    p = argparse.ArgumentParser(description="The shipped zoo's model names, in the app's order.")
    p.add_argument("--names", action="store_true", required=True, help="print the names, space-separated")
    p.add_argument("--attending", action="store_true", help="only the models with attention (not rnnenc)")
    p.add_argument("--recurrent", action="store_true", help="only the RNN encoder-decoders (not the transformer)")
    args = p.parse_args(argv)
    print(" ".join(zoo_names(args.attending, args.recurrent)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
