"""Alembic's environment: run the revisions on the connection :func:`~server.class_store.migrations.upgrade`
holds (inside its lock and transaction), comparing with the store's tables for ``revision``."""
from __future__ import annotations

from alembic import context

from server.class_store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("the class store's migrations run on a connection: server.class_store.migrations.upgrade")
# render_as_batch: SQLite alters a table by copying it, which Alembic's batch mode writes for us
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True,
                  compare_type=True)
with context.begin_transaction():
    context.run_migrations()
