"""Durability (issue 27): the server is killed with SIGKILL at random points while three clients
admit and depart tenants, 20 times. After each restart every acknowledged decision is in the
database, nothing unacknowledged is half there (each Plan version has exactly its decision, the
tenants' states agree with the latest Plan), the Plan versions are consecutive, each loads as a
Plan and holds exactly the tenants its history admitted, and the server decides again."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from sqlalchemy import select
from tests.service.harness import Demo, Server, demo, make_token, register

from tailbound.plan import Plan
from tailbound.service import engine_snapshots, plan_store
from tailbound.service.client import Client, ServiceError
from tailbound.service.db import (
    ClusterRow,
    DecisionRow,
    EngineSnapshotRow,
    PlanRow,
    TenantRow,
    make_engine,
    sessions,
)

KILLS = 20
WORKERS = 3


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """Nine workloads of 5 s on nine servers: most arrivals fit."""
    return demo(tmp_path_factory.mktemp("durable"), 9, servers=9, duration_s=5.0, seed=5)


def worker(
    url: str, token: str, names: list[str], stop: threading.Event, acks: list[dict[str, Any]]
) -> None:
    """Admit each of ``names`` that is not admitted and depart each that is, round and round,
    until the server dies or ``stop`` is set; every answer received is appended to ``acks``."""
    try:
        with Client(url, token, timeout_s=30) as c:
            while not stop.is_set():
                for name in names:
                    state = c.json("GET", f"/clusters/d/tenants/{name}")["state"]
                    answer = c.depart("d", name) if state == "admitted" else c.admit("d", name)
                    acks.append(answer)
    except (httpx.HTTPError, ServiceError, OSError):
        return  # killed under us: what was not answered is not acknowledged


def as_it_is(state: dict[str, Any]) -> Any:
    """The state a snapshot chain gives, not rebuilt into an engine."""
    return state


def check(db: str, acks: list[dict[str, Any]]) -> int:
    """The database against the acknowledged answers (module docstring); the latest version."""
    engine = make_engine(db)
    try:
        with sessions(engine)() as s:
            cluster = s.scalar(select(ClusterRow).where(ClusterRow.name == "d"))
            assert cluster is not None
            plans = list(
                s.scalars(
                    select(PlanRow)
                    .where(PlanRow.cluster_id == cluster.id)
                    .order_by(PlanRow.version)
                )
            )
            texts = plan_store.version_texts(s, cluster.id, 1, cluster.version)
            decisions = list(
                s.scalars(select(DecisionRow).where(DecisionRow.cluster_id == cluster.id))
            )
            states = {
                t.name: t.state
                for t in s.scalars(select(TenantRow).where(TenantRow.cluster_id == cluster.id))
            }
            # each version's engine snapshot, committed with it (engine_snapshots)
            snapshots = list(
                s.scalars(
                    select(EngineSnapshotRow.version)
                    .where(EngineSnapshotRow.cluster_id == cluster.id)
                    .order_by(EngineSnapshotRow.version)
                )
            )
            loaded = engine_snapshots.load(s, cluster.id, cluster.version, as_it_is)
    finally:
        engine.dispose()
    assert [p.version for p in plans] == list(range(1, cluster.version + 1))
    by_version = {p.version: p for p in plans}
    published = [d.published for d in decisions if d.published is not None]
    assert sorted(published) == list(range(1, len(plans) + 1)), (
        "a version without its decision, or two"
    )
    present: set[str] = set()
    for p in plans:
        plan = Plan.from_json(json.loads(texts[p.version]))
        assert plan_store.entry_hash(texts[p.version]) == p.sha256
        assert plan.meta["version"] == p.version
        if p.event == "admit":
            assert p.tenant not in present
            present.add(p.tenant)
        else:
            present.remove(p.tenant)
        assert {t.name for t in plan.tenants} == present, f"version {p.version}"
    assert {n for n, st in states.items() if st == "admitted"} == present
    assert snapshots == [p.version for p in plans], "a version without its snapshot, or one alone"
    assert loaded.version == cluster.version and not loaded.problems, loaded.problems
    assert set(cast(dict[str, Any], loaded.engine)["tenants"]) == present
    for a in acks:
        if a["published"] is not None:
            p = by_version[a["published"]]
            assert (p.event, p.tenant) == (a["event"], a["tenant"]), a
        else:
            assert any(
                d.tenant == a["tenant"] and d.based_on == a["based_on"] and not d.admitted
                for d in decisions
            ), a
    return len(plans)


def test_kill_9_during_admissions(tmp_path: Path, fleet: Demo) -> None:
    db = f"sqlite:///{tmp_path / 'tb.db'}"
    data = tmp_path / "data"
    token = make_token(db, "op", "operator")
    server = Server(db, data).start()
    with server.client(token) as c:
        names = register(c, fleet, "d", policy="knee")
    server.kill()
    rng = random.Random(27)
    acks: list[dict[str, Any]] = []
    killed_busy = 0
    for _ in range(KILLS):
        server = Server(db, data).start()
        stop = threading.Event()
        round_acks: list[dict[str, Any]] = []
        threads = [
            threading.Thread(
                target=worker, args=(server.url, token, names[i::WORKERS], stop, round_acks)
            )
            for i in range(WORKERS)
        ]
        for t in threads:
            t.start()
        # once decisions flow (the first one replays the history), kill at a random point
        deadline = time.monotonic() + 60
        while not round_acks and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.8))
        before = len(round_acks)
        server.kill()
        stop.set()
        for t in threads:
            t.join(60)
        killed_busy += before > 0
        acks.extend(round_acks)
        check(db, acks)
    assert killed_busy == KILLS, "every kill should land while decisions are being made"
    assert len(acks) >= KILLS
    # the server restarts from what survived and decides again (its engine replays every version)
    server = Server(db, data).start()
    try:
        versions = check(db, acks)
        with server.client(token) as c:
            states = {t["name"]: t["state"] for t in c.json("GET", "/clusters/d/tenants")}
            name = names[0]
            answer = c.depart("d", name) if states[name] == "admitted" else c.admit("d", name)
        if answer["published"] is not None:
            assert answer["published"] == versions + 1
    finally:
        assert server.stop() == 0


def test_sigterm_lets_in_flight_admissions_finish(tmp_path: Path, fleet: Demo) -> None:
    """A graceful stop (SIGTERM) while admissions are being decided (nine at once, decided one
    after the other): every one is answered and committed, then the server exits 0."""
    db = f"sqlite:///{tmp_path / 'tb.db'}"
    token = make_token(db, "op", "operator")
    server = Server(db, tmp_path / "data").start()
    with server.client(token) as c:
        names = register(c, fleet, "d", policy="workloadcompactor")
    answers: list[dict[str, Any]] = []
    answered: list[float] = []
    connected = threading.Barrier(len(names) + 1)

    def admit(name: str) -> None:
        with server.client(token) as c:
            c.json("GET", "/health")  # connected before the signal
            connected.wait()
            answers.append(c.admit("d", name))
            answered.append(time.monotonic())

    threads = [threading.Thread(target=admit, args=(n,)) for n in names]
    for t in threads:
        t.start()
    connected.wait()
    time.sleep(0.1)  # every request sent; nine decisions take longer than this
    signalled = time.monotonic()
    assert server.stop() == 0
    for t in threads:
        t.join(60)
    assert len(answers) == len(names), "an admission in flight was dropped"
    assert max(answered) > signalled, "admissions should have been in flight at SIGTERM"
    assert check(db, answers) == sum(a["admitted"] for a in answers)
