"""Placement end to end: WorkloadCompactor on the wc62 reference run, and at scale.

1. wc62 from the raw traces: read the 62 traces, build the 186 r-b curves (numpy rbGen on the
   WorkloadCompactor grid, pruned to 12 segments), and place with the LP (first-fit and
   fast-first-fit). Compared with the WorkloadCompactor system's own figures (data/README.md):
   ~390 s in all, mostly curves; LP + placement ~1.3 s (~0.8 s fast-first-fit); 11 servers.
2. Synthetic tenants (resampled wc62 curves scaled by 0.8–1.2 with random SLOs from Fig. 5.4's
   set, each meeting its SLO alone) placed with fast-first-fit; the target is 10,000 tenants in
   under 60 s. The same run places a smaller set with plain first-fit for the ratio. Besides
   the wall-clock seconds the table gives the placement's CPU seconds (the machine is shared),
   the LPs solved, and the servers skipped without an LP: proved infeasible by the cluster
   screen ("screened") or by an infeasibility certificate kept from an earlier LP ("certified").

Run: ``.venv/bin/python -m benchmarks.bench_place [--tenants 10000] [--first-fit 300]``;
``--quick``: the wc62 run and ``--tenants 300 --first-fit 50`` (what the test suite runs).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from tailbound.experiments.wc_common import FIG54_SLOS, find_wc62, resample, server_cluster
from tailbound.model import load_cluster, load_tenants
from tailbound.policies.placement import WorkloadCompactorPolicy, place
from tailbound.policies.workload import characterize_all
from tailbound.profiles import SsdProfile
from tailbound.traces.readers import read_trace

REFERENCE_TOTAL_S = 390.0
REFERENCE_PLACEMENT_S = 1.3
REFERENCE_FFF_S = 0.8
REFERENCE_SERVERS = 11
TARGET_SYNTHETIC_S = 60.0
#: 10,000 tenants before the cluster screen and the certificates (benchmarks/README.md).
BEFORE_SYNTHETIC_S = 765.3


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=10_000)
    p.add_argument("--first-fit", type=int, default=300)
    p.add_argument("--quick", action="store_true", help="--tenants 300 --first-fit 50")
    args = p.parse_args(argv if argv is not None else [])
    if args.quick:
        args.tenants, args.first_fit = 300, 50
    data = find_wc62()
    configs = load_tenants(data / "tenants.json").tenants
    cluster = load_cluster(data / "cluster.json")
    profile = SsdProfile.load(data / "profile_ssd.json")

    start = time.perf_counter()
    traces = {c.name: read_trace(c.trace) for c in configs}
    read_s = time.perf_counter() - start
    workloads = characterize_all(
        configs,
        lambda c: traces[c.name],
        profile=profile,
        link_bandwidth_bytes_per_s=cluster.link_bytes_per_s,
    )
    curves_s = time.perf_counter() - start - read_s
    ff = place(workloads, cluster, WorkloadCompactorPolicy())
    fff = place(workloads, cluster, WorkloadCompactorPolicy(), fast_first_fit=True)
    total_s = time.perf_counter() - start

    print("| wc62 reference run | tailbound | reference | ratio |")
    print("|---|---|---|---|")
    print(f"| read 62 traces (s) | {read_s:.2f} | | |")
    print(f"| 186 r-b curves (s) | {curves_s:.1f} | | |")
    print(
        f"| LP + first-fit (s) | {ff.seconds:.2f} | {REFERENCE_PLACEMENT_S} | "
        f"{ff.seconds / REFERENCE_PLACEMENT_S:.2f}× |"
    )
    print(
        f"| LP + fast-first-fit (s) | {fff.seconds:.2f} | {REFERENCE_FFF_S} | "
        f"{fff.seconds / REFERENCE_FFF_S:.2f}× |"
    )
    print(
        f"| end to end, both placements (s) | {total_s:.1f} | {REFERENCE_TOTAL_S:.0f} | "
        f"{total_s / REFERENCE_TOTAL_S:.2f}× |"
    )
    print(
        f"| servers (first-fit / fast-first-fit) | {ff.servers_used} / {fff.servers_used} | "
        f"{REFERENCE_SERVERS} | |"
    )
    sys.stdout.flush()

    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    synthetic = resample(workloads, args.tenants, rng, slos=FIG54_SLOS, scale=(0.8, 1.2))
    prepare_s = time.perf_counter() - t0
    policy = WorkloadCompactorPolicy()
    cpu = time.process_time()
    big = place(synthetic, server_cluster(), policy, fast_first_fit=True, grow=True)
    big_cpu = time.process_time() - cpu
    small_fff_policy = WorkloadCompactorPolicy()
    small_fff = place(
        synthetic[: args.first_fit],
        server_cluster(),
        small_fff_policy,
        fast_first_fit=True,
        grow=True,
    )
    small_ff = place(
        synthetic[: args.first_fit], server_cluster(), WorkloadCompactorPolicy(), grow=True
    )
    print()
    print(
        "| synthetic tenants | tenants | servers | seconds (CPU) | LPs solved | screened | "
        "certified | vs |"
    )
    print("|---|---|---|---|---|---|---|---|")
    vs = f"target {TARGET_SYNTHETIC_S:.0f} s: {big.seconds / TARGET_SYNTHETIC_S:.2f}×"
    if args.tenants == 10_000:
        vs += f"; before: {BEFORE_SYNTHETIC_S / big.seconds:.1f}× faster"
    print(
        f"| fast-first-fit | {args.tenants} | {big.servers_used} | {big.seconds:.1f} "
        f"({big_cpu:.1f}) | {policy.lp_solves} | {big.cluster_screened} | {big.certified} | "
        f"{vs} |"
    )
    print(
        f"| fast-first-fit | {args.first_fit} | {small_fff.servers_used} | "
        f"{small_fff.seconds:.1f} | {small_fff_policy.lp_solves} | "
        f"{small_fff.cluster_screened} | {small_fff.certified} | "
        f"first-fit {small_ff.seconds / small_fff.seconds:.1f}× slower |"
    )
    print(
        f"| first-fit | {args.first_fit} | {small_ff.servers_used} | {small_ff.seconds:.1f} "
        "| | | | |"
    )
    print(f"\n(preparing {args.tenants} synthetic tenants, each checked alone: {prepare_s:.1f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
