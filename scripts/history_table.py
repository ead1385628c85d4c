"""Print a table of the measurement history kept in results/history/ (the A/B rounds, the
per-commit runs, the dev curves and budgets the docs quote from).

    python scripts/history_table.py                    every table: its name, source section, rows
    python scripts/history_table.py TABLE              that table, as markdown
    python scripts/history_table.py --notes WORD       the recorded paragraphs that mention WORD

``results/history/doc_tables.jsonl`` holds one line per table row (``table``, the doc and
section it was measured for, ``as_of``: the commit of that doc, ``row``: column → cell);
``doc_notes.jsonl`` the paragraphs with figures in them, verbatim. Runs logged by a bench
script are in ``results/benchmarks.jsonl`` (``bench``, ``commit``, ``date``, ``host``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HISTORY = Path(__file__).resolve().parent.parent / "results" / "history"


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (HISTORY / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def markdown(table: list[dict]) -> str:
    header = list(table[0]["row"])
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(r["row"].get(h, "") for h in header) + " |" for r in table]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    tables = rows("doc_tables.jsonl")
    if argv[:1] == ["--notes"]:
        word = " ".join(argv[1:]).lower()
        for note in rows("doc_notes.jsonl"):
            if word in note["text"].lower() or word in note["section"].lower():
                print(f"[{note['source']} @ {note['as_of']}, {note['section']}]\n{note['text']}\n")
        return 0
    if not argv:
        seen: dict[str, list] = {}
        for t in tables:
            seen.setdefault(t["table"], [t, 0])[1] += 1
        for name, (t, n) in seen.items():
            print(f"{name:34} {n:3} rows  {t['source']} @ {t['as_of']}: {t['section']}")
        return 0
    chosen = [t for t in tables if t["table"] == argv[0]]
    if not chosen:
        print(f"no table {argv[0]!r}; run without arguments for the list", file=sys.stderr)
        return 2
    print(f"{chosen[0]['source']} @ {chosen[0]['as_of']}, {chosen[0]['section']}\n")
    print(markdown(chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
