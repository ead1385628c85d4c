"""The class store's schema history, kept with Alembic: a store on PostgreSQL outlives the app
version that made it, so every change to :mod:`server.class_store.schema` comes with a revision
in ``versions/`` and every store is brought to this code's newest one (its *head*) the first time
a process uses it (:func:`upgrade`).

- Configured here, in code: no ``alembic.ini``; ``env.py`` runs the revisions on the connection
  that :func:`upgrade` holds, so the upgrade and its lock are one transaction.
- Concurrent starts (the replicas behind HAProxy start together) take turns: PostgreSQL's
  transaction-level advisory lock, SQLite's ``BEGIN IMMEDIATE`` (the write lock, taken before the
  store's revision is read). The second process finds the store at head and does nothing.
- A store made before the history began (``create_all``, no ``alembic_version`` table) is the
  base revision's: ``0001_base`` makes only the tables it lacks and stamps it.
- A store at a revision this code does not know (a newer app version upgraded it) is refused with
  :class:`NewerStore`, naming both revisions: the old code would misread the new columns.

A new revision: change ``schema.py``, then ``python -m server.class_store.migrations revision
"what changed"`` writes one by comparing the tables with a scratch store at head
(docs/exercises.md, "Changing the class store's tables").
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from server.class_store.schema import StoreUnavailable

HERE = Path(__file__).resolve().parent

BASE = "0001_base"  # the nine tables as ``create_all`` made them before the history began

ADVISORY_LOCK = 7_004_201  # PostgreSQL's advisory lock key of the store's upgrade (any bigint of our own)

LOCK_WAIT = "60s"  # a PostgreSQL upgrade waits this long for another process's (the app's timeouts are seconds)


class NewerStore(StoreUnavailable):
    """The store was upgraded by a newer version of the app: this one refuses it."""

    def __init__(self, store_revision: str, head: str):
        super().__init__(f"the class store's schema is at revision {store_revision}, which this version of the app "
                         f"does not know (its newest is {head}): a newer version upgraded it. Run that version, or "
                         "point ATTN_EXPLORER_CLASS_DB at another store")
        self.store_revision, self.head = store_revision, head


def config(connection: sa.Connection | None = None) -> Config:
    """Alembic's configuration, made in code; ``connection`` is the one ``env.py`` migrates."""
    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    cfg.set_main_option("file_template", "%%(rev)s")  # versions/0002_add_a_hint.py: the id is the name
    cfg.attributes["connection"] = connection
    return cfg


@lru_cache(maxsize=1)
def _script() -> ScriptDirectory:
    """The revisions in ``versions/``: read once per process (they are this code's, not a store's)."""
    return ScriptDirectory.from_config(config())


def head() -> str:
    """This code's newest revision."""
    return _script().get_current_head()


def revisions() -> list[str]:
    """Every revision this code knows, base first."""
    return [s.revision for s in reversed(list(_script().walk_revisions()))]


def store_revision(conn: sa.Connection) -> str | None:
    """The revision a store is stamped with (None: none, an empty store or one from before the history)."""
    heads = MigrationContext.configure(conn).get_current_heads()
    return heads[0] if heads else None


@contextmanager
def upgrade_turn(engine: sa.Engine):
    """A transaction that holds the store's upgrade lock: one process upgrades at a time, and
    the next one reads the revision the first has committed."""
    if engine.dialect.name == "sqlite":
        # engine_for's "begin" listener issues BEGIN IMMEDIATE for a write: SQLite's write lock
        # before the first read, waited for up to its busy timeout (15 s)
        with engine.connect().execution_options(write=True) as conn, conn.begin():
            yield conn
        return
    with engine.connect() as conn, conn.begin():
        if engine.dialect.name == "postgresql":
            # the app's connections give up after a second or two (settings.pg_options); an upgrade
            # waits for another process's, and reads its revisions from disk inside the transaction
            conn.execute(sa.text(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'"))
            conn.execute(sa.text(f"SET LOCAL statement_timeout = '{LOCK_WAIT}'"))
            conn.execute(sa.text(f"SET LOCAL idle_in_transaction_session_timeout = '{LOCK_WAIT}'"))
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK})
        yield conn


def upgrade(engine: sa.Engine, target: str = "head") -> str:
    """Bring the store to ``target`` (this code's head) under the upgrade lock and return the
    revision it is at; :class:`NewerStore` when it is stamped with a revision this code lacks."""
    with upgrade_turn(engine) as conn:
        current = store_revision(conn)
        if current is not None and current not in revisions():
            raise NewerStore(current, head())
        wanted = head() if target == "head" else target
        if current != wanted:
            command.upgrade(config(conn), wanted)
        return wanted
