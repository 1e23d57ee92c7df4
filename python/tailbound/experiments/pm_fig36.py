"""Thesis Fig. 3.6: prioritisation is safe with rate limiting. Workload D (storage load 10%,
inter-arrival C² 23) shares a device with workload C (55%, C² 2.2); D is the more important one
(tighter SLO). Every policy is configured from D's well-behaved trace; then D misbehaves
(Table 3.1's workload E: a flood above the device's capacity for a fifth of the run) and only
PriorityMeister's rate limits (traffic over its limits demoted below C, thesis §2.2.1) keep C
within its SLO.

Run: ``python -m tailbound.experiments.pm_fig36 --out DIR [--duration S]`` (writes
``pm_fig36.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence

import numpy as np

from tailbound.cli.options import progress
from tailbound.experiments.pm_common import (
    POLICIES,
    Setup,
    Tenant,
    disk_device,
    find_profile,
    percentile_rows,
    plot_percentiles,
    run_policy,
    table31_trace,
)
from tailbound.experiments.pm_fig33 import parser
from tailbound.experiments.wc_common import write_table
from tailbound.profiles import SsdProfile
from tailbound.sim import Slo
from tailbound.traces.trace import Trace

SLOS = {"D": 0.050, "C": 0.100}
#: The flood: extra load (utilisation of the device) and where it falls in the run (fractions).
FLOOD_LOAD = 1.5
FLOOD_SPAN = (0.6, 0.8)


def misbehave(trace: Trace, profile: SsdProfile, duration_s: float, seed: int) -> Trace:
    """Workload E: ``trace`` plus a Poisson flood of the same request kind at
    :data:`FLOOD_LOAD` during :data:`FLOOD_SPAN` of the run."""
    start, end = (f * duration_s for f in FLOOD_SPAN)
    flood = table31_trace(
        FLOOD_LOAD,
        1.0,
        end - start,
        seed=seed,
        size=16384,
        read_fraction=0.7,
        profile=profile,
        name="E",
    )
    time = np.concatenate([trace.time, flood.time + start])
    order = np.argsort(time, kind="stable")
    return Trace.from_arrays(
        time=time[order],
        op=np.concatenate([trace.op, flood.op])[order],
        size=np.concatenate([trace.size, flood.size])[order],
        duration_s=duration_s,
        name="E",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile_path = args.profile or find_profile()
    profile = SsdProfile.load(profile_path)
    d = table31_trace(
        0.10,
        23.0,
        args.duration,
        seed=args.seed,
        size=16384,
        read_fraction=0.7,
        profile=profile,
        name="D",
    )
    c = table31_trace(
        0.55,
        2.2,
        args.duration,
        seed=args.seed + 1,
        size=4096,
        read_fraction=0.2,
        profile=profile,
        name="C",
    )
    device = (disk_device(profile_path),)
    behaved = Setup(
        (Tenant("D", d, Slo(SLOS["D"], 0.999)), Tenant("C", c, Slo(SLOS["C"], 0.999))),
        device,
        args.duration,
    )
    e = misbehave(d, profile, args.duration, args.seed + 7)
    flooded = dataclasses.replace(
        behaved, tenants=(dataclasses.replace(behaved.tenants[0], trace=e), behaved.tenants[1])
    )
    rows = []
    phases = (("behaved", behaved), ("misbehaving", flooded))
    for label, setup in progress(args, iterable=phases, desc="pm_fig36", unit="phase"):
        runs = [
            run_policy(
                setup, p, profile_path, k=args.k, declared=behaved, server_model=args.server_model
            )
            for p in POLICIES
        ]
        for r in percentile_rows(runs, setup, (0.9, 0.99, 0.999)):
            rows.append({"phase": label, **r})
            rows[-1]["policy"] = f"{r['policy']}" if label == "behaved" else f"{r['policy']}*"
    print(write_table(args.out, "pm_fig36", rows, "Fig. 3.6: D misbehaves (* = flooded)"))
    flooded_rows = [r for r in rows if r["phase"] == "misbehaving"]
    plot_percentiles(
        flooded_rows, args.out / "pm_fig36.png", "Fig. 3.6: D floods (E)", (0.9, 0.99, 0.999)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
