"""The tests' tiny checkpoints: one per kind of the shipped zoo, trained for seconds on digit
reversal (``model.toy.make_tiny_checkpoint``), written as ordinary checkpoint folders; and beside
them ``copy_general/``, the global model that local-p's test trains its window from.

    python scripts/make_tiny_zoo.py [--out tests/fixtures/tiny_zoo]

The suite loads the folders kept in ``tests/fixtures/tiny_zoo/`` (``tests/conftest.py``) rather
than training its own: float32 training differs across CPUs, so a tiny model trained at test
time learns something slightly different on each host, and a test asserting what it learned
(a knock-out hurts more than a random one) would pass on one machine and fail on another.
Rerun this only to change the tiny zoo, and commit the result.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from model.toy import make_tiny_checkpoint, TINY_ZOO, TINY_ZOO_STEPS  # noqa: E402

COPY_GENERAL = "copy_general"  # beside the zoo's folder


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "tests" / "fixtures" / "tiny_zoo"))
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    out = Path(args.out)
    for name, (decoder, attention) in TINY_ZOO.items():
        shutil.rmtree(out / name, ignore_errors=True)
        make_tiny_checkpoint(out / name, decoder, attention, steps=TINY_ZOO_STEPS)
        shutil.rmtree(out / name / "_vocab", ignore_errors=True)  # the vocabulary is the folder's spm.model
    # local-p's test starts from a global `general` model that copies digits (tests/test_attention.py)
    copy = out.parent / COPY_GENERAL
    shutil.rmtree(copy, ignore_errors=True)
    make_tiny_checkpoint(copy, "luong", "general", steps=300, task="copy", lr=0.005, lengths=(4, 11))
    shutil.rmtree(copy / "_vocab", ignore_errors=True)
    one_vocabulary([*(out / name for name in TINY_ZOO), copy])
    for name in TINY_ZOO:
        print(f"{name}: {sum(f.stat().st_size for f in (out / name).iterdir()) / 1024:.0f} KiB", flush=True)
    return 0


def one_vocabulary(folders: list[Path]) -> None:
    """Every folder's spm.model made byte-identical to the first's (git then keeps one copy).
    Each was trained on the same toy data and differs only in the training path it records;
    the pieces and their ids are checked equal first."""
    import sentencepiece as spm
    first = folders[0] / "spm.model"
    pieces = [spm.SentencePieceProcessor(model_file=str(f / "spm.model")) for f in folders]
    for folder, sp in zip(folders[1:], pieces[1:]):
        assert [sp.id_to_piece(i) for i in range(sp.get_piece_size())] == \
            [pieces[0].id_to_piece(i) for i in range(pieces[0].get_piece_size())], f"{folder.name}'s vocabulary differs"
        shutil.copyfile(first, folder / "spm.model")

if __name__ == "__main__":
    sys.exit(main())
