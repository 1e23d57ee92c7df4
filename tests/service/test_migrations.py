"""The shipped Alembic migrations build exactly the schema ``tailbound.service.db`` describes
(autogenerate finds no difference), on SQLite and PostgreSQL, and ``serve --migrate-only``
creates a fresh database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from tests.service.harness import pg_database

from tailbound.service.db import Base, make_engine
from tailbound.service.migrate import upgrade


def differences(url: str) -> list[object]:
    assert upgrade(url) == "0002"
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return list(compare_metadata(MigrationContext.configure(connection), Base.metadata))
    finally:
        engine.dispose()


def test_migrations_match_the_models_sqlite(tmp_path: Path) -> None:
    assert differences(f"sqlite:///{tmp_path / 'tb.db'}") == []


def test_migrations_match_the_models_postgresql(postgres: str) -> None:
    assert differences(pg_database(postgres)) == []


def test_serve_migrate_only(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'new.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "tailbound.cli.main", "serve", "--db", db, "--migrate-only"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "database at revision 0002"
    assert (tmp_path / "new.db").exists()
