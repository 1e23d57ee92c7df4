"""Alembic's environment for the control plane's database.

Run by Alembic only: :func:`tailbound.service.migrate.upgrade` passes an open connection in
``config.attributes["connection"]``; the ``alembic`` command (``-x url=...``) connects by URL.
Importing this module outside Alembic (doctest collection) does nothing.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from tailbound.service.db import Base, make_engine


def run() -> None:
    """Upgrade (online) on the connection given, or one made from ``-x url=URL``."""
    config = context.config
    connection = config.attributes.get("connection")
    if connection is None:
        url = context.get_x_argument(as_dictionary=True).get("url")
        if not url:
            raise SystemExit("tailbound migrations: pass -x url=SQLALCHEMY_URL")
        with make_engine(url).connect() as fresh:
            _migrate(fresh)
    else:
        _migrate(connection)


def _migrate(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=Base.metadata)
    with context.begin_transaction():
        context.run_migrations()


if getattr(context, "_proxy", None) is not None:  # run by Alembic
    run()
