"""Create or upgrade the control plane's database with the Alembic migrations shipped in the
package (``tailbound/service/migrations``): what ``tailbound serve`` runs before it listens, so a
fresh database (an empty SQLite file or PostgreSQL database) is ready within a second.

>>> import tempfile, pathlib
>>> url = f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'tb.db'}"
>>> upgrade(url), upgrade(url)  # idempotent
('0004', '0004')
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext

from tailbound.service.db import make_engine

#: Where the migrations live, inside the installed package.
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def config() -> Config:
    """Alembic's configuration for the shipped migrations (no ``alembic.ini`` needed)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def upgrade(url: str, revision: str = "head") -> str:
    """Upgrade the database at ``url`` to ``revision`` (default the newest); its revision
    after."""
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            cfg = config()
            cfg.attributes["connection"] = connection
            command.upgrade(cfg, revision)
        with engine.connect() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
    assert current is not None
    return current
