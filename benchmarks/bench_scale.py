"""Beyond one process (issue 30): 10⁵ tenants placed in partitions, and sweeps on 1, 2, 4 workers.

1. **Placement at scale.** Synthetic tenants (wc62 curves resampled, scaled by 0.8–1.2, SLOs from
   Fig. 5.4's set, each meeting its SLO alone: ``wc_common.resample``), generated in seeded
   chunks on the runner and timed apart from the placement. WorkloadCompactor with
   fast-first-fit places them (a) in one process, for the sizes where that finishes in
   reasonable time, and (b) in partitions of ``--partition`` tenants on a local pool of
   ``--jobs`` processes, each partition trying only its last ``--window`` servers (bounded
   first-fit, :class:`~tailbound.policies.placement.Placer`), reconciled
   (:mod:`tailbound.policies.partitioned`). The table gives
   the wall-clock seconds, the CPU seconds the partitions took in their workers (the machine is
   shared: CPU time is the load-independent measure), the servers used and their excess over
   the single placement.
2. **Speed-up with workers.** A ``LocalCluster`` of 1, 2 and 4 worker processes (one thread
   each) runs the soundness sweep (``bound_sweep`` scenarios) and the characterisation of the
   62 wc62 traces at three stages (``tailbound characterize``'s fleet task); the table gives the
   wall-clock time, the speed-up over one worker and each worker's resident memory after the
   run.

Run: ``.venv/bin/python -m benchmarks.bench_scale [--tenants 100000] [--single 10000]
[--partition 2000] [--window 16] [--jobs 2] [--scenarios 24]``; ``--quick`` (every path on small
inputs, ~15 s idle, ~45 s at load 10): 1,000 tenants, 4 scenarios, 12 traces, 1 and 2 workers.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.cli.characterize_fleet import Options, characterize_one
from tailbound.executor import Runner
from tailbound.experiments.bound_sweep import run_seed
from tailbound.experiments.wc_common import (
    FIG54_SLOS,
    find_wc62,
    load_wc62,
    resample,
    server_cluster,
)
from tailbound.model import load_tenants
from tailbound.policies.partitioned import place_partitioned
from tailbound.policies.placement import WorkloadCompactorPolicy, place
from tailbound.policies.workload import TenantCurves
from tailbound.profiles import SsdProfile, stage_model
from tailbound.stages import STORAGE_PATH

#: Issue 30's targets: 10⁵ tenants in under 60 s, servers within 5 % of one placement.
TARGET_S = 60.0
TARGET_EXCESS = 0.05
#: Synthetic tenants generated per task.
CHUNK = 5000


def _generate(pool: list[TenantCurves], task: tuple[int, int]) -> list[TenantCurves]:
    """Chunk ``k`` of ``count`` synthetic tenants, seeded by ``k`` (a runner's task); names made
    unique by the chunk."""
    k, count = task
    made = resample(pool, count, np.random.default_rng([30, k]), slos=FIG54_SLOS, scale=(0.8, 1.2))
    return [TenantCurves(f"c{k}.{w.name}", w.slo, w.curves, w.largest) for w in made]


def synthetic(pool: list[TenantCurves], count: int, runner: Runner) -> list[TenantCurves]:
    """``count`` synthetic tenants in chunks of :data:`CHUNK` (the same tenants on any runner)."""
    tasks = [(k, min(CHUNK, count - k * CHUNK)) for k in range((count + CHUNK - 1) // CHUNK)]
    return [w for part in runner.map(_generate, tasks, shared=pool) for w in part]


def _rss(_: Any = None) -> int:
    """This process's resident memory (bytes)."""
    import psutil

    return int(psutil.Process().memory_info().rss)


def placement(args: argparse.Namespace) -> None:
    data = find_wc62()
    pool, _ = load_wc62(data, Path("out/cache/wc62_curves.json"))
    runner = Runner(jobs=args.jobs)
    start = time.perf_counter()
    tenants = synthetic(pool, args.tenants, runner)
    generate_s = time.perf_counter() - start
    print(
        f"generated {len(tenants)} synthetic tenants (each checked alone) in {generate_s:.1f} s "
        f"on {runner.describe()}\n"
    )
    print(
        "| tenants | placement | partitions | wall (s) | CPU in partitions (s) | servers | "
        "vs single | reconcile (s) | tail saved |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    sizes = sorted({min(args.single, args.tenants), args.tenants})
    for n in sizes:
        fleet = tenants[:n]
        single = None
        if n <= args.single:
            cpu = time.process_time()
            single = place(
                fleet, server_cluster(), WorkloadCompactorPolicy(), fast_first_fit=True, grow=True
            )
            print(
                f"| {n} | one process | 1 | {single.seconds:.1f} | "
                f"{time.process_time() - cpu:.1f} | {single.servers_used} | | | |"
            )
        parts = max(1, n // args.partition)
        how = "" if args.window is None else f", window {args.window}"
        start = time.perf_counter()
        out = place_partitioned(
            fleet,
            server_cluster(),
            WorkloadCompactorPolicy,
            partitions=parts,
            runner=runner,
            grow=True,
            window=args.window,
        )
        wall = time.perf_counter() - start
        used = out.result.servers_used
        vs = f"{100 * (used / single.servers_used - 1):+.2f} %" if single is not None else ""
        goal = f" (target {TARGET_S:.0f} s)" if n >= 100_000 else ""
        print(
            f"| {n} | {parts} partitions{how}, {runner.describe()} | {parts} | {wall:.1f}{goal} | "
            f"{out.cpu_s:.1f} | {used} | {vs} | {out.reconcile_s:.2f} | {out.tail_saved} |"
        )
        sys.stdout.flush()


def speedup(args: argparse.Namespace) -> None:
    from distributed import Client, LocalCluster

    data = find_wc62().parent
    wc62 = data / "wc62"
    profile = SsdProfile.load(wc62 / "profile_ssd.json")
    link = 125e6
    models = {
        s: stage_model(s, link_bandwidth_bytes_per_s=link, profile=profile) for s in STORAGE_PATH
    }
    options = Options(models, None, False, 1.0, None, 12, 1.0, 1)
    traces = [(Path(t.trace), None) for t in load_tenants(wc62 / "tenants.json").tenants]
    traces = traces[: args.traces]
    seeds = list(range(args.scenarios))
    jobs: dict[str, tuple[Any, list[Any], Any]] = {
        f"soundness sweep, {len(seeds)} scenarios": (run_seed, seeds, (profile, data, "tighter")),
        f"characterisation, {len(traces)} wc62 traces × 3 stages": (
            characterize_one,
            traces,
            options,
        ),
    }
    print(
        "\n| job | workers | wall (s) | speed-up | RSS per worker (MB) |\n|---|---:|---:|---:|---:|"
    )
    base: dict[str, float] = {}
    for workers in args.workers:
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                memory_limit=0,
            ) as cluster,
            Client(cluster) as client,
        ):
            runner = Runner(client=client)
            for name, (fn, items, shared) in jobs.items():
                start = time.perf_counter()
                runner.map(fn, items, shared=shared)
                wall = time.perf_counter() - start
                base.setdefault(name, wall)
                rss = client.run(_rss)
                mb = "/".join(f"{v / 2**20:.0f}" for v in rss.values())
                print(f"| {name} | {workers} | {wall:.1f} | {base[name] / wall:.2f}× | {mb} |")
                sys.stdout.flush()
    print(f"\n(this machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=100_000)
    p.add_argument("--single", type=int, default=10_000, help="largest one-process placement")
    p.add_argument("--partition", type=int, default=2000, help="tenants per partition")
    p.add_argument(
        "--window",
        type=lambda s: None if s == "all" else int(s),
        default=16,
        help="servers each partition tries, its last ones ('all': plain first-fit)",
    )
    p.add_argument("--jobs", type=int, default=2, help="local worker processes for placement")
    p.add_argument("--scenarios", type=int, default=24)
    p.add_argument("--traces", type=int, default=62, help="wc62 traces to characterise")
    p.add_argument("--workers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4])
    p.add_argument("--quick", action="store_true", help="every path on small inputs (~15 s idle)")
    p.add_argument("--skip-placement", action="store_true")
    p.add_argument("--skip-speedup", action="store_true")
    args = p.parse_args(argv if argv is not None else [])
    if args.quick:
        args.tenants, args.single, args.partition, args.scenarios = 1000, 1000, 500, 4
        args.traces, args.workers = 12, [1, 2]
    if not args.skip_placement:
        placement(args)
    if not args.skip_speedup:
        speedup(args)


if __name__ == "__main__":
    main(sys.argv[1:])
