"""Write the next revision from the difference between schema.py's tables and a scratch store at head:

    python -m server.class_store.migrations revision "add a hint column to answers"

writes ``versions/NNNN_add_a_hint_column_to_answers.py``; read it, test it (tests/test_migrations.py),
commit it with the schema change. The scratch store is SQLite in a temporary folder: no store of
the app's is touched."""
from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from alembic import command

from server.class_store import engine_for
from server.class_store.migrations import config, revisions, upgrade


def new_revision(message: str) -> str:
    """The new revision's id (the next number and the message's words) after writing its file."""
    rev_id = f"{len(revisions()) + 1:04d}_" + re.sub(r"[^a-z0-9]+", "_", message.lower()).strip("_")[:24]
    with tempfile.TemporaryDirectory() as folder:
        engine = engine_for(f"sqlite:///{Path(folder) / 'scratch.sqlite3'}")
        try:
            upgrade(engine)
            with engine.connect() as conn:
                command.revision(config(conn), message=message, autogenerate=True, rev_id=rev_id)
        finally:
            engine.dispose()
    return rev_id


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "revision":
        sys.exit(__doc__)
    print(new_revision(sys.argv[2]))
