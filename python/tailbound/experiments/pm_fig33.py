"""Thesis Fig. 3.3/3.4: three latency-sensitive tenants (Table 3.1's A, B, C) and a closed-loop
file copy (L) share one device; latency at the 90th…99.99th percentiles under ps, Cake, EDF,
bySLO and PriorityMeister.

Synthetic stand-ins for A, B, C (storage loads 5%, 5%, 55%; inter-arrival C² 1.3, 14, 2.2;
:func:`~tailbound.experiments.pm_common.table31_trace`); L reads 256 KiB sequentially with two
requests outstanding. SLOs (fixed, thesis §3.3.3: "the SLO represents the maximum end-to-end
latency a workload considers acceptable") have C, the heavy tenant, tightest — the case where
bySLO's order hurts (§3.4.1).

Run: ``python -m tailbound.experiments.pm_fig33 --out DIR [--duration S]`` (writes
``pm_fig33.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tailbound.cli.options import add_quiet, progress, progress_disabled
from tailbound.experiments.pm_common import (
    POLICIES,
    Setup,
    Tenant,
    disk_device,
    file_copy,
    find_profile,
    percentile_rows,
    plot_percentiles,
    run_policy,
    table31_trace,
)
from tailbound.experiments.wc_common import write_table
from tailbound.profiles import SsdProfile
from tailbound.sim import Slo

#: SLOs (s) of A, B, C at the 99.99th percentile.
SLOS = {"A": 0.040, "B": 0.045, "C": 0.035}
#: (storage load, C², request size, read fraction) per Table 3.1 workload.
WORKLOADS = {
    "A": (0.05, 1.3, 16384, 0.7),
    "B": (0.05, 14.0, 16384, 0.7),
    "C": (0.55, 2.2, 4096, 0.2),
}


def build(duration_s: float, seed: int, profile_path: Path, slos=SLOS) -> Setup:
    profile = SsdProfile.load(profile_path)
    tenants = []
    for i, (name, (load, c2, size, reads)) in enumerate(WORKLOADS.items()):
        trace = table31_trace(
            load,
            c2,
            duration_s,
            seed=seed + i,
            size=size,
            read_fraction=reads,
            profile=profile,
            name=name,
        )
        tenants.append(Tenant(name, trace, Slo(slos[name], 0.9999)))
    tenants.append(Tenant("L", file_copy(duration_s), None, outstanding=2))
    return Setup(tuple(tenants), (disk_device(profile_path),), duration_s)


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument("--profile", type=Path, help="SSD profile (default: shared wc62 profile)")
    p.add_argument("--duration", type=float, default=120.0, help="trace length (s)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--k", type=int, default=5, help="PriorityMeister's buckets per stage")
    add_quiet(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile = args.profile or find_profile()
    setup = build(args.duration, args.seed, profile)
    runs = []
    for policy in progress(args, iterable=POLICIES, desc="pm_fig33", unit="policy"):
        start = time.perf_counter()
        runs.append(run_policy(setup, policy, profile, k=args.k))
        if progress_disabled(args):
            print(f"{policy}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    rows = percentile_rows(runs, setup)
    print(write_table(args.out, "pm_fig33", rows, "Fig. 3.3/3.4: latency per policy (ms)"))
    plot_percentiles(rows, args.out / "pm_fig33.png", "Fig. 3.3/3.4: A, B, C + file copy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
