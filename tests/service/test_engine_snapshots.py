"""Engine snapshots (:mod:`tailbound.service.engine_snapshots`): after random admissions and
departures, a restarted server's engine loaded from the snapshots is the replayed engine — the
same placer state to the bit, and for every possible next event the same decision, reasons and
Plan text byte for byte; the next published version's text is the replayed engine's; a damaged
or missing snapshot makes the server replay from the snapshot before it (not from zero), and
says so in its log."""

from __future__ import annotations

import dataclasses
import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select, update
from tests.service.decider_world import World, random_history
from tests.service.harness import Demo, demo

from tailbound.service import engine_snapshots
from tailbound.service.db import (
    ClusterRow,
    DecisionRow,
    EngineSnapshotRow,
    PlanRow,
    TenantRow,
)
from tailbound.service.engine_snapshots import Loaded
from tailbound.service.engines import AdmissionEngine, Engine, NestedEngine, PlacementEngine
from tailbound.service.plans import plan_text


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """Eighteen workloads of 5 s on two servers: some arrivals are refused."""
    return demo(tmp_path_factory.mktemp("snapshots"), 18, servers=2, duration_s=5.0, seed=7)


def placer_state(engine: Engine) -> list[Any]:
    assert isinstance(engine, PlacementEngine)
    return [
        (
            s.config.name,
            [(p.workload.name, p.device) for p in s.tenants],
            s.rate.tobytes(),
            s.bucket.tobytes(),
        )
        for s in engine.placer.servers
    ]


def bounds_text(engine: Engine) -> list[str] | None:
    """An admission engine's bounds, in the order held, by ``repr`` (so NaN and the floats'
    bits compare); None when unknown."""
    assert isinstance(engine, AdmissionEngine)
    if engine.bounds is None:
        return None
    return [f"{n}: {b!r}" for n, b in engine.bounds.items()]


def assert_same_decisions(world: World, loaded: Engine, replayed: Engine) -> None:
    """Every possible next event decided alike by both engines, Plans byte for byte."""
    assert loaded.admitted() == replayed.admitted()
    if isinstance(replayed, PlacementEngine):
        assert placer_state(loaded) == placer_state(replayed)
    if isinstance(replayed, NestedEngine):
        assert isinstance(loaded, NestedEngine)
        assert repr(loaded.decisions) == repr(replayed.decisions)  # floats to the bit
    tenants = {t.name: t for t in _tenants(world, loaded)}
    for name in world.names:
        if name in replayed.admitted():
            a, b = loaded.depart(name), replayed.depart(name)
        else:
            a, b = loaded.admit(tenants[name]), replayed.admit(tenants[name])
        assert (a.admitted, a.reasons) == (b.admitted, b.reasons), name
        assert (a.plan is None) == (b.plan is None), name
        if a.plan is not None and b.plan is not None:
            assert plan_text(a.plan) == plan_text(b.plan), name


def _tenants(world: World, engine: Engine) -> list[Any]:
    decider = world.decider()
    with world.sessions() as s:
        row = s.scalar(select(ClusterRow).where(ClusterRow.id == world.cluster_id))
        assert row is not None
        return [
            decider.tenant(row, t)
            for t in s.scalars(select(TenantRow).where(TenantRow.cluster_id == row.id))
        ]


def replaying(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deciders made after this ignore the snapshots (the replay from version 0)."""
    monkeypatch.setattr(
        engine_snapshots, "load", lambda *a, **k: Loaded(0, None, ["disabled by the test"])
    )


@pytest.mark.parametrize(
    ("policy", "options"),
    [
        ("workloadcompactor", {"mtu_bytes": 9000.0}),
        ("effective-bandwidth", {"mtu_bytes": 9000.0}),
        ("snc-meister", {}),
        ("nested-qos", {}),
    ],
)
def test_loaded_engine_decides_as_the_replayed_one(
    tmp_path: Path,
    fleet: Demo,
    policy: str,
    options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(engine_snapshots, "FULL_EVERY", 4)  # full, changes, full, ...
    world = World(tmp_path, fleet, policy, options)
    random_history(world, world.decider(), random.Random(11), 22)
    version, _ = world.current(world.decider())
    with world.sessions() as s:
        outcomes = set(s.scalars(select(DecisionRow.admitted)))
        assert outcomes == {True, False}  # arrivals admitted and refused
        kinds = dict(
            s.execute(
                select(EngineSnapshotRow.version, EngineSnapshotRow.kind).where(
                    EngineSnapshotRow.cluster_id == world.cluster_id
                )
            ).all()
        )
    assert sorted(kinds) == list(range(1, version + 1))  # one per version, none half-written
    assert {v for v, k in kinds.items() if k == "full"} == set(range(1, version + 1, 4))

    caplog.set_level(logging.INFO, "tailbound.service.admission")
    restarted = world.decider()
    have, loaded = world.current(restarted)
    assert have == version
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    with monkeypatch.context() as m:
        replaying(m)
        replayer = world.decider()
        _, replayed = world.current(replayer)
    if isinstance(replayed, AdmissionEngine):
        # SNC-Meister's bounds stored (format 2): the loaded engine's are the replayed one's to
        # the bit, and its next arrival re-analyses only what it changes, as the replayed one's
        assert replayed.graph is not None and replayed.bounds is not None
        assert bounds_text(loaded) == bounds_text(replayed)
        assert_no_full_reanalysis(world, loaded, monkeypatch)
    assert_same_decisions(world, loaded, replayed)

    # the next versions published by the restarted server: the replayed engine's texts
    rng = random.Random(2)
    for _ in range(4):
        inside = set(world.admitted())
        outside = [n for n in world.names if n not in inside]
        _, replayed = world.current(replayer)
        if outside and rng.random() < 0.5:
            name = rng.choice(outside)
            expected = replayed.admit(next(t for t in _tenants(world, replayed) if t.name == name))
            result = restarted.admit("c", name)
        else:
            name = rng.choice(sorted(inside))
            expected = replayed.depart(name)
            result = restarted.depart("c", name)
        assert result.admitted == expected.admitted
        if expected.plan is not None:
            assert result.published is not None
            plan = dataclasses.replace(
                expected.plan, meta={**expected.plan.meta, "version": result.published}
            )
            assert world.text(result.published) == plan_text(plan)


def assert_no_full_reanalysis(
    world: World, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every arrival ``engine`` can decide next is decided without re-analysing every admitted
    tenant (the whole-set ``decide``, which a restored engine without bounds runs), and every
    departure without replaying a tenant alone (the floor's latencies alone restored)."""
    from tailbound.policies import admission, floors

    def whole(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the whole set re-analysed")

    def alone(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a tenant replayed alone")

    with monkeypatch.context() as m:  # departures first: nothing measured alone before
        m.setattr(floors, "alone_result", alone)
        for name in engine.admitted():
            engine.depart(name)
    with monkeypatch.context() as m:
        m.setattr(admission, "decide", whole)
        for t in _tenants(world, engine):
            if t.name not in engine.admitted():
                engine.admit(t)


def as_format_1(world: World) -> None:
    """Rewrite the cluster's snapshot rows as format 1 wrote them (no bounds), hashes fixed."""
    where = EngineSnapshotRow.cluster_id == world.cluster_id
    with world.sessions.begin() as s:
        for row in s.scalars(select(EngineSnapshotRow).where(where)):
            doc = json.loads(row.state)
            doc["format"] = 1
            doc.pop("bounds", None)
            doc.pop("bound_changes", None)
            row.state = engine_snapshots._text(doc)
            row.sha256 = engine_snapshots.sha256(row.state)


def test_format_1_snapshots_load_with_bounds_unknown(
    tmp_path: Path,
    fleet: Demo,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Snapshots written before the bounds were stored (format 1) still load, without replay:
    SNC-Meister's bounds unknown, so the next arrival re-analyses every tenant (the behaviour
    of format 1), deciding as the replayed engine on this fleet; the next version the server
    publishes carries the bounds again (a change listing them all), and loads with them."""
    monkeypatch.setattr(engine_snapshots, "FULL_EVERY", 4)
    world = World(tmp_path, fleet, "snc-meister", {})
    random_history(world, world.decider(), random.Random(11), 12)
    version, _ = world.current(world.decider())
    as_format_1(world)
    caplog.set_level(logging.INFO, "tailbound.service.admission")
    restarted = world.decider()
    have, loaded = world.current(restarted)
    assert have == version
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert isinstance(loaded, AdmissionEngine) and loaded.bounds is None
    with monkeypatch.context() as m:
        replaying(m)
        _, replayed = world.current(world.decider())
    assert_same_decisions(world, loaded, replayed)

    # the restarted server's next version: its snapshot (a change: the server loaded the one
    # before) holds every bound, and a server loading it has them
    outside = [n for n in world.names if n not in world.admitted()]
    published = None
    for name in outside:
        published = restarted.admit("c", name).published
        if published is not None:
            break
    assert published == version + 1 and (version + 1 - 1) % 4 != 0
    with world.sessions() as s:
        row = s.scalar(
            select(EngineSnapshotRow).where(
                EngineSnapshotRow.cluster_id == world.cluster_id,
                EngineSnapshotRow.version == published,
            )
        )
        assert row is not None and row.kind == "delta"
        doc = json.loads(row.state)
    assert doc["format"] == engine_snapshots.FORMAT and set(doc["bounds"]) == set(world.admitted())
    _, again = world.current(world.decider())
    with monkeypatch.context() as m:
        replaying(m)
        _, replayed = world.current(world.decider())
    assert bounds_text(again) == bounds_text(replayed)


def test_damaged_or_missing_snapshots_replay_from_the_one_before(
    tmp_path: Path,
    fleet: Demo,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(engine_snapshots, "FULL_EVERY", 4)
    world = World(tmp_path, fleet, "workloadcompactor", {"mtu_bytes": 9000.0})
    random_history(world, world.decider(), random.Random(5), 14)
    version, _ = world.current(world.decider())
    assert version >= 10
    with monkeypatch.context() as m:
        replaying(m)
        _, replayed = world.current(world.decider())
    replays: list[str] = []
    real_admit = PlacementEngine.admit

    def counting(self: PlacementEngine, tenant: Any, *, plan: bool = True) -> Any:
        if not plan:
            replays.append(tenant.name)
        return real_admit(self, tenant, plan=plan)

    monkeypatch.setattr(PlacementEngine, "admit", counting)
    caplog.set_level(logging.INFO, "tailbound.service.admission")
    where = (EngineSnapshotRow.cluster_id == world.cluster_id,)

    def restart(expect_from: int, says: str) -> None:
        replays.clear()
        caplog.clear()
        have, loaded = world.current(world.decider())
        assert have == version
        warned = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warned) == 1 and says in warned[0].getMessage(), warned
        assert f"replaying from version {expect_from} " in warned[0].getMessage()
        with world.sessions() as s:
            admits = s.scalars(
                select(PlanRow.tenant).where(
                    PlanRow.cluster_id == world.cluster_id,
                    PlanRow.version > expect_from,
                    PlanRow.event == "admit",
                )
            ).all()
        assert replays == list(admits)  # replayed from the snapshot before, not from zero
        assert_same_decisions(world, loaded, replayed)

    last_full = max(v for v in range(1, version + 1, 4) if v < version)
    # a change damaged (its text no longer its hash): replay from the version before it
    with world.sessions.begin() as s:
        s.execute(
            update(EngineSnapshotRow)
            .where(*where, EngineSnapshotRow.version == version)
            .values(state=EngineSnapshotRow.state + " ")
        )
    restart(version - 1, "does not match its SHA-256")
    # the latest full snapshot missing: from the full one before it, up to the gap
    with world.sessions.begin() as s:
        s.execute(delete(EngineSnapshotRow).where(*where, EngineSnapshotRow.version == last_full))
    restart(last_full - 1, "no snapshot")
    # no snapshot at all (a database migrated with its history): every version replayed
    with world.sessions.begin() as s:
        s.execute(delete(EngineSnapshotRow).where(*where))
    restart(0, "no snapshot")


def test_snapshot_documents_round_trip_curves(fleet: Demo) -> None:
    """A tenant's r-b curves written and read back are equal to the bit."""
    from tailbound.model import tenant_from_json
    from tailbound.policies.workload import characterize
    from tailbound.profiles import SsdProfile
    from tailbound.traces.readers import read_trace

    tenant = tenant_from_json(fleet.tenants[0], source="demo", traces=fleet.folder)
    path = fleet.folder / "profile_ssd.json"
    profile = SsdProfile.from_json(fleet.profile, path=str(path))
    w = characterize(
        tenant, read_trace(tenant.trace), profile=profile, link_bandwidth_bytes_per_s=1.25e9
    )
    back = engine_snapshots.curves_of(
        __import__("json").loads(engine_snapshots._text(engine_snapshots.curves_document(w))),
        tenant,
    )
    assert back.largest == w.largest and back.slo == w.slo and back.name == w.name
    for stage, curve in w.curves.items():
        other = back.curves[stage]
        assert curve.rates.tobytes() == other.rates.tobytes()
        assert curve.buckets.tobytes() == other.buckets.tobytes()
        assert (curve.mean_rate, curve.stage, curve.name) == (
            other.mean_rate,
            other.stage,
            other.name,
        )


def test_bounds_and_decisions_follow_the_chain() -> None:
    """:func:`engine_snapshots.apply` of SNC-Meister's bounds and Nested QoS's decisions: a
    change's bounds apply to the state before it (a departure drops the tenant's), a change
    listing every bound replaces them, a change of some needs them known (else the chain stops
    there), a change without any (format 1) leaves them unknown; an unknown format is refused."""
    apply = engine_snapshots.apply
    a, b, a2 = ([p, 0.1 * p, 0.05, 0.05, None, None, None] for p in range(3))

    def doc(version: int, fmt: int = 2, **fields: Any) -> dict[str, Any]:
        return {"format": fmt, "engine": "admission", "version": version, **fields}

    state = apply(None, doc(1, tenants=["a", "b"], bounds={"a": a, "b": b}))
    assert state["bounds"] == {"a": a, "b": b}
    state = apply(state, doc(2, event="depart", tenant="b", bound_changes={"a": a2}))
    assert (state["tenants"], state["bounds"]) == (["a"], {"a": a2})
    unknown = apply(state, doc(3, fmt=1, event="admit", tenant="c"))
    assert (unknown["tenants"], unknown["bounds"]) == (["a", "c"], None)
    with pytest.raises(ValueError, match="without the bounds before them"):
        apply(unknown, doc(4, event="depart", tenant="c", bound_changes={}))
    known = apply(unknown, doc(4, event="depart", tenant="c", bounds={"a": a}))
    assert known["bounds"] == {"a": a}
    assert apply(None, doc(1, fmt=1, tenants=["a"]))["bounds"] is None
    with pytest.raises(ValueError, match="format 3"):
        apply(None, doc(1, fmt=3, tenants=[]))

    nested = {"format": 2, "engine": engine_snapshots.NESTED}
    d1, d2 = [[[0.001, 0.5, 0.002]], 0.5, 1e-4], [[[0.002, 0.25, 0.005]], 0.75, 2e-4]
    state = apply(None, {**nested, "version": 1, "tenants": ["x"], "decisions": [d1]})
    state = apply(state, {**nested, "version": 2, "event": "admit", "tenant": "y", "decision": d2})
    assert state["decisions"] == {"x": d1, "y": d2}
    state = apply(state, {**nested, "version": 3, "event": "depart", "tenant": "x"})
    assert (state["tenants"], state["decisions"]) == (["y"], {"y": d2})


def test_bound_entries_read_back_to_the_bit() -> None:
    """An SNC bound written (floats by ``repr``, infinities and NaN included) reads back equal to
    the bit; a bound of another tenant or SLO is refused when written."""
    import math

    from tailbound.model import Slo, Tenant
    from tailbound.snc.analysis import TenantBound

    tenant = Tenant("t", Slo(0.05, 0.99), Path("t.csv"), client_host="c0", server="s0")
    bounds = [
        TenantBound("t", 2, 0.1 + 0.2, 0.1, 0.2 - 1e-17, None, tenant.slo),
        TenantBound("t", 0, math.inf, math.nan, math.inf, 1 / 3, tenant.slo, 2 / 3, 5e-324),
    ]
    for bound in bounds:
        text = engine_snapshots._text(engine_snapshots.bound_entry(bound, tenant))
        assert repr(engine_snapshots.bound_of(json.loads(text), tenant)) == repr(bound)
    other = dataclasses.replace(tenant, slo=Slo(0.01, 0.99))
    with pytest.raises(ValueError, match="stored for tenant"):
        engine_snapshots.bound_entry(bounds[0], other)
    with pytest.raises(ValueError, match="7 fields"):
        engine_snapshots.bound_of([0, 1.0], tenant)
