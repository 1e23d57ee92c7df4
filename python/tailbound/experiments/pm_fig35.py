"""Thesis Fig. 3.5: effect of burstiness. One latency-sensitive tenant (storage load 25%,
inter-arrival C² 1, 20 or 40: Table 3.1's F, G, H) against a closed-loop file copy on one
device (``--device disk``, the default: the thesis' 7200 rpm disk; ``ssd``: the SSD profile's
costs); latency percentiles under PriorityMeister and Cake.

Run: ``python -m tailbound.experiments.pm_fig35 --out DIR [--duration S]`` (writes
``pm_fig35.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

from tailbound.cli.options import progress
from tailbound.experiments.pm_common import (
    THESIS_DISK,
    Setup,
    Tenant,
    disk_device,
    file_copy,
    find_profile,
    percentile_rows,
    plot_percentiles,
    pm_tenants,
    random_disk_trace,
    run_policy,
    table31_trace,
    thesis_disk_device,
)
from tailbound.experiments.pm_fig33 import DISK_COPY_RATE, SLO_STEP, parser
from tailbound.experiments.wc_common import write_table
from tailbound.policies.prioritymeister import latencies
from tailbound.profiles import SsdProfile
from tailbound.profiles.disk import DiskProfile
from tailbound.sim import Slo

C2S = {"F": 1.0, "G": 20.0, "H": 40.0}
#: SSD variant (``--device ssd``): the latency tenant's SLO (s) at the 99th percentile.
SLO = Slo(0.020, 0.99)
PERCENTILES = (0.90, 0.95, 0.96, 0.99, 0.999)
#: Table 3.1's F, G, H: storage load; request size and read fraction (a choice: Fig. 3.3's A).
LOAD, SIZE, READS = 0.25, 16384, 0.7


def setup_of(
    label: str, c2: float, duration: float, seed: int, profile_path: Path, slo: Slo, device: str
) -> Setup:
    """One latency tenant of inter-arrival C² ``c2`` and the file copy L on ``device``."""
    if device == "ssd":
        trace = table31_trace(
            LOAD,
            c2,
            duration,
            seed=seed,
            size=SIZE,
            read_fraction=READS,
            profile=SsdProfile.load(profile_path),
            name=label,
        )
        copy, dev = file_copy(duration), disk_device(profile_path)
    else:
        disk = DiskProfile.from_json(THESIS_DISK)
        trace = random_disk_trace(
            LOAD, c2, duration, seed=seed, size=SIZE, read_fraction=READS, disk=disk, name=label
        )
        copy, dev = file_copy(duration, max_rate_per_s=DISK_COPY_RATE), thesis_disk_device()
    tenants = (Tenant(label, trace, slo), Tenant("L", copy, None, outstanding=2))
    return Setup(tenants, (dev,), duration)


def disk_slo(duration: float, seed: int, profile_path: Path, k: int) -> Slo:
    """The disk SLO at p99, one for the three traces (the thesis draws one line), fixed before
    any policy runs: the LP bound (``k`` buckets per stage) of the Poisson tenant F above the
    file copy, rounded up to :data:`~tailbound.experiments.pm_fig33.SLO_STEP`.

    *Choice*: the thesis gives no value. This one is attainable by the smoothest trace, so the
    figure asks how far burstiness pushes each policy past it (§3.4.2: Cake "unable to meet
    SLOs, even at the 96th percentile" as burstiness grows; PM meets p99 up to C² = 40)."""
    draft = setup_of("F", 1.0, duration, seed, profile_path, Slo(1.0, 0.99), "disk")
    tenants = pm_tenants(draft, None, k)
    prio = {t.name: dict.fromkeys(t.stages, 0 if t.name == "F" else 1) for t in tenants}
    bound = latencies(tenants, prio)["F"]
    return Slo(SLO_STEP * math.ceil(bound / SLO_STEP - 1e-9), 0.99)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile_path = args.profile or find_profile()
    if args.device == "ssd":
        slo = SLO
    else:
        slo = disk_slo(args.duration, args.seed, profile_path, args.k)
    print(f"{args.device}: SLO {1e3 * slo.latency_s:.0f} ms at p99", file=sys.stderr)
    rows = []
    for label, c2 in progress(args, iterable=C2S.items(), desc="pm_fig35", unit="C²"):
        setup = setup_of(label, c2, args.duration, args.seed, profile_path, slo, args.device)
        runs = [
            run_policy(setup, p, profile_path, k=args.k, server_model=args.server_model)
            for p in ("cake", "pm")
        ]
        for r in percentile_rows(runs, setup, PERCENTILES):
            rows.append({"c2": c2, **r})
            rows[-1]["policy"] = f"{r['policy']} C²={c2:g}"
    print(write_table(args.out, "pm_fig35", rows, "Fig. 3.5: burstiness, PM vs Cake (ms)"))
    plot_percentiles(rows, args.out / "pm_fig35.png", "Fig. 3.5: C² = 1, 20, 40", PERCENTILES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
