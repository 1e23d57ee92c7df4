"""Hosts' addresses in the cluster (``clusters.addresses``: host → IPv4 or IPv6, what ``enforce
net`` needs beside tenants' ports, which the tenant documents hold) and tenants given by a
characterisation instead of a trace (``tenants.trace_sha256`` nullable).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.add_column(sa.Column("addresses", sa.JSON, nullable=True))
    with op.batch_alter_table("tenants") as batch:
        batch.alter_column("trace_sha256", existing_type=sa.String(64), nullable=True)


def downgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.alter_column("trace_sha256", existing_type=sa.String(64), nullable=False)
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("addresses")
