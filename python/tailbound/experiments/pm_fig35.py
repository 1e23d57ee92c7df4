"""Thesis Fig. 3.5: effect of burstiness. One latency-sensitive tenant (storage load 25%,
inter-arrival C² 1, 20 or 40: Table 3.1's F, G, H) against a closed-loop file copy on one
device; latency percentiles under PriorityMeister and Cake.

Run: ``python -m tailbound.experiments.pm_fig35 --out DIR [--duration S]`` (writes
``pm_fig35.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tailbound.cli.options import progress
from tailbound.experiments.pm_common import (
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
from tailbound.experiments.pm_fig33 import parser
from tailbound.experiments.wc_common import write_table
from tailbound.profiles import SsdProfile
from tailbound.sim import Slo

C2S = {"F": 1.0, "G": 20.0, "H": 40.0}
#: The latency tenant's SLO (s) at the 99th percentile (the Cake paper's target).
SLO = Slo(0.020, 0.99)
PERCENTILES = (0.90, 0.95, 0.96, 0.99, 0.999)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile_path = args.profile or find_profile()
    profile = SsdProfile.load(profile_path)
    rows = []
    for label, c2 in progress(args, iterable=C2S.items(), desc="pm_fig35", unit="C²"):
        trace = table31_trace(
            0.25,
            c2,
            args.duration,
            seed=args.seed,
            size=16384,
            read_fraction=0.7,
            profile=profile,
            name=label,
        )
        setup = Setup(
            (Tenant(label, trace, SLO), Tenant("L", file_copy(args.duration), None, outstanding=2)),
            (disk_device(profile_path),),
            args.duration,
        )
        runs = [run_policy(setup, p, profile_path, k=args.k) for p in ("cake", "pm")]
        for r in percentile_rows(runs, setup, PERCENTILES):
            rows.append({"c2": c2, **r})
            rows[-1]["policy"] = f"{r['policy']} C²={c2:g}"
    print(write_table(args.out, "pm_fig35", rows, "Fig. 3.5: burstiness, PM vs Cake (ms)"))
    plot_percentiles(rows, args.out / "pm_fig35.png", "Fig. 3.5: C² = 1, 20, 40", PERCENTILES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
