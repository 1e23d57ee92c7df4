"""A restarted server's time to its first decision on a cluster with a history, before (every
published version replayed in order) and after (the engine loaded from its latest snapshot:
:mod:`tailbound.service.engine_snapshots`), and what the snapshots cost (docs/service.md,
"Restart cost").

On a database holding a cluster's history (built here: a demo fleet of ``--tenants`` 10 s
workloads admitted one by one through the service's :class:`~tailbound.service.admission
.Decider`, on ``tenants / 4 + 5`` servers under ``--policy``, WorkloadCompactor at MTU 9000 by
default; or any database, with :func:`measure`, which ``bench_service`` calls after its serial
run), a new ``Decider`` — what a restarted ``tailbound serve`` builds — brings the cluster's
engine to its current version and computes the next decision (the departure of the last tenant
admitted: not committed, so both ways decide on the same state), once replaying and once from
the snapshot; the two decisions' Plans are checked equal byte for byte (every policy:
SNC-Meister's snapshots hold its bounds). The process's caches (r-b curves' LP blocks) are
cleared before each way. Then the snapshots' cost: their rows' bytes (full and changes), the
curve texts they name, and the time to make a full snapshot and a change at the final state.

Run: ``.venv/bin/python -m benchmarks.bench_restart [--tenants 300] [--policy snc-meister]``;
``--quick``: 12 tenants of 5 s (what the test suite runs); ``--format-1``: the snapshots
loaded as format 1 stored them (SNC-Meister's bounds unknown: the behaviour before format 2),
the Plans' largest relative difference printed instead of asserted.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from tailbound.demo import write_fleet
from tailbound.policies import registry
from tailbound.policies.partitioned import forget_tenant_caches
from tailbound.service import engine_snapshots
from tailbound.service.admission import Decider
from tailbound.service.db import (
    ClusterRow,
    EngineSnapshotRow,
    PlanEntryRow,
    PlanRow,
    TenantRow,
    make_engine,
    sessions,
)
from tailbound.service.engine_snapshots import Loaded, SnapshotWriter
from tailbound.service.metrics import Metrics
from tailbound.service.migrate import upgrade
from tailbound.service.plans import plan_text
from tailbound.traces.fleet import demo_fleet


def first_decision(
    db: str, data: Path, cluster: str, *, replay: bool
) -> tuple[float, float, str, float]:
    """A new Decider's seconds to bring ``cluster``'s engine to its current version, then to
    compute the departure of its last admitted tenant, that decision's Plan text, and the
    process's CPU seconds to the engine (``time.process_time``: the machine is shared);
    ``replay``: ignoring the snapshots."""
    engine = make_engine(db)
    real = engine_snapshots.load
    logging.getLogger("tailbound.service").setLevel(logging.ERROR)  # the replay's warning
    if replay:
        engine_snapshots.load = lambda *a, **k: Loaded(0, None, ["ignored (bench_restart)"])
    try:
        forget_tenant_caches()
        decider = Decider(sessions(engine), data / "traces", data / "profiles", Metrics())
        start, cpu = time.perf_counter(), time.process_time()
        with decider.sessions() as s:
            row = s.scalar(select(ClusterRow).where(ClusterRow.name == cluster))
            assert row is not None, cluster
            _, current = decider.engine(s, row)
        ready, cpu = time.perf_counter(), time.process_time() - cpu
        last = current.admitted()[-1]
        outcome = current.depart(last)
        done = time.perf_counter()
        assert outcome.plan is not None
        return ready - start, done - ready, plan_text(outcome.plan), cpu
    finally:
        engine_snapshots.load = real
        engine.dispose()


def costs(db: str, cluster: str) -> dict[str, float]:
    """The snapshots' rows by kind (count, mean bytes), the bytes of the curve texts they name."""
    engine = make_engine(db)
    out: dict[str, float] = {}
    try:
        with sessions(engine)() as s:
            cid = s.scalar(select(ClusterRow.id).where(ClusterRow.name == cluster))
            for kind in ("full", "delta"):
                size_of = func.coalesce(func.sum(func.length(EngineSnapshotRow.state)), 0)
                n, size = s.execute(
                    select(func.count(), size_of).where(
                        EngineSnapshotRow.cluster_id == cid, EngineSnapshotRow.kind == kind
                    )
                ).one()
                out[f"{kind}_rows"], out[f"{kind}_bytes"] = n, size / max(n, 1)
            latest = s.scalar(
                select(EngineSnapshotRow.state)
                .where(EngineSnapshotRow.cluster_id == cid, EngineSnapshotRow.kind == "full")
                .order_by(EngineSnapshotRow.version.desc())
                .limit(1)
            )
            hashes = list(json.loads(latest).get("curves", {}).values()) if latest else []
            first = hashes[:900]
            texts = s.scalars(select(PlanEntryRow.text).where(PlanEntryRow.sha256.in_(first)))
            sizes = [len(t) for t in texts]
            out["curve_bytes"] = statistics.mean(sizes) if sizes else 0.0
            out["versions"] = s.scalar(select(func.count()).where(PlanRow.cluster_id == cid)) or 0
    finally:
        engine.dispose()
    return out


def write_cost(db: str, data: Path, cluster: str) -> tuple[float, float, int, int]:
    """Milliseconds and bytes of a full snapshot and of a change (the last tenant's departure)
    at the cluster's current state (medians of five)."""
    engine = make_engine(db)
    try:
        decider = Decider(sessions(engine), data / "traces", data / "profiles", Metrics())
        with decider.sessions() as s:
            row = s.scalar(select(ClusterRow).where(ClusterRow.name == cluster))
            assert row is not None
            _, current = decider.engine(s, row)
        after = current.depart(current.admitted()[-1], plan=False).after
        full, change = [], []
        sizes = (0, 0)
        for _ in range(5):
            writer = SnapshotWriter()
            a = time.perf_counter()
            f = writer.snapshot(1, current, after, "depart", "x")  # version 1: full
            b = time.perf_counter()
            writer.base = 1
            d = writer.snapshot(2, current, after, "depart", "x")  # a change from version 1
            c = time.perf_counter()
            assert f is not None and d is not None and d.kind == "delta"
            full.append(b - a)
            change.append(c - b)
            sizes = (len(f.state), len(d.state))
        return statistics.median(full) * 1e3, statistics.median(change) * 1e3, *sizes
    finally:
        engine.dispose()


def largest_difference(a: Any, b: Any) -> float:
    """The largest relative difference between the numbers of two JSON documents of the same
    shape (``inf`` if their shapes or other values differ)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return float("inf")
        return max((largest_difference(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return float("inf")
        return max((largest_difference(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    if isinstance(a, float) and isinstance(b, float) and a != b:
        return abs(a - b) / max(abs(a), abs(b))
    return 0.0 if a == b else float("inf")


def as_format_1(db: str, cluster: str) -> None:
    """Rewrite ``cluster``'s snapshot rows as format 1 wrote them (no SNC-Meister bounds), their
    hashes fixed: what a server that loads snapshots written before format 2 restores."""
    engine = make_engine(db)
    try:
        with sessions(engine).begin() as s:
            cid = s.scalar(select(ClusterRow.id).where(ClusterRow.name == cluster))
            for row in s.scalars(
                select(EngineSnapshotRow).where(EngineSnapshotRow.cluster_id == cid)
            ):
                doc = json.loads(row.state)
                doc["format"] = 1
                doc.pop("bounds", None)
                doc.pop("bound_changes", None)
                row.state = engine_snapshots._text(doc)
                row.sha256 = engine_snapshots.sha256(row.state)
    finally:
        engine.dispose()


def measure(db: str, data: Path, cluster: str, *, exact: bool = True) -> dict[str, Any]:
    """Restart to first decision both ways, and the snapshots' costs, on ``cluster`` of ``db``
    (``data``: the server's ``--data``); ``exact``: assert the two decisions' Plans equal byte
    for byte (otherwise ``difference`` is their numbers' largest relative difference)."""
    replay_ready, replay_decide, replay_text, replay_cpu = first_decision(
        db, data, cluster, replay=True
    )
    load_ready, load_decide, load_text, load_cpu = first_decision(db, data, cluster, replay=False)
    if exact:
        # byte for byte, every policy (SNC-Meister's bounds are in its snapshots)
        assert load_text == replay_text, "the loaded engine decides otherwise than the replayed one"
    full_ms, change_ms, full_b, change_b = write_cost(db, data, cluster)
    return {
        "equal": load_text == replay_text,
        "difference": largest_difference(json.loads(load_text), json.loads(replay_text)),
        "replay_s": replay_ready,
        "replay_decide_s": replay_decide,
        "load_s": load_ready,
        "load_decide_s": load_decide,
        "replay_cpu_s": replay_cpu,
        "load_cpu_s": load_cpu,
        "full_ms": full_ms,
        "change_ms": change_ms,
        "full_now_bytes": full_b,
        "change_now_bytes": change_b,
        **costs(db, cluster),
    }


def table(m: dict[str, Any], tenants: int) -> str:
    """The Markdown rows of :func:`measure`'s figures."""
    return "\n".join(
        [
            "| tenants admitted | versions | restart to engine, replay / snapshot s "
            "| same, CPU s | first decision after, replay / snapshot s "
            "| full snapshot: bytes, ms | change: bytes, ms | curve text bytes per tenant |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {tenants} | {m['versions']:.0f} | {m['replay_s']:.2f} / {m['load_s']:.3f} "
            f"| {m['replay_cpu_s']:.2f} / {m['load_cpu_s']:.3f} "
            f"| {m['replay_decide_s']:.2f} / {m['load_decide_s']:.2f} "
            f"| {m['full_now_bytes']:.0f}, {m['full_ms']:.1f} "
            f"| {m['change_now_bytes']:.0f}, {m['change_ms']:.2f} | {m['curve_bytes']:.0f} |",
        ]
    )


def build(
    n: int, root: Path, duration_s: float, policy: str = "workloadcompactor"
) -> tuple[str, Path, int]:
    """A database with a cluster ``c`` under ``policy`` (WorkloadCompactor by default, MTU 9000)
    of a demo fleet's ``n`` tenants, each admitted in turn through a Decider; its URL, data
    folder and the tenants admitted."""
    folder = root / "fleet"
    write_fleet(demo_fleet(n, seed=1, duration_s=duration_s), folder, servers=n // 4 + 5)
    db = f"sqlite:///{root / 'tb.db'}"
    upgrade(db)
    engine = make_engine(db)
    data = root / "data"
    entries = json.loads((folder / "tenants.json").read_text())["tenants"]
    with sessions(engine).begin() as s:
        row = ClusterRow(
            name="c",
            policy=policy,
            document=json.loads((folder / "cluster.json").read_text()),
            profile=json.loads((folder / "profile_ssd.json").read_text()),
            # MTU 9000 for a placement policy (an admission policy takes no such option)
            options={"mtu_bytes": 9000.0} if registry.find(policy).kind == "placement" else {},
        )
        s.add(row)
        s.flush()
        for e in entries:
            s.add(TenantRow(cluster_id=row.id, name=e["name"], document=e))
    # the traces where a server keeps them (the entries name them relative to the fleet)
    (data / "traces").mkdir(parents=True)
    (data / "traces" / "traces").symlink_to(folder / "traces")
    decider = Decider(sessions(engine), data / "traces", data / "profiles", Metrics())
    admitted = sum(decider.admit("c", e["name"]).admitted for e in entries)
    engine.dispose()
    return db, data, admitted


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=300)
    p.add_argument(
        "--policy",
        default="workloadcompactor",
        help="the cluster's policy (a placement policy, snc-meister, nested-qos, ...)",
    )
    p.add_argument("--quick", action="store_true", help="12 tenants of 5 s")
    p.add_argument(
        "--format-1",
        action="store_true",
        help="load the snapshots as format 1 stored them (no SNC-Meister bounds: the behaviour "
        "before format 2); the Plans' difference is printed, not asserted",
    )
    args = p.parse_args(argv)
    n, duration = (12, 5.0) if args.quick else (args.tenants, 10.0)
    with tempfile.TemporaryDirectory(prefix="tb-bench-restart-") as tmp:
        start = time.perf_counter()
        db, data, admitted = build(n, Path(tmp), duration, args.policy)
        print(f"history built in {time.perf_counter() - start:.0f} s ({admitted} admitted)\n")
        if args.format_1:
            as_format_1(db, "c")
        found = measure(db, data, "c", exact=not args.format_1)
        print(table(found, admitted))
        print(
            f"\nPlans after the restart, loaded against replayed: "
            f"{'equal byte for byte' if found['equal'] else 'different'} "
            f"(largest relative difference {found['difference']:.3g})"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
