"""Engine snapshots: a cluster's decision state stored with each Plan version, so a server
builds the engine it decides the next event with from the latest snapshot instead of replaying
every published version (docs/service.md, "Restart cost").

**What a snapshot holds** — exactly what the next decision reads, nothing it recomputes:

- a **placement** engine (:class:`~tailbound.service.engines.PlacementEngine`): the admitted
  tenants in arrival order, each server's tenants in order with their device and the rate and
  bucket limits the policy gave them (``(n, 3)`` floats, written by ``repr`` so they read back
  bit for bit), and each tenant's r-b curves and largest requests (the placer's
  :class:`~tailbound.policies.workload.TenantCurves`, as the engine characterised them). The
  curves' texts are stored once each, by SHA-256, in ``plan_entries``
  (:func:`tailbound.service.plan_store.store_entries`: the same content-addressed store as the
  Plans' entries), the snapshot naming their hashes. The placer is rebuilt with
  :meth:`Placer.load <tailbound.policies.placement.Placer.load>` server by server: its rate
  sums and the cluster screen follow from the servers; the infeasibility certificates and
  remembered refusals start empty (both are exact shortcuts, tested not to change where a
  tenant lands: the first decisions after a restart solve a few more LPs);
- an **admission** engine of the ``snc`` or ``dnc`` family, PSLO or Aequitas: the admitted
  tenants in arrival order; and where the policy re-analyses only an event's components
  (SNC-Meister behind per-tenant layers: :mod:`tailbound.service.snc_local`), every admitted
  tenant's bound (:func:`bound_entry`: priority level and latencies, floats by ``repr``), so a
  restored engine re-analyses what the live one would, and its bounds, Plans and ETags are the
  live engine's to the bit (format 2). One limit: on :class:`~tailbound.snc.incremental.
  IncrementalSnc`'s memoised path (no admitted tenant with a device or a group) a flow's last
  bits depend on the batch that first computed it (the order of sums, the Rust search's warm
  starts: the process's history), and the memo is not stored, so a flow the live engine would
  find there is computed again in another batch (equal up to ~1e-16).
  Format 1 stored no bounds: its states still load, the bounds unknown, and the first event
  then re-analyses every tenant (equal to the component re-analysis up to the same limit);
- a **Nested QoS** engine (:data:`NESTED`): each admitted tenant's decision in arrival order
  (:func:`decision_entry`: its classes, the capacity its device needed when it arrived and
  its largest request's work), which its later arrivals' Lemma 3 checks read.

**When.** Version ``v``'s snapshot is written in ``v``'s own transaction (with its Plan row:
both or neither), in full when ``(v - 1) % FULL_EVERY == 0`` or when the writer does not know
that version ``v - 1``'s is stored (after a restart that replayed, or versions another server
published), otherwise as the change from ``v - 1``: the servers whose tenants or limits the
event changed (identity of the forked placer's server states: O(servers) pointer comparisons),
the event, the newcomer's curves (placement) or decision (Nested QoS), and the bounds the event
added or replaced (SNC-Meister, found by identity: O(tenants) pointer comparisons). Cost
measured in docs/service.md ("Restart cost").

**Loading** (:func:`load`): the latest full snapshot at or before the version wanted, then the
changes after it in order; every row's text is checked against its SHA-256. A missing, damaged
or unreadable row stops the chain at the version before it, a full snapshot that does not load
makes the loader try the previous full one; the caller replays the published versions after
the version loaded (:meth:`tailbound.service.admission.Decider.engine`) and the reason is logged.
Tested to decide, and publish, byte for byte what the replayed engine does
(``tests/service/test_engine_snapshots.py``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from tailbound.model import Tenant
from tailbound.policies.pslo import NAME as PSLO_NAME
from tailbound.service import plan_store
from tailbound.service.engines import (
    AdmissionEngine,
    AequitasEngine,
    Context,
    Engine,
    NestedEngine,
    PlacementEngine,
    PsloEngine,
)

log = logging.getLogger("tailbound.service.snapshots")

#: A version ``v`` with ``(v - 1) % FULL_EVERY == 0`` stores the whole state; the others the
#: change from the previous version. Loading reads at most this many rows.
FULL_EVERY = 64

#: The snapshot documents' format written: 2 adds an SNC-Meister engine's bounds and Nested
#: QoS engines' decisions (module docstring).
FORMAT = 2
#: The formats read (a document of another is refused, and its versions replayed): a format-1
#: admission state restores its tenants with their bounds unknown (format 1 stored none).
READS = (1, 2)

#: The engines whose state is their admitted tenants in arrival order (and what is rebuilt
#: from their cluster's context), by the ``engine`` name their snapshots carry.
_LISTS: dict[str, type] = {
    "admission": AdmissionEngine,
    PSLO_NAME: PsloEngine,
    "rpc": AequitasEngine,
}


def sha256(text: str) -> str:
    """The SHA-256 (hex) of ``text``'s UTF-8 bytes."""
    return hashlib.sha256(text.encode()).hexdigest()


#: The snapshot kind of a Nested QoS engine (its decisions: :func:`decision_entry`).
NESTED = "nested"


def kind_of(engine: Engine) -> str | None:
    """The snapshot kind of ``engine`` (``placement``, :data:`NESTED` or a key of the list
    engines); None for an engine without snapshots (one a family adds without them)."""
    if isinstance(engine, PlacementEngine):
        return "placement"
    if type(engine) is NestedEngine:
        return NESTED
    for name, cls in _LISTS.items():
        if type(engine) is cls:
            return name
    return None


# ------------------------------------------------------------------------------ curves
def curves_document(workload: Any) -> dict[str, Any]:
    """A :class:`~tailbound.policies.workload.TenantCurves`' curves and largest requests as
    JSON (its SLO is its tenant's): per stage the rates, buckets, mean rate and curve name."""
    stages = {
        str(stage): {
            "rates": curve.rates.tolist(),
            "buckets": curve.buckets.tolist(),
            "mean_rate": float(curve.mean_rate),
            "name": curve.name,
        }
        for stage, curve in workload.curves.items()
    }
    return {"name": workload.name, "stages": stages, "largest": list(workload.largest)}


def curves_of(document: dict[str, Any], tenant: Tenant) -> Any:
    """The :class:`~tailbound.policies.workload.TenantCurves` of :func:`curves_document`'s
    ``document`` for ``tenant`` (its SLO)."""
    from tailbound.characterize import RbCurve
    from tailbound.policies.workload import TenantCurves
    from tailbound.stages import STORAGE_PATH

    if document["name"] != tenant.name:
        raise ValueError(f"curves of {document['name']!r} stored for tenant {tenant.name!r}")
    curves = {}
    for stage in STORAGE_PATH:
        doc = document["stages"][str(stage)]
        curves[stage] = RbCurve(
            np.asarray(doc["rates"], dtype=np.float64),
            np.asarray(doc["buckets"], dtype=np.float64),
            float(doc["mean_rate"]),
            stage,
            doc["name"],
        )
    read, write = document["largest"]
    return TenantCurves(tenant.name, tenant.slo, curves, (float(read), float(write)))


# ------------------------------------------------------------------------------ bounds, decisions
#: The fields of a :class:`~tailbound.snc.analysis.TenantBound` a snapshot stores, in order
#: (its name is its key, its SLO its tenant's): the priority level and the latencies (s).
BOUND_FIELDS = (
    "priority",
    "latency_s",
    "latency_in_s",
    "latency_out_s",
    "latency_storage_s",
    "latency_alone_s",
    "latency_joint_s",
)


def bound_entry(bound: Any, tenant: Tenant) -> list[Any]:
    """``tenant``'s SNC-Meister ``bound`` (a :class:`~tailbound.snc.analysis.TenantBound`) as
    a snapshot stores it: :data:`BOUND_FIELDS`' values (floats written by ``repr``, so they
    read back bit for bit; infinities and NaN as JSON's ``Infinity`` and ``NaN``). TypeError
    for another type of bound, ValueError for a bound not of ``tenant`` or of another SLO (it
    would not be restored as it is)."""
    from tailbound.snc.analysis import TenantBound

    if type(bound) is not TenantBound:
        raise TypeError(f"a bound of type {type(bound).__name__}, not TenantBound")
    if bound.name != tenant.name or bound.slo != tenant.slo:
        raise ValueError(f"the bound of {bound.name!r} stored for tenant {tenant.name!r}")
    return [getattr(bound, f) for f in BOUND_FIELDS]


def bound_of(entry: list[Any], tenant: Tenant) -> Any:
    """The :class:`~tailbound.snc.analysis.TenantBound` of :func:`bound_entry`'s ``entry`` for
    ``tenant``; ValueError or TypeError for an entry of another shape."""
    from tailbound.snc.analysis import TenantBound

    if not isinstance(entry, list) or len(entry) != len(BOUND_FIELDS):
        raise ValueError(f"the bound of {tenant.name} is not {len(BOUND_FIELDS)} fields")
    priority, *latencies = entry
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ValueError(f"the bound of {tenant.name}: priority {priority!r}")
    values = [None if v is None else float(v) for v in latencies]
    if None in values[:3]:
        raise ValueError(f"the bound of {tenant.name}: a latency missing")
    total, inward, outward, storage, alone, joint = values
    assert total is not None and inward is not None and outward is not None
    return TenantBound(
        tenant.name, priority, total, inward, outward, storage, tenant.slo, alone, joint
    )


def decision_entry(decision: Any) -> list[Any]:
    """An admitted Nested QoS :class:`~tailbound.policies.nested_qos.Decision` as a snapshot
    stores it (its tenant is its key): its classes ``[sigma_s, rho, delta_s]``, innermost
    first, the capacity its device needed at its arrival and its largest request's work (s)."""
    if not decision.admitted:
        raise ValueError(f"{decision.tenant.name}: a refused decision in the engine")
    return [
        [list(map(float, c)) for c in decision.classes],
        float(decision.capacity),
        float(decision.largest_s),
    ]


def decision_of(entry: list[Any], tenant: Tenant) -> Any:
    """The admitted :class:`~tailbound.policies.nested_qos.Decision` of
    :func:`decision_entry`'s ``entry`` for ``tenant``."""
    from tailbound.plan import NestedClass
    from tailbound.policies.nested_qos import Decision

    classes, capacity, largest = entry
    nested = tuple(NestedClass(float(a), float(b), float(c)) for a, b, c in classes)
    if not nested:
        raise ValueError(f"the decision of {tenant.name} has no class")
    return Decision(tenant, nested, True, float(capacity), float(largest))


def _bounds(before: Engine, after: AdmissionEngine, full: bool) -> dict[str, Any]:
    """The bounds part of an SNC admission engine's snapshot document: ``bounds`` (every
    tenant's) in a full one or when ``before``'s were unknown, ``bound_changes`` (the bounds
    the event added or replaced, found by identity) in a change; nothing when ``after``'s are
    unknown (the state's bounds then are)."""
    if after.bounds is None:
        return {}
    tenants = {t.name: t for t in after.tenants}
    old = before.bounds if isinstance(before, AdmissionEngine) else None
    if full or old is None:
        return {"bounds": {n: bound_entry(b, tenants[n]) for n, b in after.bounds.items()}}
    changed = {n: b for n, b in after.bounds.items() if old.get(n) is not b}
    return {"bound_changes": {n: bound_entry(b, tenants[n]) for n, b in changed.items()}}


def _text(document: Any) -> str:
    # repr of floats reads back exactly; infinities allowed (an unbounded bucket)
    return json.dumps(document, separators=plan_store.COMPACT)


def _server(i: int, server: Any) -> list[Any]:
    return [
        i,
        [[p.workload.name, int(p.device)] for p in server.tenants],
        np.asarray(server.rate, dtype=np.float64).tolist(),
        np.asarray(server.bucket, dtype=np.float64).tolist(),
    ]


# ------------------------------------------------------------------------------ writing
@dataclass(frozen=True)
class Snapshot:
    """One version's snapshot row to write: its kind (``full`` or ``delta``), its state text
    and SHA-256, and the curve texts it names (hash → text) to store in ``plan_entries``."""

    version: int
    kind: str
    state: str
    sha256: str
    blobs: dict[str, str]


@dataclass
class SnapshotWriter:
    """Writes one cluster's snapshots (module docstring); one per cluster in a server."""

    #: The last version whose snapshot this writer knows stored, its chain complete back to a
    #: full one (None: unknown, so the next is full).
    base: int | None = None
    #: Curve texts by the identity of their TenantCurves (kept alive with it): hash and text.
    _curves: dict[int, tuple[Any, str, str]] = field(default_factory=dict)
    #: Curve hashes known stored in ``plan_entries``.
    _stored: set[str] = field(default_factory=set)

    def _curve(self, workload: Any) -> tuple[str, str]:
        hit = self._curves.get(id(workload))
        if hit is None or hit[0] is not workload:
            text = _text(curves_document(workload))
            hit = (workload, sha256(text), text)
            self._curves[id(workload)] = hit
        return hit[1], hit[2]

    def snapshot(
        self, version: int, before: Engine, after: Engine, event: str, tenant: str
    ) -> Snapshot | None:
        """Version ``version``'s snapshot: ``after`` is its engine, ``before`` version
        ``version - 1``'s (the one the event was decided on), ``event`` ``admit`` or
        ``depart`` of ``tenant``. None for an engine without snapshots."""
        kind = kind_of(after)
        if kind is None:
            return None
        full = (version - 1) % FULL_EVERY == 0 or self.base != version - 1
        doc: dict[str, Any] = {"format": FORMAT, "engine": kind, "version": version}
        blobs: dict[str, str] = {}
        if not full:
            doc.update(event=event, tenant=tenant)
        if kind == NESTED:
            assert isinstance(after, NestedEngine)
            if full:
                doc["tenants"] = after.admitted()
                doc["decisions"] = [decision_entry(d) for d in after.decisions]
            elif event == "admit":
                if after.decisions[-1].tenant.name != tenant:
                    raise ValueError(f"{tenant} is not the engine's last decision")
                doc["decision"] = decision_entry(after.decisions[-1])
        elif kind != "placement":
            if full:
                doc["tenants"] = after.admitted()
            if isinstance(after, AdmissionEngine) and after.graph is not None:
                doc.update(_bounds(before, after, full))
        else:
            assert isinstance(after, PlacementEngine) and isinstance(before, PlacementEngine)
            new, old = after.placer.servers, before.placer.servers
            if full:
                doc["tenants"] = after.admitted()
                servers = [_server(i, s) for i, s in enumerate(new) if s.tenants]
                named = [p.workload for s in new for p in s.tenants]
            else:
                servers = [
                    _server(i, s)
                    for i, s in enumerate(new)
                    if i >= len(old)
                    or s.tenants is not old[i].tenants
                    or s.rate is not old[i].rate
                    or s.bucket is not old[i].bucket
                ]
                named = [
                    p.workload
                    for s in new
                    for p in s.tenants
                    if event == "admit" and p.workload.name == tenant
                ][:1]
            doc["servers"] = servers
            doc["curves"] = {}
            for workload in named:
                h, text = self._curve(workload)
                doc["curves"][workload.name] = h
                if h not in self._stored:
                    blobs[h] = text
        text = _text(doc)
        return Snapshot(version, "full" if full else "delta", text, sha256(text), blobs)

    def written(self, snapshot: Snapshot) -> None:
        """``snapshot`` was committed."""
        self.base = snapshot.version
        self._stored |= set(snapshot.blobs)


def store(session: Session, cluster_id: int, snapshot: Snapshot) -> None:
    """Add ``snapshot``'s row and its curve texts to ``session``'s transaction."""
    from tailbound.service.db import EngineSnapshotRow

    plan_store.store_entries(session, snapshot.blobs)
    session.add(
        EngineSnapshotRow(
            cluster_id=cluster_id,
            version=snapshot.version,
            kind=snapshot.kind,
            state=snapshot.state,
            sha256=snapshot.sha256,
        )
    )


# ------------------------------------------------------------------------------ loading
def apply(state: dict[str, Any] | None, doc: dict[str, Any]) -> dict[str, Any]:
    """The state after snapshot document ``doc`` (a full one replaces ``state``; a change
    applies to it). States are documents: ``tenants`` (list); for placement ``servers``
    (index → server entry) and ``curves`` (name → hash); for Nested QoS ``decisions`` (name →
    :func:`decision_entry`); for the other kinds ``bounds`` (name → :func:`bound_entry`, or
    None: unknown, as every format-1 state)."""
    if doc.get("format") not in READS:
        raise ValueError(f"snapshot format {doc.get('format')!r}, expected one of {READS}")
    engine = doc["engine"]
    if "event" not in doc:
        out: dict[str, Any] = {"engine": engine, "tenants": list(doc["tenants"])}
        if engine == "placement":
            out["servers"] = {int(s[0]): s for s in doc["servers"]}
            out["curves"] = dict(doc["curves"])
        elif engine == NESTED:
            out["decisions"] = dict(zip(out["tenants"], doc["decisions"], strict=True))
        else:
            out["bounds"] = dict(doc["bounds"]) if "bounds" in doc else None
        return out
    if state is None or state["engine"] != doc["engine"]:
        raise ValueError("a change without the state before it")
    tenants = list(state["tenants"])
    name = doc["tenant"]
    if doc["event"] == "admit":
        if name in tenants:
            raise ValueError(f"{name} admitted twice")
        tenants.append(name)
    elif doc["event"] == "depart":
        tenants.remove(name)
    else:
        raise ValueError(f"unknown event {doc['event']!r}")
    out = {**state, "tenants": tenants}
    if engine == NESTED:
        decisions = dict(state["decisions"])
        if doc["event"] == "admit":
            decisions[name] = doc["decision"]
        else:
            del decisions[name]
        out["decisions"] = decisions
    elif engine != "placement":
        bounds = state.get("bounds")
        if "bounds" in doc:
            bounds = dict(doc["bounds"])
        elif "bound_changes" in doc:
            if bounds is None:
                raise ValueError("bound changes without the bounds before them")
            bounds = dict(bounds)
            if doc["event"] == "depart":
                del bounds[name]
            bounds.update(doc["bound_changes"])
        else:
            bounds = None  # unknown after this event (a format-1 change, or not known)
        out["bounds"] = bounds
    if engine == "placement":
        servers = dict(state["servers"])
        for s in doc["servers"]:
            servers[int(s[0])] = s
        curves = {k: v for k, v in state["curves"].items() if k in set(tenants)}
        curves.update(doc["curves"])
        out.update(servers=servers, curves=curves)
    return out


def restore(
    context: Context,
    state: dict[str, Any],
    tenant: Callable[[str], Tenant],
    texts: Callable[[list[str]], list[str]],
) -> Engine:
    """The engine of ``state`` (:func:`apply`'s) on ``context``'s cluster; ``tenant(name)`` the
    registered tenant, ``texts(hashes)`` the stored texts of curve hashes."""
    from tailbound.service.engines import new_engine

    empty = new_engine(context)
    kind = kind_of(empty)
    if kind != state["engine"]:
        raise ValueError(f"a {state['engine']} snapshot for a {kind} engine")
    tenants = {name: tenant(name) for name in state["tenants"]}
    if isinstance(empty, AdmissionEngine):
        stored = state.get("bounds")
        bounds = None if stored is None else {n: bound_of(b, tenants[n]) for n, b in stored.items()}
        return empty.restored(tuple(tenants.values()), bounds)
    if isinstance(empty, NestedEngine):
        if set(state["decisions"]) != set(tenants):
            raise ValueError("the decisions stored are not the admitted tenants'")
        decisions = tuple(decision_of(state["decisions"][n], t) for n, t in tenants.items())
        return dataclasses.replace(empty, decisions=decisions)
    if kind != "placement":
        return dataclasses.replace(empty, tenants=tuple(tenants.values()))  # type: ignore[type-var]
    from tailbound.policies.server import Placed

    assert isinstance(empty, PlacementEngine)
    names = sorted(state["curves"])
    if set(names) != set(tenants):
        raise ValueError("the curves stored are not the admitted tenants'")
    hashes = [state["curves"][n] for n in names]
    found = dict(zip(hashes, texts(hashes), strict=True))
    workloads = {}
    for n, h in zip(names, hashes, strict=True):
        if sha256(found[h]) != h:
            raise ValueError(f"the curves of {n} do not match their hash")
        workloads[n] = curves_of(json.loads(found[h]), tenants[n])
    placer = empty.placer
    placed: set[str] = set()
    for i, server in sorted(state["servers"].items()):
        _, members, rate, bucket = server
        if not members:
            continue
        rows = [Placed(workloads[n], int(d)) for n, d in members]
        placed |= {n for n, _ in members}
        placer.load(
            i,
            rows,
            np.asarray(rate, dtype=np.float64).reshape(len(rows), 3),
            np.asarray(bucket, dtype=np.float64).reshape(len(rows), 3),
        )
    if placed != set(tenants):
        raise ValueError("the servers' tenants are not the admitted tenants")
    for n, t in tenants.items():
        context.curves.setdefault(t, workloads[n])  # the curves it was placed with
    return PlacementEngine(context, placer, tenants)


@dataclass
class Loaded:
    """What :func:`load` found: the version of the engine loaded (0 and None: none), and why
    the snapshots stopped before the version wanted (empty when they reached it)."""

    version: int
    engine: Engine | None
    problems: list[str]


def load(
    bind: Session | Connection,
    cluster_id: int,
    version: int,
    build: Callable[[dict[str, Any]], Engine],
) -> Loaded:
    """The engine of the latest version at or before ``version`` that the stored snapshots
    give (module docstring, "Loading"); ``build(state)`` rebuilds an engine
    (:func:`restore`)."""
    from tailbound.service.db import EngineSnapshotRow as Row

    problems: list[str] = []
    fulls = bind.execute(
        select(Row.version)
        .where(Row.cluster_id == cluster_id, Row.kind == "full", Row.version <= version)
        .order_by(Row.version.desc())
    ).scalars()
    for first in list(fulls):
        rows = bind.execute(
            select(Row.version, Row.state, Row.sha256)
            .where(Row.cluster_id == cluster_id, Row.version >= first, Row.version <= version)
            .order_by(Row.version)
        ).all()
        state, good = _chain(rows, first, problems)
        if state is None:
            continue
        if good < version:
            problems.append(f"version {good + 1}: no usable snapshot")
        try:
            return Loaded(good, build(state), problems)
        except (KeyError, ValueError, TypeError, IndexError, RuntimeError) as e:
            problems.append(f"the snapshot of version {good} does not load ({e!r})")
    if not problems:
        problems.append("no snapshot")
    return Loaded(0, None, problems)


def _chain(
    rows: Iterable[Any], first: int, problems: list[str]
) -> tuple[dict[str, Any] | None, int]:
    """The state after the rows from full snapshot ``first`` on, up to the first missing,
    damaged or unreadable one, and the version it is of (``first - 1`` with None: none)."""
    state: dict[str, Any] | None = None
    good = first - 1
    for v, text, digest in rows:
        if v != good + 1:
            problems.append(f"version {good + 1}: no snapshot")
            break
        if sha256(text) != digest:
            problems.append(f"version {v}: the snapshot does not match its SHA-256")
            break
        try:
            doc = json.loads(text)
            if doc.get("version") != v:
                raise ValueError(f"a snapshot of version {doc.get('version')!r} stored as {v}")
            state = apply(state, doc)
        except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
            problems.append(f"version {v}: the snapshot does not read ({e!r})")
            break
        good = v
    return (state if good >= first else None), good
