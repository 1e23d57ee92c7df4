"""One control-plane decision's O(tenants) work at ``--tenants`` admitted, before and after the
incremental shortcuts (docs/service.md, "Load benchmark"), in one process on the same engine:

- the copy of the placer a decision works on: ``copy.deepcopy`` (before) against
  ``Placer.fork`` (after);
- the Plan: ``workloadcompactor.to_plan`` recomputing every server's entries and bounds (before)
  against its ``memo`` reusing the unchanged servers' (after);
- the Plan's text: ``plan_text`` encoding every entry (before) against ``PlanWriter`` reusing the
  unchanged entries' text (after); the two texts are checked equal;
- the stored list of entry hashes (``plan_store``): every entry hashed and the edits matched over
  the whole lists (before) against each entry hashed once by ``PlanWriter`` and the matcher run
  on the changed middle only (after);
- the joined text and its SHA-256, the ETag: kept, the same work both ways (measured once);
- the part of the server the newcomer joined: ``part_text`` of the whole Plan document (before)
  against ``host_parts.cut`` from the entries, each entry's hosts computed once (after; the
  version's skeleton fields are read once per version for all hosts, outside the time); the
  two parts are checked equal byte for byte.

Medians over six WorkloadCompactor admissions onto a demo fleet of 10 s traces (``tenants / 4 +
5`` servers, MTU 9000); building the fleet characterises every tenant first (minutes at 1,000).

Run: ``.venv/bin/python -m benchmarks.bench_decision [--tenants 300]``; ``--quick``: 20 tenants
(what the test suite runs).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import difflib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tailbound.demo import write_fleet
from tailbound.model import cluster_from_json, tenant_from_json
from tailbound.plan import VERSION
from tailbound.policies.workloadcompactor import to_plan
from tailbound.profiles import SsdProfile
from tailbound.service import plan_store
from tailbound.service.engines import Context, PlacementEngine, check_options, new_engine
from tailbound.service.host_parts import cut, entry_hosts
from tailbound.service.plans import PlanWriter, part_text, plan_text, sha256
from tailbound.traces.fleet import demo_fleet

#: The steps' names in the table.
LABELS = {
    "copy": "copy of the placer",
    "to_plan": "`to_plan` with the inputs",
    "text": "the Plan's entries' text",
    "lists": "entry hashes and the stored list's edits",
    "join_sha256": "joined text and its SHA-256 (the ETag; kept)",
    "host_part": "the new server's part and its ETag",
}


def whole_list_edits(before: list[str], after: list[str]) -> list[list[Any]]:
    """The stored list's edits as they were computed before: the matcher over the whole lists."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return [
        [i1, i2, list(after[j1:j2])]
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


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
    previous = list(writer.hashes)
    hosts: dict[str, tuple[str, frozenset[str]]] = {}  # HostParts' cache of entries' hosts
    steps = ("copy", "to_plan", "text", "lists", "join_sha256", "host_part")
    before: dict[str, list[float]] = {k: [] for k in steps}
    after: dict[str, list[float]] = {k: [] for k in steps}
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
        skeleton_before, texts_before = plan_store.split(text_before)
        b = time.perf_counter()
        skeleton, texts = writer.parts(plan_after)
        c = time.perf_counter()
        before["text"].append(b - a)
        after["text"].append(c - b)
        assert (skeleton, texts) == (skeleton_before, texts_before), "the entries differ"
        # the lists of entry hashes stored: every entry hashed and the whole lists matched
        # (before), against the hashes PlanWriter kept and the edits of the changed middle
        a = time.perf_counter()
        hashes_before = [plan_store.entry_hash(t) for t in texts_before]
        edits_before = whole_list_edits(previous, hashes_before)
        b = time.perf_counter()
        edits_after = plan_store.edits(previous, writer.hashes)
        c = time.perf_counter()
        before["lists"].append(b - a)
        after["lists"].append(c - b)
        assert plan_store.apply(previous, edits_before) == hashes_before == writer.hashes
        assert plan_store.apply(previous, edits_after) == writer.hashes
        previous = list(writer.hashes)
        # the published text and its SHA-256, the ETag (kept: the same work both ways)
        a = time.perf_counter()
        text_after = plan_store.join(skeleton, texts)
        sha256(text_after)
        b = time.perf_counter()
        before["join_sha256"].append(b - a)
        after["join_sha256"].append(b - a)
        assert text_before == text_after, "the incremental Plan text differs"
        size = len(text_after)
        # the part of the server the newcomer joined: cut from the whole Plan (before) or
        # from the entries, each entry's hosts computed once (after; host_parts)
        host = cluster.servers[new.where[t.name]].name
        fields = plan_store.skeleton_parts(skeleton)  # read once per version, for every host
        a = time.perf_counter()
        part_before = part_text(json.loads(text_before), host)
        b = time.perf_counter()
        for h, entry in zip(writer.hashes, texts, strict=True):
            if h not in hosts:
                hosts[h] = entry_hosts(entry, VERSION)
        on = [hosts[h] for h in writer.hashes]
        mine = [e for e, (_, where) in zip(texts, on, strict=True) if host in where]
        part_after = cut(fields, on, mine, host, None)
        c = time.perf_counter()
        before["host_part"].append(b - a)
        after["host_part"].append(c - b)
        assert part_before == part_after, "the host's part differs"
        engine = dataclasses.replace(engine, placer=new, tenants=named)
    print(
        f"{len(engine.admitted())} admitted, Plan {size / 1e6:.2f} MB; medians of "
        f"{len(before['copy'])} decisions:\n"
    )
    print("| step | before ms | after ms |\n|---|---:|---:|")
    for k in before:
        print(f"| {LABELS[k]} | {statistics.median(before[k]) * 1e3:.1f} |", end=" ")
        print(f"{statistics.median(after[k]) * 1e3:.1f} |")
    total_b = sum(statistics.median(v) for v in before.values()) * 1e3
    total_a = sum(statistics.median(v) for v in after.values()) * 1e3
    print(f"| total | {total_b:.1f} | {total_a:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
