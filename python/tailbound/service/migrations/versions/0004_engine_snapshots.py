"""Engine snapshots (``engine_snapshots``): each published Plan version's decision state — the
placer's servers, tenants and limits, or the admitted tenants in order — in full every
:data:`~tailbound.service.engine_snapshots.FULL_EVERY` versions and as the change from the
previous version otherwise, written in the version's own transaction, so that a server builds a
cluster's engine from the latest snapshot instead of replaying every version
(:mod:`tailbound.service.engine_snapshots`; docs/service.md, "Restart cost"). Versions published
before this migration have none: their clusters are replayed once, as before, until a full
snapshot is written (the first version a server publishes after it).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "engine_snapshots",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("cluster_id", sa.Integer, sa.ForeignKey("clusters.id"), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.UniqueConstraint("cluster_id", "version", name="uq_engine_snapshots_cluster_version"),
    )
    op.create_index("ix_engine_snapshots_cluster_id", "engine_snapshots", ["cluster_id"])


def downgrade() -> None:
    op.drop_index("ix_engine_snapshots_cluster_id", table_name="engine_snapshots")
    op.drop_table("engine_snapshots")
