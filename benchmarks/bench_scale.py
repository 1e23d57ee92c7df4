"""Beyond one process (issue 30): 10⁵ tenants placed in partitions, and sweeps on 1, 2, 4 workers.

1. **Placement at scale.** Synthetic tenants (wc62 curves resampled, scaled by 0.8–1.2, SLOs from
   Fig. 5.4's set, each meeting its SLO alone: ``wc_common.draw``), generated in seeded
   chunks on the runner and timed apart from the placement; their draws are cached under
   ``--cache`` (:func:`cache_path`: by seed, count and the wc62 curve cache's hash), so a rerun
   rebuilds them in seconds instead of drawing and checking them again. WorkloadCompactor with
   fast-first-fit places them (a) in one process, for the sizes where that finishes in
   reasonable time, and (b) in partitions of ``--partition`` tenants on a local pool of
   ``--jobs`` processes, each partition trying only its last ``--window`` servers (bounded
   first-fit, :class:`~tailbound.policies.placement.Placer`), reconciled
   (:mod:`tailbound.policies.partitioned`; the partitions a multiple of the pool's workers).
   The table gives the wall-clock seconds, the CPU seconds the partitions took in their workers
   (the machine is shared: CPU time is the load-independent measure), the servers used and
   their excess over the single placement; a second table says where the CPU around the
   placement went (the main process: packing, merging, reconciling; the pool's processes
   outside placing).
2. **Speed-up with workers.** A ``LocalCluster`` of 1, 2 and 4 worker processes (one thread
   each) runs the soundness sweep (``bound_sweep`` scenarios) and the characterisation of the
   62 wc62 traces at three stages (``tailbound characterize``'s fleet task); the table gives the
   wall-clock time, the speed-up over one worker and each worker's resident memory after the
   run.

The placement half first prints one partition placed in this process (CPU per tenant, LPs,
screened candidates). Run:
``.venv/bin/python -m benchmarks.bench_scale [--tenants 100000] [--single 10000]
[--partition 2000] [--window 16] [--jobs 2] [--scenarios 24] [--seed 30] [--cache out/cache]``;
``--quick`` (every path on small inputs, ~15 s idle, ~45 s at load 10): 1,000 tenants, 4
scenarios, 12 traces, 1 and 2 workers, the tenant cache in a temporary folder.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.atomic import atomic_path
from tailbound.cli.characterize_fleet import Options, characterize_one
from tailbound.executor import Runner
from tailbound.experiments.bound_sweep import run_seed
from tailbound.experiments.wc_common import (
    FIG54_SLOS,
    Draws,
    draw,
    find_wc62,
    load_wc62,
    redraw,
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
#: The synthetic tenants' seed: chunk ``k`` draws from ``default_rng([SEED, k])``.
SEED = 30
#: The synthetic tenants' curves are a wc62 workload's scaled by a factor in this range.
SCALE = (0.8, 1.2)
#: Version of the tenant cache's format and of how tenants are drawn (another one regenerates).
CACHE_FORMAT = 1


def _draws(pool: list[TenantCurves], task: tuple[int, int, int]) -> Draws:
    """What chunk ``k`` of ``count`` synthetic tenants drew, seeded by ``(seed, k)`` (a
    runner's task: only these three arrays travel back, not the tenants' curves)."""
    seed, k, count = task
    rng = np.random.default_rng([seed, k])
    return draw(pool, count, rng, slos=FIG54_SLOS, scale=SCALE)[1]


def _generate(pool: list[TenantCurves], task: tuple[int, int]) -> list[TenantCurves]:
    """Chunk ``k`` of ``count`` synthetic tenants (seed :data:`SEED`), names made unique by the
    chunk."""
    k, count = task
    return redraw(pool, _draws(pool, (SEED, k, count)), prefix=f"c{k}.")


def one_partition(tenants: list[TenantCurves], window: int | None) -> None:
    """One partition's placement in this process, the unit of the per-tenant CPU figures
    (docs/scale-out.md, "Where a tenant's CPU goes"): CPU seconds, LPs solved and candidates
    the two screens ruled out."""
    policy = WorkloadCompactorPolicy()
    cpu = time.process_time()
    result = place(tenants, server_cluster(), policy, fast_first_fit=True, grow=True, window=window)
    cpu = time.process_time() - cpu
    print("One partition in this process (fast-first-fit):\n")
    print(
        "| tenants | window | CPU (s) | CPU ms per tenant | servers | LPs | cluster-screened "
        "| certified |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {len(tenants)} | {window or 'all'} | {cpu:.2f} | {1000 * cpu / len(tenants):.3f} | "
        f"{result.servers_used} | {policy.lp_solves} | {result.cluster_screened} | "
        f"{result.certified} |\n"
    )


def cache_path(folder: Path, wc62_cache: Path, seed: int, count: int) -> Path:
    """Where ``count`` synthetic tenants of ``seed`` are cached: keyed by the seed, the count and
    the hash of the wc62 curve cache they are drawn from (with this module's drawing constants)."""
    digest = hashlib.sha256(wc62_cache.read_bytes())
    digest.update(repr((CACHE_FORMAT, CHUNK, SCALE, FIG54_SLOS)).encode())
    return folder / f"bench_scale_tenants-seed{seed}-n{count}-{digest.hexdigest()[:16]}.npz"


def synthetic(
    pool: list[TenantCurves],
    count: int,
    runner: Runner,
    *,
    seed: int = SEED,
    cache: Path | None = None,
) -> tuple[list[TenantCurves], float, bool]:
    """``count`` synthetic tenants in chunks of :data:`CHUNK` (the same tenants on any runner),
    the seconds their drawing and checking took, and whether they came from ``cache`` (a
    ``.npz`` of their draws, :func:`cache_path`; written when absent)."""
    chunks = [min(CHUNK, count - k * CHUNK) for k in range((count + CHUNK - 1) // CHUNK)]
    if cache is not None and cache.is_file():
        with np.load(cache) as doc:
            parts = np.cumsum(doc["chunks"])[:-1]
            drawn = [
                Draws(b, f, s)
                for b, f, s in zip(
                    np.split(doc["base"], parts),
                    np.split(doc["factor"], parts),
                    np.split(doc["slo"], parts),
                    strict=True,
                )
            ]
            seconds, cached = float(doc["seconds"]), True
        if [len(d) for d in drawn] != chunks:
            raise ValueError(f"{cache}: chunks {[len(d) for d in drawn]}, expected {chunks}")
    else:
        start = time.perf_counter()
        tasks = [(seed, k, n) for k, n in enumerate(chunks)]
        drawn = runner.map(_draws, tasks, shared=pool)
        seconds, cached = time.perf_counter() - start, False
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(cache) as tmp, open(tmp, "wb") as f:
                np.savez(
                    f,
                    chunks=np.array(chunks, dtype=np.int64),
                    base=np.concatenate([d.base for d in drawn]),
                    factor=np.concatenate([d.factor for d in drawn]),
                    slo=np.concatenate([d.slo for d in drawn]),
                    seconds=np.float64(seconds),
                )
    tenants = [w for k, d in enumerate(drawn) for w in redraw(pool, d, prefix=f"c{k}.")]
    return tenants, seconds, cached


def _children_cpu() -> float:
    """CPU seconds of this process's finished child processes (a local pool's, once shut)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _rss(_: Any = None) -> int:
    """This process's resident memory (bytes)."""
    import psutil

    return int(psutil.Process().memory_info().rss)


def placement(args: argparse.Namespace) -> None:
    data = find_wc62()
    wc62_cache = Path("out/cache/wc62_curves.json")
    pool, _ = load_wc62(data, wc62_cache)
    runner = Runner(jobs=args.jobs)
    cache = None
    if args.cache is not None:
        cache = cache_path(args.cache, wc62_cache, args.seed, args.tenants)
    start = time.perf_counter()
    tenants, generate_s, cached = synthetic(pool, args.tenants, runner, seed=args.seed, cache=cache)
    ready_s = time.perf_counter() - start
    if cached:
        print(
            f"loaded {len(tenants)} synthetic tenants from {cache} in {ready_s:.1f} s "
            f"(drawing and checking each alone took {generate_s:.1f} s when cached)\n"
        )
    else:
        print(
            f"generated {len(tenants)} synthetic tenants (each checked alone) in "
            f"{generate_s:.1f} s on {runner.describe()}, {ready_s:.1f} s with building them\n"
        )
    if args.quick and cache is not None:  # the cache gives back the very tenants it was made of
        again, _, hit = synthetic(pool, args.tenants, runner, seed=args.seed, cache=cache)
        assert hit and [(w.name, w.slo, w.largest) for w in again] == [
            (w.name, w.slo, w.largest) for w in tenants
        ], "the tenant cache gave other tenants back"
        assert all(
            np.array_equal(a.curves[s].buckets, b.curves[s].buckets)
            for a, b in zip(again, tenants, strict=True)
            for s in STORAGE_PATH
        ), "the tenant cache gave other curves back"
    one_partition(tenants[: args.partition], args.window)
    print(
        "| tenants | placement | partitions | wall (s) | CPU in partitions (s) | servers | "
        "vs single | reconcile (s) | tail saved |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    sizes = sorted({n for n in (min(args.single, args.tenants), args.tenants) if n > 0})
    overheads: list[str] = []
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
        # a multiple of the workers, so that none idles while another places the last partition
        parts = max(1, n // args.partition)
        parts = -(-parts // runner.workers) * runner.workers if parts > 1 else 1
        how = "" if args.window is None else f", window {args.window}"
        start, main_cpu, children_cpu = time.perf_counter(), time.process_time(), _children_cpu()
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
        main_cpu, children_cpu = time.process_time() - main_cpu, _children_cpu() - children_cpu
        if parts > 1 and runner.jobs > 1 and not runner.distributed:
            overheads.append(
                f"| {n} | {wall:.1f} | {main_cpu:.1f} | {out.pack_s:.2f} | "
                f"{out.reconcile_s:.2f} | {children_cpu:.1f} | {out.cpu_s:.1f} | "
                f"{out.unpack_s:.2f} | {children_cpu - out.cpu_s:.1f} | {os.getloadavg()[0]:.1f} |"
            )
        used = out.result.servers_used
        vs = f"{100 * (used / single.servers_used - 1):+.2f} %" if single is not None else ""
        goal = f" (target {TARGET_S:.0f} s)" if n >= 100_000 else ""
        print(
            f"| {n} | {parts} partitions{how}, {runner.describe()} | {parts} | {wall:.1f}{goal} | "
            f"{out.cpu_s:.1f} | {used} | {vs} | {out.reconcile_s:.2f} | {out.tail_saved} |"
        )
        sys.stdout.flush()
    if overheads:
        print(
            "\nWhere the partitioned placements' CPU went (main: this process, packing the "
            "tenants, merging, reconciling; pool: its processes' whole CPU, of which placing "
            "(with unpacking), and outside it: start, imports, results' trip):\n\n"
            "| tenants | wall (s) | main CPU (s) | packing (s) | reconcile wall (s) | "
            "pool CPU (s) | placing (s) | unpacking (s) | pool outside placing (s) | load |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        )
        print("\n".join(overheads))


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
    p.add_argument("--seed", type=int, default=SEED, help="the synthetic tenants' seed")
    p.add_argument(
        "--cache",
        type=lambda s: None if s == "none" else Path(s),
        default=Path("out/cache"),
        help="folder of the synthetic tenants' cache ('none': draw them every time)",
    )
    p.add_argument("--quick", action="store_true", help="every path on small inputs (~15 s idle)")
    p.add_argument("--skip-placement", action="store_true")
    p.add_argument("--skip-speedup", action="store_true")
    args = p.parse_args(argv if argv is not None else [])
    if args.quick:
        args.tenants, args.single, args.partition, args.scenarios = 1000, 1000, 500, 4
        args.traces, args.workers = 12, [1, 2]
    with tempfile.TemporaryDirectory() as scratch:
        if args.quick and args.cache is not None:  # written, read back, then gone
            args.cache = Path(scratch)
        if not args.skip_placement:
            placement(args)
    if not args.skip_speedup:
        speedup(args)


if __name__ == "__main__":
    main(sys.argv[1:])
