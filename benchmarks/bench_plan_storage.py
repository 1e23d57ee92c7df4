"""Bytes stored for ``--versions`` successive Plan versions of WorkloadCompactor admissions:
every version's whole text (the layout before migration 0003) against its skeleton's fields by
hash, its list of entry hashes (edits, or in full every ``plan_store.SNAPSHOT_EVERY``
versions) and the distinct entries (``tailbound.service.plan_store``), the JSON columns
measured as their JSON text (that each version reloads byte for byte is the tests' part).

Run: ``.venv/bin/python -m benchmarks.bench_plan_storage [--versions 300]``; ``--quick``: 40
versions (what the test suite runs).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

from tailbound.demo import write_fleet
from tailbound.model import cluster_from_json, tenant_from_json
from tailbound.profiles import SsdProfile
from tailbound.service import plan_store
from tailbound.service.engines import Context, check_options, new_engine
from tailbound.service.plans import PlanWriter
from tailbound.traces.fleet import demo_fleet


def run(n: int, folder: Path) -> None:
    write_fleet(demo_fleet(n, seed=1, duration_s=10.0), folder, servers=n // 4 + 5)
    cluster = cluster_from_json(json.loads((folder / "cluster.json").read_text()), "cluster")
    path = folder / "profile_ssd.json"
    profile = SsdProfile.from_json(json.loads(path.read_text()), path=str(path))
    options = check_options("workloadcompactor", {"mtu_bytes": 9000.0})
    engine = new_engine(Context("c", "workloadcompactor", cluster, profile, path, options))
    entries = json.loads((folder / "tenants.json").read_text())["tenants"]
    writer = PlanWriter()
    whole = stored = version = 0
    previous: list[str] | None = None
    known: set[str] = set()
    for entry in entries:
        out = engine.admit(tenant_from_json(entry, source="fleet", traces=folder))
        if not out.admitted or out.plan is None:
            continue
        version += 1
        engine = out.after
        plan = dataclasses.replace(out.plan, meta={**out.plan.meta, "version": version})
        skeleton, texts = writer.parts(plan)
        text = plan_store.join(skeleton, texts)
        hashes = [plan_store.entry_hash(t) for t in texts]
        record = plan_store.record(version, previous, hashes)
        kept, fields = plan_store.stored_skeleton(plan_store.skeleton_parts(skeleton))
        new = {
            h: t for h, t in [*zip(hashes, texts, strict=True), *fields.items()] if h not in known
        }
        known |= set(new)
        whole += len(text.encode())
        stored += len(kept) + len(json.dumps(record)) + 64  # the row's sha256
        stored += sum(64 + len(t.encode()) for t in new.values())
        previous = hashes
    print(f"{version} versions (WorkloadCompactor admissions, {n} tenants offered):\n")
    print("| layout | MB stored |\n|---|---:|")
    print(f"| every version's whole text (before migration 0003) | {whole / 1e6:.2f} |")
    print(f"| entries by hash + edits ({whole / stored:.0f}x less) | {stored / 1e6:.2f} |")


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--versions", type=int, default=300, help="tenants offered")
    p.add_argument("--quick", action="store_true", help="--versions 40")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tb-bench-storage-") as tmp:
        run(40 if args.quick else args.versions, Path(tmp))


if __name__ == "__main__":
    main(sys.argv[1:])
