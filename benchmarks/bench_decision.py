"""One control-plane decision's O(tenants) work at ``--tenants`` admitted, before and after the
incremental shortcuts (docs/service.md, "Load benchmark"), in one process on the same engine:

- the copy of the placer a decision works on: ``copy.deepcopy`` (before) against
  ``Placer.fork`` (after);
- the Plan: ``workloadcompactor.to_plan`` recomputing every server's entries and bounds (before)
  against its ``memo`` reusing the unchanged servers' (after);
- the Plan's text: ``plan_text`` encoding every entry (before) against ``PlanWriter`` reusing the
  unchanged entries' text (after); the two texts are checked equal.

Medians over six WorkloadCompactor admissions onto a demo fleet of 10 s traces (``tenants / 4 +
5`` servers, MTU 9000); building the fleet characterises every tenant first (minutes at 1,000).

Run: ``.venv/bin/python -m benchmarks.bench_decision [--tenants 300]``; ``--quick``: 20 tenants
(what the test suite runs).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tailbound.demo import write_fleet
from tailbound.model import cluster_from_json, tenant_from_json
from tailbound.policies.workloadcompactor import to_plan
from tailbound.profiles import SsdProfile
from tailbound.service.engines import Context, PlacementEngine, check_options, new_engine
from tailbound.service.plans import PlanWriter, plan_text
from tailbound.traces.fleet import demo_fleet


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=300)
    p.add_argument("--quick", action="store_true", help="--tenants 20")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tb-bench-decision-") as tmp:
        run(20 if args.quick else args.tenants, Path(tmp))


def run(n: int, folder: Path) -> None:
    write_fleet(demo_fleet(n + 10, seed=1, duration_s=10.0), folder, servers=n // 4 + 5)
    cluster = cluster_from_json(json.loads((folder / "cluster.json").read_text()), "cluster")
    path = folder / "profile_ssd.json"
    profile = SsdProfile.from_json(json.loads(path.read_text()), path=str(path))
    options = check_options("workloadcompactor", {"mtu_bytes": 9000.0})
    context = Context("c", "workloadcompactor", cluster, profile, path, options)
    engine = new_engine(context)
    assert isinstance(engine, PlacementEngine)
    entries = json.loads((folder / "tenants.json").read_text())["tenants"]
    tenants = [tenant_from_json(t, source="fleet", traces=folder) for t in entries]
    for t in tenants[:n]:
        out = engine.admit(t, plan=False)
        if out.admitted:
            assert isinstance(out.after, PlacementEngine)
            engine = out.after
    writer = PlanWriter()
    writer.text(engine._plan(engine.placer, engine.tenants))  # the previous version's
    before: dict[str, list[float]] = {"copy": [], "to_plan": [], "text": []}
    after: dict[str, list[float]] = {"copy": [], "to_plan": [], "text": []}
    size = 0
    for t in tenants[n:]:
        workload = engine._curves(t)
        a = time.perf_counter()
        memo = {id(w): w for w in context.curves.values()}
        memo[id(cluster)] = cluster
        old = copy.deepcopy(engine.placer, memo)
        b = time.perf_counter()
        new = engine.placer.fork()
        c = time.perf_counter()
        if old.add(workload) is None or new.add(workload) is None:
            continue
        before["copy"].append(b - a)
        after["copy"].append(c - b)
        named = {**engine.tenants, t.name: t}
        a = time.perf_counter()
        full = to_plan(old.result(0.0), cluster, policy="workloadcompactor", safety_margin=1.0)
        plan_before = context.plan_of(full, named)
        b = time.perf_counter()
        memoised = to_plan(
            new.result(0.0),
            cluster,
            policy="workloadcompactor",
            safety_margin=1.0,
            memo=context.plan_memo,
        )
        plan_after = context.plan_of(memoised, named)
        c = time.perf_counter()
        before["to_plan"].append(b - a)
        after["to_plan"].append(c - b)
        a = time.perf_counter()
        text_before = plan_text(plan_before)
        b = time.perf_counter()
        text_after = writer.text(plan_after)
        c = time.perf_counter()
        before["text"].append(b - a)
        after["text"].append(c - b)
        assert text_before == text_after, "the incremental Plan text differs"
        size = len(text_after)
        engine = dataclasses.replace(engine, placer=new, tenants=named)
    print(
        f"{len(engine.admitted())} admitted, Plan {size / 1e6:.2f} MB; medians of "
        f"{len(before['copy'])} decisions:\n"
    )
    print("| step | before ms | after ms |\n|---|---:|---:|")
    for k in before:
        print(f"| {k} | {statistics.median(before[k]) * 1e3:.1f} |", end=" ")
        print(f"{statistics.median(after[k]) * 1e3:.1f} |")
    total_b = sum(statistics.median(v) for v in before.values()) * 1e3
    total_a = sum(statistics.median(v) for v in after.values()) * 1e3
    print(f"| total | {total_b:.1f} | {total_a:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
