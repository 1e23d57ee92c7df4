"""Admissions and departures as serialisable decisions (docs/service.md, "Concurrency").

**The choice: optimistic concurrency on the Plan version, behind a per-cluster lock.**
A decision is computed against the cluster's current Plan version ``v`` (the engine of
:mod:`tailbound.service.engines` rebuilt to ``v``), outside any database transaction. It is
then committed in one transaction whose first statement is the compare-and-set

    UPDATE clusters SET version = v + 1 WHERE id = :cluster AND version = v

followed by the new Plan row (``(cluster_id, version)`` is unique as well), the tenant's new
state and the decision's record. When the update changes no row, another writer published a
version first: the transaction is rolled back, the engine is brought to the new version and the
decision recomputed (at most :data:`MAX_ATTEMPTS` times). So every published version is decided
against its predecessor, exactly as the serial order of the versions would decide it: **no two
admissions ever both count on the same capacity**, on SQLite (writers serialised by the
database lock) as on PostgreSQL (the second ``UPDATE`` waits for the first to commit, then
re-reads the row and matches nothing, under the default READ COMMITTED).

A rejection changes no state: it is recorded against the version it was decided on (its place
in the serial order), without the compare-and-set.

Within one server process a lock per cluster serialises the decisions, so concurrent requests
do not compute the same version's decision in vain and retry: with one server the retry never
happens and throughput is one decision per decision time; several servers sharing one
PostgreSQL database stay correct through the compare-and-set, and pay a recomputation per lost
race. The lock is held while computing; requests for other clusters proceed in parallel.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from tailbound.errors import ConfigError
from tailbound.model import Tenant, cluster_from_json, tenant_from_json
from tailbound.service import engine_snapshots, plan_store
from tailbound.service.db import ClusterRow, DecisionRow, PlanRow, TenantRow
from tailbound.service.engine_snapshots import SnapshotWriter
from tailbound.service.engines import Context, Engine, Outcome, check_options, new_engine
from tailbound.service.metrics import Metrics
from tailbound.service.plans import PlanWriter, sha256
from tailbound.service.problems import Problem

log = logging.getLogger("tailbound.service.admission")

#: Times a decision is recomputed after losing the race for the next version.
MAX_ATTEMPTS = 50


@dataclass(frozen=True)
class Result:
    """A committed decision: the event, the tenant, the outcome, the version it was decided
    against and the one it published (None for a rejection), and its latency (s)."""

    cluster: str
    event: str
    tenant: str
    admitted: bool
    reasons: dict[str, Any]
    based_on: int
    published: int | None
    seconds: float
    attempts: int

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def context_of(row: ClusterRow, profiles: Path) -> Context:
    """The engine context of a cluster row (its profile kept as a file in ``profiles``, where the
    SNC policies and the Plan's inputs read it)."""
    from tailbound.profiles.tokens import PROFILE_TYPES

    cluster = cluster_from_json(row.document, f"cluster {row.name}")
    profile = path = None
    if row.profile is not None:
        text = plan_json(row.profile)
        path = profiles / f"{sha256(text)}.json"
        if not path.exists():
            profiles.mkdir(parents=True, exist_ok=True)
            from tailbound.atomic import write_text_atomic

            write_text_atomic(path, text)
        profile = PROFILE_TYPES[row.profile["type"]].from_json(row.profile, path=str(path))
    options = check_options(row.policy, row.options)
    return Context(row.name, row.policy, cluster, profile, path, options)


def plan_json(document: Any) -> str:
    import json

    return json.dumps(document, indent=1, sort_keys=True, allow_nan=False) + "\n"


#: A tenant document's keys that are the service's, not a tenants-file entry's: where the
#: tenant's server listens (``enforce net``'s ports), kept for the hosts' parts of the Plans.
SERVICE_KEYS = ("port",)


def tenant_entry(document: dict[str, Any]) -> dict[str, Any]:
    """The tenants-file entry of a tenant document (without :data:`SERVICE_KEYS`)."""
    return {k: v for k, v in document.items() if k not in SERVICE_KEYS}


def tenant_of(row: TenantRow, traces: Path, network: Any = None) -> Tenant:
    """The :class:`Tenant` of a registered tenant: its trace in the store ``traces``, or for a
    tenant given by its characterisation the file keeping that (:func:`characterisation_path`),
    which the engines never read as a trace (:class:`Context.characterisations`)."""
    entry = tenant_entry(row.document)
    if "characterisation" in entry:
        entry = {k: v for k, v in entry.items() if k != "characterisation"}
        path = characterisation_path(traces, row.document["characterisation"])
        return tenant_from_json(
            {**entry, "trace": path.name}, source=f"tenant {row.name}", traces=path.parent
        )
    return tenant_from_json(entry, source=f"tenant {row.name}", traces=traces, network=network)


def characterisation_path(traces: Path, characterisation: dict[str, Any]) -> Path:
    """Where a characterisation is kept beside the trace store ``traces``: ``characterisations/
    <sha256 of its canonical JSON>.json``, written on first use (content-addressed, immutable)."""
    text = plan_json(characterisation)
    path = traces.parent / "characterisations" / f"{sha256(text)}.json"
    if not path.exists():
        from tailbound.atomic import write_text_atomic

        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    return path


class Decider:
    """Decides admissions and departures for every cluster of one database (module docstring):
    keeps each cluster's engine at its latest known version, and a lock per cluster."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        traces: Path,
        profiles: Path,
        metrics: Metrics,
    ) -> None:
        self.sessions, self.traces, self.profiles, self.metrics = (
            sessions,
            traces,
            profiles,
            metrics,
        )
        self._engines: dict[int, tuple[int, Engine]] = {}
        self._writers: dict[int, PlanWriter] = {}
        #: Per cluster, the last version this server published and its entries' hashes (the
        #: base of the next version's edits: plan_store).
        self._lists: dict[int, tuple[int, list[str]]] = {}
        #: Per cluster, the skeleton fields' hashes of a version this server published (stored).
        self._fields: dict[int, set[str]] = {}
        self._contexts: dict[int, Context] = {}
        #: Per cluster, the writer of its engine snapshots (engine_snapshots).
        self._snapshots: dict[int, SnapshotWriter] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()

    def lock(self, cluster_id: int) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(cluster_id, threading.Lock())

    def context(self, row: ClusterRow) -> Context:
        if row.id not in self._contexts:
            self._contexts[row.id] = context_of(row, self.profiles)
        return self._contexts[row.id]

    def tenant(self, row: ClusterRow, trow: TenantRow) -> Tenant:
        """The :class:`Tenant` of ``trow``, its characterisation (if given instead of a trace)
        made known to the cluster's engines."""
        given = trow.document.get("characterisation")
        if given is not None:
            self.context(row).characterisations[trow.name] = given
        return tenant_of(trow, self.traces, self.context(row).rpc_network)

    def engine(self, session: Session, row: ClusterRow) -> tuple[int, Engine]:
        """The cluster's engine at its current version ``row.version``: the cached one, or the
        latest stored snapshot's (:mod:`~tailbound.service.engine_snapshots`), brought forward
        by replaying the versions published since (by this or another server)."""
        cached = self._engines.get(row.id)
        rows: dict[str, TenantRow] = {}

        def tenants() -> dict[str, TenantRow]:
            if not rows:
                mine = select(TenantRow).where(TenantRow.cluster_id == row.id)
                rows.update((t.name, t) for t in session.scalars(mine))
            return rows

        if cached is None or cached[0] > row.version:
            have, engine = self._load(session, row, tenants)
        else:
            have, engine = cached
        if have < row.version:
            events = session.execute(
                select(PlanRow.version, PlanRow.event, PlanRow.tenant)
                .where(PlanRow.cluster_id == row.id, PlanRow.version > have)
                .where(PlanRow.version <= row.version)
                .order_by(PlanRow.version)
            ).all()
            for version, event, name in events:
                if version != have + 1:
                    raise RuntimeError(f"cluster {row.name}: Plan version {have + 1} is missing")
                if event == "admit":
                    outcome = engine.admit(self.tenant(row, tenants()[name]), plan=False)
                    if not outcome.admitted:
                        raise RuntimeError(
                            f"cluster {row.name}: replaying version {version} rejects {name}"
                        )
                else:
                    outcome = engine.depart(name, plan=False)
                engine, have = outcome.after, version
            self._engines[row.id] = (have, engine)
            # this server did not write the snapshots of what it replayed: the next is full
            self._snapshots.setdefault(row.id, SnapshotWriter()).base = None
        return have, engine

    def _load(
        self, session: Session, row: ClusterRow, tenants: Callable[[], dict[str, TenantRow]]
    ) -> tuple[int, Engine]:
        """The engine of the latest stored snapshot at or before ``row.version`` (a new, empty
        engine if none loads; why is logged)."""
        context = self.context(row)
        start = time.perf_counter()
        loaded = engine_snapshots.load(
            session,
            row.id,
            row.version,
            lambda state: engine_snapshots.restore(
                context,
                state,
                lambda name: self.tenant(row, tenants()[name]),
                lambda hashes: plan_store.entry_texts(session, hashes),
            ),
        )
        fields = {
            "cluster": row.name,
            "version": row.version,
            "loaded": loaded.version,
            "seconds": round(time.perf_counter() - start, 4),
        }
        if loaded.problems and loaded.version < row.version:
            log.warning(
                "engine snapshot: replaying from version %d to %d (%s)",
                loaded.version,
                row.version,
                "; ".join(loaded.problems),
                extra={**fields, "problems": loaded.problems},
            )
        else:
            log.info("engine snapshot loaded", extra=fields)
        if loaded.engine is None:
            return 0, new_engine(context)
        self._snapshots[row.id] = SnapshotWriter(base=loaded.version)
        return loaded.version, loaded.engine

    # -------------------------------------------------------------------- decisions
    def admit(self, cluster: str, tenant: str) -> Result:
        """Decide the admission of registered tenant ``tenant`` on ``cluster`` (404 for an
        unknown cluster or tenant, 409 for one already admitted)."""

        def compute(engine: Engine, crow: ClusterRow, row: TenantRow) -> Outcome:
            if row.state == "admitted":
                raise Problem(409, f"tenant {tenant!r} is admitted already", "tenant")
            return engine.admit(self.tenant(crow, row))

        return self._decide(cluster, tenant, "admit", compute)

    def depart(self, cluster: str, tenant: str) -> Result:
        """The departure of admitted tenant ``tenant`` from ``cluster`` (409 if not admitted)."""

        def compute(engine: Engine, crow: ClusterRow, row: TenantRow) -> Outcome:
            if row.state != "admitted":
                raise Problem(
                    409, f"tenant {tenant!r} is not admitted (it is {row.state})", "tenant"
                )
            return engine.depart(tenant)

        return self._decide(cluster, tenant, "depart", compute)

    def _decide(
        self,
        cluster: str,
        tenant: str,
        event: str,
        compute: Callable[[Engine, ClusterRow, TenantRow], Outcome],
    ) -> Result:
        start = time.perf_counter()
        with self.sessions() as session:
            row = find_cluster(session, cluster)
        with self.lock(row.id):
            for attempt in range(1, MAX_ATTEMPTS + 1):
                with self.sessions() as session:
                    row = find_cluster(session, cluster)
                    trow = find_tenant(session, row, tenant)
                    version, engine = self.engine(session, row)
                try:
                    outcome = compute(engine, row, trow)
                except ConfigError as e:
                    raise Problem(
                        422, e.message, f"tenant.{e.field}" if e.field else "tenant"
                    ) from None
                seconds = time.perf_counter() - start
                published = self._commit(row, trow, event, version, outcome, seconds, engine)
                if published is False:
                    self.metrics.retries.labels(cluster).inc()
                    continue
                if outcome.admitted:
                    self._engines[row.id] = (version + 1, outcome.after)
                    self.metrics.plan_version.labels(cluster).set(version + 1)
                seconds = time.perf_counter() - start
                label = (
                    ("admitted" if outcome.admitted else "rejected")
                    if event == "admit"
                    else "departed"
                )
                self.metrics.decisions.labels(cluster, event, label).inc()
                self.metrics.latency.labels(event).observe(seconds)
                return Result(
                    cluster,
                    event,
                    tenant,
                    outcome.admitted,
                    outcome.reasons,
                    version,
                    version + 1 if outcome.admitted else None,
                    seconds,
                    attempt,
                )
        raise Problem(
            503,
            f"cluster {cluster}: {MAX_ATTEMPTS} attempts lost the race for the next Plan version",
        )

    def _commit(
        self,
        row: ClusterRow,
        trow: TenantRow,
        event: str,
        version: int,
        outcome: Outcome,
        seconds: float,
        before: Engine,
    ) -> bool:
        """Commit ``outcome`` decided against ``version`` (whose engine is ``before``) with the
        new version's engine snapshot; False when another writer published a version first
        (nothing written)."""
        snapshot = None
        with self.sessions.begin() as session:
            if outcome.admitted:
                moved = session.execute(
                    update(ClusterRow)
                    .where(ClusterRow.id == row.id, ClusterRow.version == version)
                    .values(version=version + 1)
                )
                if moved.rowcount != 1:  # type: ignore[attr-defined]
                    session.rollback()
                    return False
                assert outcome.plan is not None
                plan = dataclasses.replace(
                    outcome.plan, meta={**outcome.plan.meta, "version": version + 1}
                )
                writer = self._writers.setdefault(row.id, PlanWriter())
                skeleton, texts = writer.parts(plan)
                hashes = writer.hashes  # each entry hashed once (PlanWriter)
                last = self._lists.get(row.id)
                previous = last[1] if last is not None and last[0] == version else None
                if previous is None and (version + 1 - 1) % plan_store.SNAPSHOT_EVERY != 0:
                    previous = plan_store.load_hashes(session, row.id, version)
                known = set(previous or ())
                stored, fields = plan_store.stored_skeleton(plan_store.skeleton_parts(skeleton))
                plan_store.store_entries(
                    session,
                    {h: t for h, t in zip(hashes, texts, strict=True) if h not in known}
                    | {h: t for h, t in fields.items() if h not in self._fields.get(row.id, ())},
                )
                text = plan_store.join(skeleton, texts)
                session.add(
                    PlanRow(
                        cluster_id=row.id,
                        version=version + 1,
                        event=event,
                        tenant=trow.name,
                        skeleton=stored,
                        entries=plan_store.record(version + 1, previous, hashes),
                        sha256=sha256(text),
                    )
                )
                snapshot = self._snapshot(row, version + 1, before, outcome.after, event, trow.name)
                if snapshot is not None:
                    engine_snapshots.store(session, row.id, snapshot)
                state = "admitted" if event == "admit" else "departed"
            else:
                state = "rejected"
            session.execute(update(TenantRow).where(TenantRow.id == trow.id).values(state=state))
            session.add(
                DecisionRow(
                    cluster_id=row.id,
                    tenant=trow.name,
                    event=event,
                    admitted=outcome.admitted,
                    reasons=outcome.reasons,
                    based_on=version,
                    published=version + 1 if outcome.admitted else None,
                    seconds=seconds,
                )
            )
        if outcome.admitted:
            self._lists[row.id] = (version + 1, hashes)
            self._fields[row.id] = set(fields)
            if snapshot is not None:
                self._snapshots[row.id].written(snapshot)
        return True

    def _snapshot(
        self, row: ClusterRow, version: int, before: Engine, after: Engine, event: str, name: str
    ) -> engine_snapshots.Snapshot | None:
        """Version ``version``'s engine snapshot; None (logged) if it cannot be made: the
        decision still commits, and a restart replays from the previous snapshot."""
        writer = self._snapshots.setdefault(row.id, SnapshotWriter())
        try:
            return writer.snapshot(version, before, after, event, name)
        except Exception:  # a snapshot is a shortcut: never the reason a decision fails
            log.exception("engine snapshot of %s version %d not written", row.name, version)
            writer.base = None
            return None


def find_cluster(session: Session, name: str) -> ClusterRow:
    """The cluster called ``name``; 404 naming it otherwise."""
    row = session.scalar(select(ClusterRow).where(ClusterRow.name == name))
    if row is None:
        raise Problem(404, f"no cluster {name!r}", "cluster")
    return row


def find_tenant(session: Session, cluster: ClusterRow, name: str) -> TenantRow:
    """The tenant called ``name`` registered on ``cluster``; 404 naming it otherwise."""
    row = session.scalar(
        select(TenantRow).where(TenantRow.cluster_id == cluster.id, TenantRow.name == name)
    )
    if row is None:
        raise Problem(404, f"no tenant {name!r} on cluster {cluster.name!r}", "tenant")
    return row
