"""The control plane's state: SQLAlchemy 2 tables and the engine (docs/service.md, "Database").

One schema for SQLite (the default: one file, WAL journal, ``synchronous=FULL``, a 30 s busy
timeout so that writers queue instead of failing) and PostgreSQL (psycopg 3, by URL). The schema
is created and upgraded only by the Alembic migrations shipped in
``tailbound/service/migrations`` (:mod:`tailbound.service.migrate`); these classes describe it
for queries, and a test checks that the migrated schema and these classes agree.

Tables:

- ``clusters``: a cluster (its cluster-file document, hosts' addresses, device profile, policy,
  options) and the **version of its current Plan** (0: no Plan yet), the counter every
  admission compares and sets (:mod:`tailbound.service.admission`);
- ``plans``: each published Plan version of a cluster, immutable, with the event that made it
  (``admit`` or ``depart`` of one tenant) and the SHA-256 of its text; ``(cluster_id, version)``
  is unique; its text is stored as its skeleton's fields and a list of entries, in full every
  64 versions and as edits against the previous version otherwise
  (:mod:`tailbound.service.plan_store`);
- ``plan_entries``: each distinct tenant entry or skeleton field of a Plan text, once, by its
  SHA-256;
- ``tenants``: the tenants registered on a cluster (their tenants-file entry) and their state
  (``registered``, ``admitted``, ``rejected``, ``departed``);
- ``decisions``: every admission and departure decided, with its reasons and, when it published
  one, the Plan version;
- ``traces``: uploaded traces by content hash;
- ``tokens``: API tokens (SHA-256 of the token only) and their scopes;
- ``measurements``: per-tenant latency summaries posted by agents;
- ``agents``: each agent's last contact and the Plan version it last fetched;
- ``engine_snapshots``: each Plan version's decision state (the engine a server decides the next
  event with), in full every 64 versions and as the change from the previous version otherwise
  (:mod:`tailbound.service.engine_snapshots`), so a restarted server does not replay the history.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
)
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

#: Seconds a SQLite writer waits for the database lock before failing.
SQLITE_BUSY_TIMEOUT_S = 30.0


def now() -> datetime:
    """The current time, UTC."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class ClusterRow(Base):
    __tablename__ = "clusters"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    policy: Mapped[str] = mapped_column(String(100))
    document: Mapped[dict[str, Any]] = mapped_column(JSON)
    profile: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    options: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: Host name → IPv4 or IPv6 address (``enforce net``'s hosts); None: none given.
    addresses: Mapped[dict[str, str] | None] = mapped_column(JSON, nullable=True)
    version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class PlanRow(Base):
    __tablename__ = "plans"
    __table_args__ = (UniqueConstraint("cluster_id", "version", name="uq_plans_cluster_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    event: Mapped[str] = mapped_column(String(10))  # admit | depart
    tenant: Mapped[str] = mapped_column(String(200))
    #: The hashes (a JSON list) of the top-level fields of the Plan's text with its tenants'
    #: entries replaced by a marker (plan_store.skeleton_parts, MARKER).
    skeleton: Mapped[str] = mapped_column(Text)
    #: Its entries' hashes: ``{"full": [...]}`` or ``{"edits": [...]}`` (plan_store).
    entries: Mapped[dict[str, Any]] = mapped_column(JSON)
    sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class PlanEntryRow(Base):
    __tablename__ = "plan_entries"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    text: Mapped[str] = mapped_column(Text)


class EngineSnapshotRow(Base):
    __tablename__ = "engine_snapshots"
    __table_args__ = (
        UniqueConstraint("cluster_id", "version", name="uq_engine_snapshots_cluster_version"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    #: ``full`` (the whole state) or ``delta`` (the change from version ``version - 1``'s).
    kind: Mapped[str] = mapped_column(String(10))
    #: The state's JSON text (engine_snapshots), and its SHA-256 (a damaged row is detected).
    state: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))


class TenantRow(Base):
    __tablename__ = "tenants"
    __table_args__ = (UniqueConstraint("cluster_id", "name", name="uq_tenants_cluster_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    document: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: The uploaded trace; None for a tenant given by its characterisation (no trace).
    trace_sha256: Mapped[str | None] = mapped_column(ForeignKey("traces.sha256"), nullable=True)
    state: Mapped[str] = mapped_column(String(20), default="registered")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class DecisionRow(Base):
    __tablename__ = "decisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id"), index=True)
    tenant: Mapped[str] = mapped_column(String(200))
    event: Mapped[str] = mapped_column(String(10))
    admitted: Mapped[bool] = mapped_column(Boolean)
    reasons: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: The Plan version it was decided against, and the one it published (None: none).
    based_on: Mapped[int] = mapped_column(Integer)
    published: Mapped[int | None] = mapped_column(Integer, nullable=True)
    seconds: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class TraceRow(Base):
    __tablename__ = "traces"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    format: Mapped[str] = mapped_column(String(20))
    requests: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class TokenRow(Base):
    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    scope: Mapped[str] = mapped_column(String(20))
    host: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class MeasurementRow(Base):
    __tablename__ = "measurements"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id"), index=True)
    tenant: Mapped[str] = mapped_column(String(200))
    host: Mapped[str] = mapped_column(String(200))
    plan_version: Mapped[int] = mapped_column(Integer)
    window_s: Mapped[float] = mapped_column(Float)
    count: Mapped[int] = mapped_column(BigInteger)
    percentiles: Mapped[dict[str, Any]] = mapped_column(JSON)
    max_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    beyond_buckets: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class AgentRow(Base):
    __tablename__ = "agents"

    host: Mapped[str] = mapped_column(String(200), primary_key=True)
    cluster: Mapped[str] = mapped_column(String(200))
    last_contact: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    version: Mapped[int | None] = mapped_column(Integer, nullable=True)


def make_engine(url: str) -> Engine:
    """The engine for ``url`` (an SQLAlchemy URL: ``sqlite:////abs/path/tb.db`` or
    ``postgresql+psycopg://user@/db?host=/run/dir``); a plain ``postgresql://`` URL uses psycopg 3.

    SQLite connections run in WAL mode with ``synchronous=FULL`` (a committed admission survives
    a power cut, not only a killed process), foreign keys on, and a busy timeout of
    :data:`SQLITE_BUSY_TIMEOUT_S`."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).parent.mkdir(parents=True, exist_ok=True)  # a fresh file's folder
        engine = create_engine(
            url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
        )

        @event.listens_for(engine, "connect")
        def _pragmas(connection: Any, _record: Any) -> None:
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
            cursor.close()

        return engine
    return create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)


def sessions(engine: Engine) -> sessionmaker[Any]:
    """The session factory over ``engine`` (objects stay readable after commit)."""
    return sessionmaker(engine, expire_on_commit=False)
