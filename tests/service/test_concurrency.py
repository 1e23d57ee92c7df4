"""Concurrent admissions never over-admit (issue 27): 56 admissions race over HTTP for one
server's capacity, on SQLite and on PostgreSQL. The admitted set must be one the serial order
allows — each published version is what its predecessor decides, each rejection is what the
version it was decided against decides —, no tenant is admitted twice, every bound of the final
Plan is within its SLO, and ``tailbound verify`` replaying the final Plan finds every bound held."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from tests.service.harness import Demo, Server, demo, make_token, pg_database, register

from tailbound.model import tenant_from_json
from tailbound.plan import Plan
from tailbound.service import plan_store
from tailbound.service.admission import context_of
from tailbound.service.db import ClusterRow, DecisionRow, PlanRow, TenantRow, make_engine, sessions
from tailbound.service.engines import new_engine

RACERS = 56


@pytest.fixture(scope="module")
def crowd(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """56 workloads of 10 s for a cluster of one server: roughly a third fit."""
    return demo(tmp_path_factory.mktemp("crowd"), RACERS, servers=1, seed=3)


def race(server: Server, token: str, d: Demo) -> list[dict[str, Any]]:
    """Register every tenant, then admit all of them at once, one thread each."""
    with server.client(token) as c:
        names = register(c, d, "race", options={"mtu_bytes": 9000})
    barrier = threading.Barrier(len(names))

    def admit(name: str) -> dict[str, Any]:
        with server.client(token) as c:
            barrier.wait()
            return dict(c.admit("race", name))

    with ThreadPoolExecutor(len(names)) as pool:
        return list(pool.map(admit, names))


def check_serial(db: str, data: Path, answers: list[dict[str, Any]]) -> Plan:
    """The database's decisions against a serial replay (module docstring); the final Plan."""
    engine = make_engine(db)
    try:
        with sessions(engine)() as s:
            cluster = s.scalar(select(ClusterRow).where(ClusterRow.name == "race"))
            assert cluster is not None
            plans = list(
                s.scalars(
                    select(PlanRow)
                    .where(PlanRow.cluster_id == cluster.id)
                    .order_by(PlanRow.version)
                )
            )
            decisions = list(
                s.scalars(select(DecisionRow).where(DecisionRow.cluster_id == cluster.id))
            )
            tenants = {
                t.name: t
                for t in s.scalars(select(TenantRow).where(TenantRow.cluster_id == cluster.id))
            }
            texts = plan_store.version_texts(s, cluster.id, 1, cluster.version)
            context = context_of(cluster, data / "profiles-check")
    finally:
        engine.dispose()
    # every answer is recorded, once; the versions are 1..n, one per admission
    assert len(decisions) == len(answers) == RACERS
    admitted = [a for a in answers if a["admitted"]]
    assert 0 < len(admitted) < RACERS, "the race must be for the last capacity"
    assert sorted(a["published"] for a in admitted) == list(range(1, len(admitted) + 1))
    assert [p.version for p in plans] == list(range(1, len(admitted) + 1))
    assert len({p.tenant for p in plans}) == len(plans), "a tenant admitted twice"
    assert {a["tenant"] for a in admitted} == {p.tenant for p in plans}
    # the serial order: at each version, its rejections are rejected, then its successor admitted
    rejected_at: dict[int, list[str]] = {}
    for d in decisions:
        if not d.admitted:
            rejected_at.setdefault(d.based_on, []).append(d.tenant)
    traces = data / "traces"

    def tenant(name: str) -> Any:
        return tenant_from_json(tenants[name].document, source=name, traces=traces)

    engine_state = new_engine(context)
    for version in range(0, len(plans) + 1):
        for name in rejected_at.get(version, []):
            assert not engine_state.admit(tenant(name)).admitted, f"{name} rejected at v{version}"
        if version < len(plans):
            outcome = engine_state.admit(tenant(plans[version].tenant))
            assert outcome.admitted, f"{plans[version].tenant} admitted as v{version + 1}"
            engine_state = outcome.after
            assert outcome.plan is not None
            stored = Plan.from_json(json.loads(texts[version + 1]))
            assert [t.name for t in stored.tenants] == [t.name for t in outcome.plan.tenants]
    final = Plan.from_json(json.loads(texts[len(plans)]))
    for t in final.tenants:
        assert t.bound is not None and t.bound.latency_s <= t.slo_s, t.name
    return final


def verify(plan_text: str, folder: Path) -> None:
    """``tailbound verify`` on the final Plan: every SLO met and every bound held (exit 0)."""
    path = folder / "final-plan.json"
    path.write_text(plan_text)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tailbound.cli.main",
            "verify",
            "--plan",
            str(path),
            "--mtu",
            "9000",
            "--out",
            str(folder / "verify"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def run_race(db: str, tmp_path: Path, crowd: Demo) -> None:
    token = make_token(db, "op", "operator")
    data = tmp_path / "data"
    server = Server(db, data).start()
    try:
        answers = race(server, token, crowd)
        with server.client(token) as c:
            _, document = c.plan("race")
            text = c.call("GET", "/clusters/race/plans/current").text
            metrics = c.call("GET", "/metrics").text
    finally:
        assert server.stop() == 0
    assert document["meta"]["version"] == sum(a["admitted"] for a in answers)
    assert (
        f'tailbound_plan_version{{cluster="race"}} {float(document["meta"]["version"])}' in metrics
    )
    check_serial(db, data, answers)
    verify(text, tmp_path)


def test_racing_admissions_sqlite(tmp_path: Path, crowd: Demo) -> None:
    run_race(f"sqlite:///{tmp_path / 'tb.db'}", tmp_path, crowd)


def test_racing_admissions_postgresql(tmp_path: Path, crowd: Demo, postgres: str) -> None:
    run_race(pg_database(postgres), tmp_path, crowd)
