"""Show the teacher key of the class store this server uses (or make a new one).

    python scripts/teacher_key.py          # the key, on this terminal
    python scripts/teacher_key.py --new    # a new key; the old one stops working everywhere

Reads the same settings as the server (ATTN_EXPLORER_CLASS_DB, ATTN_EXPLORER_CLASS_DIR,
ATTN_EXPLORER_TEACHER_KEY), so run it with the environment the server was started with. The
key is the owner's, like the store's file: nothing else prints it, and no log holds it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from server.class_store import AnswerRefused, class_store, StoreUnavailable  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--new", action="store_true", help="replace the store's generated key with a new one")
    args = p.parse_args(argv)
    store = class_store()
    try:
        key = store.teacher_key()
        print(store.new_key(key) if args.new else key)
    except (StoreUnavailable, AnswerRefused) as e:
        print(f"teacher_key: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
