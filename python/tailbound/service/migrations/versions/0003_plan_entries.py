"""Plan versions stored without quadratic growth: each distinct tenant entry once in
``plan_entries`` (by its SHA-256), and each version as its skeleton (``plans.skeleton``) and
its list of entry hashes (``plans.entries``: in full every 64 versions, as edits against the
previous version otherwise) instead of its whole text (``plans.document``, dropped).
:mod:`tailbound.service.plan_store` describes the layout and its cost. The upgrade converts
every stored version, checking that each reassembles byte for byte to its old text; the
downgrade writes the whole texts back.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from tailbound.service import plan_store

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_plans = sa.table(
    "plans",
    sa.column("id", sa.Integer),
    sa.column("cluster_id", sa.Integer),
    sa.column("version", sa.Integer),
    sa.column("document", sa.Text),
    sa.column("skeleton", sa.Text),
    sa.column("entries", sa.JSON),
)
_entries = sa.table("plan_entries", sa.column("sha256", sa.String), sa.column("text", sa.Text))


def upgrade() -> None:
    op.create_table(
        "plan_entries",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("text", sa.Text, nullable=False),
    )
    with op.batch_alter_table("plans") as batch:
        batch.add_column(sa.Column("skeleton", sa.Text, nullable=True))
        batch.add_column(sa.Column("entries", sa.JSON, nullable=True))
    bind = op.get_bind()
    clusters = [c for (c,) in bind.execute(sa.select(_plans.c.cluster_id).distinct())]
    stored: set[str] = set()
    for cluster in clusters:
        previous: list[str] | None = None
        rows = bind.execute(
            sa.select(_plans.c.id, _plans.c.version, _plans.c.document)
            .where(_plans.c.cluster_id == cluster)
            .order_by(_plans.c.version)
        ).all()
        for id_, version, document in rows:
            skeleton, texts = plan_store.split(document)
            hashes = [plan_store.entry_hash(t) for t in texts]
            kept, fields = plan_store.stored_skeleton(plan_store.skeleton_parts(skeleton))
            new = {
                h: t
                for h, t in [*zip(hashes, texts, strict=True), *fields.items()]
                if h not in stored
            }
            if new:
                bind.execute(
                    sa.insert(_entries), [{"sha256": h, "text": t} for h, t in new.items()]
                )
                stored |= set(new)
            entries: dict[str, Any] = plan_store.record(version, previous, hashes)
            assert plan_store.join(skeleton, texts) == document, f"plans.id {id_}"
            bind.execute(
                sa.update(_plans).where(_plans.c.id == id_).values(skeleton=kept, entries=entries)
            )
            previous = hashes
    with op.batch_alter_table("plans") as batch:
        batch.alter_column("skeleton", existing_type=sa.Text, nullable=False)
        batch.alter_column("entries", existing_type=sa.JSON, nullable=False)
        batch.drop_column("document")


def downgrade() -> None:
    with op.batch_alter_table("plans") as batch:
        batch.add_column(sa.Column("document", sa.Text, nullable=True))
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(_plans.c.id, _plans.c.cluster_id, _plans.c.version, _plans.c.skeleton)
    ).all()
    for id_, cluster, version, skeleton in rows:
        text = plan_store.load_text(bind, cluster, version, skeleton)
        bind.execute(sa.update(_plans).where(_plans.c.id == id_).values(document=text))
    with op.batch_alter_table("plans") as batch:
        batch.alter_column("document", existing_type=sa.Text, nullable=False)
        batch.drop_column("entries")
        batch.drop_column("skeleton")
    op.drop_table("plan_entries")
