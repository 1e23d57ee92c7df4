"""The control plane's first schema: clusters, plans, tenants, decisions, traces, tokens,
measurements, agents (``tailbound.service.db`` describes each).

Revision ID: 0001
Revises:
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _when(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "clusters",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("policy", sa.String(100), nullable=False),
        sa.Column("document", sa.JSON, nullable=False),
        sa.Column("profile", sa.JSON, nullable=True),
        sa.Column("options", sa.JSON, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        _when("created_at"),
    )
    op.create_table(
        "traces",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("format", sa.String(20), nullable=False),
        sa.Column("requests", sa.BigInteger, nullable=False),
        _when("created_at"),
    )
    op.create_table(
        "plans",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("cluster_id", sa.Integer, sa.ForeignKey("clusters.id"), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("event", sa.String(10), nullable=False),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("document", sa.Text, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        _when("created_at"),
        sa.UniqueConstraint("cluster_id", "version", name="uq_plans_cluster_version"),
    )
    op.create_index("ix_plans_cluster_id", "plans", ["cluster_id"])
    op.create_table(
        "tenants",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("cluster_id", sa.Integer, sa.ForeignKey("clusters.id"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("document", sa.JSON, nullable=False),
        sa.Column("trace_sha256", sa.String(64), sa.ForeignKey("traces.sha256"), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        _when("created_at"),
        sa.UniqueConstraint("cluster_id", "name", name="uq_tenants_cluster_name"),
    )
    op.create_index("ix_tenants_cluster_id", "tenants", ["cluster_id"])
    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("cluster_id", sa.Integer, sa.ForeignKey("clusters.id"), nullable=False),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("event", sa.String(10), nullable=False),
        sa.Column("admitted", sa.Boolean, nullable=False),
        sa.Column("reasons", sa.JSON, nullable=False),
        sa.Column("based_on", sa.Integer, nullable=False),
        sa.Column("published", sa.Integer, nullable=True),
        sa.Column("seconds", sa.Float, nullable=False),
        _when("created_at"),
    )
    op.create_index("ix_decisions_cluster_id", "decisions", ["cluster_id"])
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("scope", sa.String(20), nullable=False),
        sa.Column("host", sa.String(200), nullable=True),
        _when("created_at"),
        _when("revoked_at", nullable=True),
    )
    op.create_table(
        "measurements",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("cluster_id", sa.Integer, sa.ForeignKey("clusters.id"), nullable=False),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("plan_version", sa.Integer, nullable=False),
        sa.Column("window_s", sa.Float, nullable=False),
        sa.Column("count", sa.BigInteger, nullable=False),
        sa.Column("percentiles", sa.JSON, nullable=False),
        sa.Column("max_s", sa.Float, nullable=True),
        sa.Column("beyond_buckets", sa.BigInteger, nullable=False),
        _when("created_at"),
    )
    op.create_index("ix_measurements_cluster_id", "measurements", ["cluster_id"])
    op.create_table(
        "agents",
        sa.Column("host", sa.String(200), primary_key=True),
        sa.Column("cluster", sa.String(200), nullable=False),
        _when("last_contact"),
        sa.Column("version", sa.Integer, nullable=True),
    )


def downgrade() -> None:
    for table in (
        "agents",
        "measurements",
        "tokens",
        "decisions",
        "tenants",
        "plans",
        "traces",
        "clusters",
    ):
        op.drop_table(table)
