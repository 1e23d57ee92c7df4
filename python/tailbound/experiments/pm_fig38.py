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
:data:`~tailbound.experiments.pm_fig33.WORKLOADS`) with offsets (:func:`extent_trace`): each
tenant in an extent of its own (:data:`EXTENT_BYTES`), in sequential runs of mean length
:data:`RUN_LENGTH` requests starting at uniform positions in the extent. The loads are the disk
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.cli.options import progress, progress_disabled
from tailbound.experiments.pm_common import (
    THESIS_DISK,
    PolicyRun,
    Setup,
    Tenant,
    file_copy,
    find_profile,
    percentile_rows,
    plot_percentiles,
    run_policy,
    thesis_disk_device,
)
from tailbound.experiments.pm_fig33 import (
    DISK_COPY_RATE,
    WORKLOADS,
    parser,
    reference_slos,
)
from tailbound.experiments.wc_common import write_table
from tailbound.model import Slo
from tailbound.profiles.disk import DiskModel, DiskProfile
from tailbound.sim.scenario import DISK_GAP_BYTES
from tailbound.stages import Stage
from tailbound.traces.sizes import FixedSize, SequentialRuns
from tailbound.traces.synthetic import onoff_trace, poisson_trace
from tailbound.traces.trace import Trace

#: The two storage models PriorityMeister is configured with: ``accurate`` (§2.3.2: seek by
#: distance, sequential requests detected) and ``constant`` (§3.4.5: a constant seek time for
#: every request).
MODELS = ("accurate", "constant")
#: The policies whose configuration uses the storage model (ps, Cake and EDF use none).
POLICIES = ("byslo", "pm")
#: Each tenant's extent on the 1 TB disk: 50 GB (5% of the stroke), A, B and C side by side
#: after the file copy's region. *Choice*: the thesis gives no offsets of its traces.
EXTENT_BYTES = 50_000_000_000
#: Mean length (requests) of a tenant's sequential runs: half its requests continue the previous
#: one. *Choice*, as :data:`EXTENT_BYTES`.
RUN_LENGTH = 2.0


def extent_trace(
    storage_load: float,
    c2: float,
    duration_s: float,
    *,
    seed: int,
    size: int,
    read_fraction: float,
    disk: DiskProfile,
    base_bytes: int,
    name: str,
) -> Trace:
    """A Table 3.1 stand-in with offsets: requests of ``size`` bytes in sequential runs
    (:data:`RUN_LENGTH`) within ``[base_bytes, base_bytes + EXTENT_BYTES)``, Poisson arrivals
    when ``c2`` is 1, on/off bursts of inter-arrival C² ``c2`` otherwise, at the rate giving
    ``storage_load`` of the disk as the §2.3.2 model prices this trace on a shared disk
    (every write at its worst; mean work per request measured on the trace drawn at a
    first-guess rate, then the trace redrawn at the corrected rate with the same seed).

    >>> disk = DiskProfile.from_json(THESIS_DISK)
    >>> t = extent_trace(0.05, 1.0, 2000.0, seed=1, size=16384, read_fraction=0.7,
    ...                  disk=disk, base_bytes=0, name="A")
    >>> work = DiskModel(disk, shared_gap_bytes=DISK_GAP_BYTES).tokens(t)
    >>> round(float(work.sum()) / 2000.0, 2)  # the disk's utilisation by A
    0.05
    """

    def draw(rate: float) -> Trace:
        options: dict[str, Any] = {
            "seed": seed,
            "sizes": FixedSize(size),
            "read_fraction": read_fraction,
            "offsets": SequentialRuns(EXTENT_BYTES, mean_run_length=RUN_LENGTH),
            "name": name,
        }
        if c2 <= 1.0:
            trace = poisson_trace(rate, duration_s, **options)
        else:
            trace = onoff_trace(rate, c2, duration_s, **options)
        assert trace.offset is not None
        return dataclasses.replace(trace, offset=trace.offset + base_bytes)

    random_work = disk.average_seek_s + disk.rotational_latency_s + size / disk.transfer_bandwidth
    first = draw(storage_load / random_work)
    shared = DiskModel(disk, shared_gap_bytes=DISK_GAP_BYTES)  # as the analysis prices it
    mean_work = float(shared.tokens(first).mean())
    return draw(storage_load / mean_work)


def build(
    duration_s: float, seed: int, slos: Mapping[str, float] | None = None, *, k: int = 5
) -> Setup:
    """A, B, C (:func:`extent_trace`) and the file copy L on one :data:`THESIS_DISK`; SLOs (s,
    at p99.99) as given, else Fig. 3.3's :func:`~tailbound.experiments.pm_fig33.reference_slos`
    of this setup (the accurate model, ``k`` buckets per stage)."""
    if slos is None:
        slos = reference_slos(build(duration_s, seed, dict.fromkeys("ABC", 1.0), k=k), k)
    disk = DiskProfile.from_json(THESIS_DISK)
    tenants = []
    for i, (name, (load, c2, size, reads)) in enumerate(WORKLOADS.items()):
        trace = extent_trace(
            load,
            c2,
            duration_s,
            seed=seed + i,
            size=size,
            read_fraction=reads,
            disk=disk,
            base_bytes=(i + 1) * EXTENT_BYTES,
            name=name,
        )
        tenants.append(Tenant(name, trace, Slo(slos[name], 0.9999)))
    copy = file_copy(duration_s, max_rate_per_s=DISK_COPY_RATE)
    tenants.append(Tenant("L", copy, None, outstanding=2))
    return Setup(tuple(tenants), (thesis_disk_device(),), duration_s)


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
    setup = build(duration_s, seed, k=k)
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
