"""Thesis Fig. 3.8: PriorityMeister with a less accurate storage model — Fig. 3.3's tenants on
the disk, PriorityMeister (and bySLO, whose bounds use the same model) configured once with the
storage model of thesis §2.3.2 and once with "a simple model that assumes a constant seek time
for servicing a request" (§3.4.5), both run against the same simulated disk.

The storage model only matters when requests have offsets: the §2.3.2 model
(:class:`~tailbound.profiles.disk.DiskModel`) prices a request by its seek distance from the
tenant's previous request and charges a sequential one its transfer only, while the constant
model charges every request the average seek and half a revolution (``DiskModel`` of the trace
without its offsets). Fig. 3.3's stand-ins carry no offsets (every request is random, both
models agree), so here A, B and C are Fig. 3.3's workloads (storage loads 5%, 5%, 55%,
inter-arrival C² 1.3, 14, 2.2, sizes and read fractions of
:data:`~tailbound.experiments.pm_fig33.WORKLOADS`) with offsets (Fig. 3.3's
:func:`~tailbound.experiments.pm_fig33.build` with ``extents``, through
:func:`~tailbound.experiments.pm_common.extent_trace`): each tenant in an extent of its own
(:data:`~tailbound.experiments.pm_common.EXTENT_BYTES`), in sequential runs of mean length
:data:`~tailbound.experiments.pm_common.RUN_LENGTH` requests starting at uniform positions in the
extent. The loads are the disk
time the accurate model charges on the *shared* disk, where the analysis prices every write at
its worst (``DiskModel(shared_gap_bytes=...)``: another tenant may interrupt a write's stream);
the constant model therefore differs from the accurate one on reads (most of A's and B's
requests, a fifth of C's). The simulator prices every request by the §2.3.2 model over the
tenant's own trace, with the disk rule for writes (``sim/scenario.py``, ``sim/disk.rs``): the
accurate model is what it charges, and the constant one over-estimates every short seek and
every sequential read.

SLOs (p99.99) by Fig. 3.3's rule (:func:`~tailbound.experiments.pm_fig33.reference_slos`) on
this setup with the accurate model, fixed before any policy runs; the same SLOs for both models.

Run: ``tailbound experiment pm_fig38 --out DIR [--duration S] [--server-model M]`` (writes
``pm_fig38.csv``, ``.md``, ``.png``); docs/results-pm.md's table is ``--duration 5200`` (p99.99
needs 10⁴ requests per tenant in the measured half, as Fig. 3.3's).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.cli.options import progress, progress_disabled
from tailbound.experiments.pm_common import (
    PolicyRun,
    Setup,
    find_profile,
    percentile_rows,
    plot_percentiles,
    run_policy,
)
from tailbound.experiments.pm_fig33 import build, parser
from tailbound.experiments.wc_common import write_table
from tailbound.stages import Stage

#: The two storage models PriorityMeister is configured with: ``accurate`` (§2.3.2: seek by
#: distance, sequential requests detected) and ``constant`` (§3.4.5: a constant seek time for
#: every request).
MODELS = ("accurate", "constant")
#: The policies whose configuration uses the storage model (ps, Cake and EDF use none).
POLICIES = ("byslo", "pm")


def constant_seek(setup: Setup) -> Setup:
    """``setup`` as the constant-seek model sees it: the latency tenants' traces without their
    offsets, which :class:`~tailbound.profiles.disk.DiskModel` prices as random accesses
    (average seek + half a revolution + transfer, every request). The file copy keeps its
    offsets: it is closed loop, has no buckets and is placed lowest by every order."""
    tenants = tuple(
        t
        if t.slo is None
        else dataclasses.replace(t, trace=dataclasses.replace(t.trace, offset=None))
        for t in setup.tenants
    )
    return dataclasses.replace(setup, tenants=tenants)


def storage_order(run: PolicyRun) -> str:
    """The latency tenants' priority order at the disk, most important first ("A > B > C")."""
    assert run.analysis is not None
    levels = {
        name: prio[Stage.STORAGE]
        for name, prio in run.analysis.priorities.items()
        if name != "L" and prio.get(Stage.STORAGE) is not None
    }
    return " > ".join(sorted(levels, key=lambda n: (levels[n], n)))


def run(
    duration_s: float,
    seed: int,
    profile: Path,
    *,
    k: int = 5,
    server_model: str = "reference",
    policies: Sequence[str] = POLICIES,
    quiet: bool = True,
) -> list[dict[str, Any]]:
    """One row per (model, policy, latency tenant): :func:`percentile_rows`' columns after the
    model and the storage order, and ``worst_ms`` (the largest simulated latency of the measured
    half) beside the bound."""
    setup = build(duration_s, seed, profile, k=k, extents=True)
    declared = {"accurate": setup, "constant": constant_seek(setup)}
    rows = []
    jobs = [(m, p) for m in MODELS for p in policies]
    for model, policy in progress(quiet, iterable=jobs, desc="pm_fig38", unit="run"):
        start = time.perf_counter()
        r = run_policy(
            setup, policy, profile, k=k, declared=declared[model], server_model=server_model
        )
        if progress_disabled(quiet):
            print(f"{model} {policy}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
        order = storage_order(r)
        for row in percentile_rows([r], setup):
            worst = float(np.max(r.latency[row["tenant"]], initial=0.0))
            rows.append({"model": model, "order": order, **row, "worst_ms": 1e3 * worst})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args(argv)
    if args.device != "disk":
        p.error("--device: Fig. 3.8 compares disk models; only 'disk' applies")
    profile = args.profile or find_profile()  # run_policy loads it; a disk's analysis ignores it
    rows = run(
        args.duration,
        args.seed,
        profile,
        k=args.k,
        server_model=args.server_model,
        quiet=args.quiet,
    )
    slos = {r["tenant"]: r["slo_ms"] for r in rows}
    print(
        "SLOs at p99.99: " + ", ".join(f"{n} {v:.0f} ms" for n, v in slos.items()), file=sys.stderr
    )
    title = "Fig. 3.8: accurate and constant-seek storage models (ms)"
    print(write_table(args.out, "pm_fig38", rows, title))
    labelled = [{**r, "policy": f"{r['policy']} {r['model']}"} for r in rows]
    plot_percentiles(labelled, args.out / "pm_fig38.png", "Fig. 3.8: storage-model mis-estimation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
