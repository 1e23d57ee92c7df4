"""The shipped Alembic migrations build exactly the schema ``tailbound.service.db`` describes
(autogenerate finds no difference), on SQLite and PostgreSQL, and ``serve --migrate-only``
creates a fresh database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from tests.service.harness import pg_database

from tailbound.service.db import Base, make_engine
from tailbound.service.migrate import upgrade


def differences(url: str) -> list[object]:
    assert upgrade(url) == "0004"
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
    assert done.stdout.strip() == "database at revision 0004"
    assert (tmp_path / "new.db").exists()


def test_0003_converts_stored_plan_texts(tmp_path: Path) -> None:
    """A database made at 0002 with a few Plan versions (whole texts, one of them not in
    ``plan_text``'s form) upgrades to entries by hash and edits: each version loads byte for
    byte as it was stored; the downgrade writes the same texts back."""
    import sqlalchemy as sa
    from tests.enforce.net_plans import two_clients

    from tailbound.service import plan_store
    from tailbound.service.migrate import config
    from tailbound.service.plans import plan_text

    url = f"sqlite:///{tmp_path / 'old.db'}"
    assert upgrade(url, "0002") == "0002"
    base = json.loads(plan_text(two_clients()))
    texts = []
    for v in range(1, 70):
        doc = {**base, "tenants": base["tenants"][: 1 + v % 3], "meta": {"version": v}}
        texts.append(json.dumps(doc, separators=(",", ":")) + "\n")
    texts[4] = json.dumps({"tenants": [], "meta": {"version": 5}}, indent=1)  # kept whole
    engine = make_engine(url)
    try:
        with engine.begin() as c:
            c.execute(
                sa.text(
                    "INSERT INTO clusters (id, name, policy, document, options, version, "
                    "created_at) VALUES (1, 'c', 'knee', '{}', '{}', :n, '2026-11-26')"
                ),
                {"n": len(texts)},
            )
            for v, t in enumerate(texts, 1):
                c.execute(
                    sa.text(
                        "INSERT INTO plans (cluster_id, version, event, tenant, document, "
                        "sha256, created_at) VALUES (1, :v, 'admit', 'A', :t, :h, '2026-11-26')"
                    ),
                    {"v": v, "t": t, "h": plan_store.entry_hash(t)},
                )
    finally:
        engine.dispose()
    assert upgrade(url) == "0004"
    engine = make_engine(url)
    try:
        with engine.connect() as c:
            assert plan_store.version_texts(c, 1, 1, len(texts)) == dict(enumerate(texts, 1))
            assert plan_store.version_text(c, 1, 66) == texts[65]
            distinct = c.execute(sa.text("SELECT count(*) FROM plan_entries")).scalar()
            assert distinct > 3  # the 3 tenant entries and the skeletons' fields
        with engine.begin() as c:
            cfg = config()
            cfg.attributes["connection"] = c
            command.downgrade(cfg, "0002")
        with engine.connect() as c:
            back = c.execute(sa.text("SELECT document FROM plans ORDER BY version")).scalars()
            assert list(back) == texts
    finally:
        engine.dispose()
