"""The base revision: the class store's nine tables as ``metadata.create_all`` made them before
the schema had a history. A store from that time already has them: only the missing ones are made
(with their indexes), and the store is stamped, its rows untouched.

Revision ID: 0001_base
Revises:
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_base"
down_revision = None
branch_labels = None
depends_on = None

CODE = 6  # schema.CODE_LENGTH as it was: a revision keeps its own numbers, whatever schema.py says later


def _tables() -> dict[str, tuple]:
    """Each table's columns and constraints, and its indexes as (name, columns)."""
    return {
        "classes": ((sa.Column("code", sa.String(CODE), primary_key=True),
                     sa.Column("opened_at", sa.Float, nullable=False),
                     sa.Column("expires_at", sa.Float, nullable=False),
                     sa.Column("closed", sa.Boolean, nullable=False),
                     sa.Column("follow_version", sa.Integer, nullable=False),
                     sa.Column("follow_page", sa.String(64)),
                     sa.Column("follow_params", sa.Text),
                     sa.Column("revealed", sa.String(64))), ()),
        "answers": ((sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                     sa.Column("class_code", sa.String(CODE), nullable=False),
                     sa.Column("exercise", sa.String(64), nullable=False),
                     sa.Column("session", sa.String(32), nullable=False),
                     sa.Column("attempt", sa.Integer, nullable=False),
                     sa.Column("answer", sa.Text, nullable=False),
                     sa.Column("correct", sa.Boolean),
                     sa.Column("answered_at", sa.Float, nullable=False),
                     sa.UniqueConstraint("class_code", "exercise", "session", "attempt",
                                         name="one_answer_per_attempt")),
                    (("ix_answers_class_code", ["class_code"]),)),
        "meta": ((sa.Column("name", sa.String(32), primary_key=True),
                  sa.Column("value", sa.Text, nullable=False)), ()),
        "roster": ((sa.Column("class_code", sa.String(CODE), primary_key=True),
                    sa.Column("session", sa.String(32), primary_key=True),
                    sa.Column("nickname", sa.String(40), nullable=False),
                    sa.Column("joined_at", sa.Float, nullable=False),
                    sa.Column("address", sa.String(32), nullable=False),
                    sa.Column("removed", sa.Boolean, nullable=False),
                    sa.UniqueConstraint("class_code", "nickname", name="one_nickname_per_class")),
                   (("roster_joins_by_address", ["class_code", "address", "joined_at"]),)),
        "class_exercises": ((sa.Column("class_code", sa.String(CODE), primary_key=True),
                             sa.Column("exercise", sa.String(64), primary_key=True),
                             sa.Column("added_at", sa.Float, nullable=False)), ()),
        "class_admission": ((sa.Column("class_code", sa.String(CODE), primary_key=True),
                             sa.Column("seats", sa.Integer, nullable=False),
                             sa.Column("approve", sa.Boolean, nullable=False),
                             sa.Column("joins_until", sa.Float)), ()),
        "join_requests": ((sa.Column("class_code", sa.String(CODE), primary_key=True),
                           sa.Column("session", sa.String(32), primary_key=True),
                           sa.Column("nickname", sa.String(40), nullable=False),
                           sa.Column("asked_at", sa.Float, nullable=False),
                           sa.Column("address", sa.String(32), nullable=False)), ()),
        "class_locks": ((sa.Column("class_code", sa.String(CODE), primary_key=True),
                         sa.Column("locked_at", sa.Float, nullable=False)), ()),
        "teacher_sessions": ((sa.Column("token_hash", sa.String(64), primary_key=True),
                              sa.Column("class_code", sa.String(CODE), nullable=False),
                              sa.Column("key_tag", sa.String(16), nullable=False),
                              sa.Column("expires_at", sa.Float, nullable=False),
                              sa.Column("ticket_until", sa.Float, nullable=False),
                              sa.Column("redeemed", sa.Boolean, nullable=False),
                              sa.Column("revoked", sa.Boolean, nullable=False)),
                             (("ix_teacher_sessions_class_code", ["class_code"]),)),
    }


def upgrade() -> None:
    present = set(sa.inspect(op.get_bind()).get_table_names())
    for name, (parts, indexes) in _tables().items():
        if name in present:
            continue  # a store from before the history: its table, rows and indexes stay as they are
        op.create_table(name, *parts)
        for index, columns in indexes:
            op.create_index(index, name, columns)


def downgrade() -> None:
    for name in reversed(list(_tables())):
        op.drop_table(name)
