"""Thesis Fig. 3.7: a bottleneck at the server's network egress. Four tenants on one server, each
on a device of its own: I and J (storage 35% and 45%, 8 KiB reads: network about 15% and 19%,
Table 3.1 says 20% and 25%), F (25%, 4 KiB reads, about 6%) on disks and K on a RAM disk (network
40%, inter-arrival C² 3.6, the tightest SLO). The server's egress link carries about 80%.
PriorityMeister sees that K's storage is fast and does not need the highest network priority;
bySLO gives it the highest, which costs the others at the tail; ps has no network QoS.

Run: ``python -m tailbound.experiments.pm_fig37 --out DIR [--duration S]`` (writes
``pm_fig37.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tailbound.experiments.pm_common import (
    BANDWIDTH,
    SERVER,
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
from tailbound.profiles.tokens import MessageSizes
from tailbound.sim import Slo
from tailbound.traces.sizes import FixedSize
from tailbound.traces.synthetic import onoff_trace

#: SLOs (s) at the 99.9th percentile; I's is loose (the thesis does not show it).
SLOS = {"I": 0.200, "J": 0.024, "F": 0.022, "K": 0.021}
#: (storage load, C², request size, read fraction) of the disk tenants.
DISKS = {"I": (0.35, 1.0, 8192, 1.0), "J": (0.45, 1.0, 8192, 1.0), "F": (0.25, 1.0, 4096, 1.0)}
K_NETWORK_LOAD = 0.40
PERCENTILES = (0.90, 0.99, 0.999)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile_path = args.profile or find_profile()
    profile = SsdProfile.load(profile_path)
    tenants = []
    devices = []
    for i, (name, (load, c2, size, reads)) in enumerate(DISKS.items()):
        trace = table31_trace(
            load,
            c2,
            args.duration,
            seed=args.seed + i,
            size=size,
            read_fraction=reads,
            profile=profile,
            name=name,
        )
        devices.append(disk_device(profile_path, f"disk{i}"))
        tenants.append(Tenant(name, trace, Slo(SLOS[name], 0.999), device=f"disk{i}"))
    size = 65536
    m = MessageSizes()
    response = m.overhead_bytes + m.large_factor * size  # a read's response message
    rate = K_NETWORK_LOAD * BANDWIDTH / response
    k_trace = onoff_trace(
        rate, 3.6, args.duration, seed=args.seed + 9, sizes=FixedSize(size), name="K"
    )
    devices.append({"name": "ram0", "host": SERVER, "kind": "memory"})
    tenants.append(Tenant("K", k_trace, Slo(SLOS["K"], 0.999), device="ram0"))
    setup = Setup(tuple(tenants), tuple(devices), args.duration)
    runs = [run_policy(setup, p, profile_path, k=args.k) for p in ("pm", "byslo", "ps")]
    rows = percentile_rows(runs, setup, PERCENTILES)
    print(write_table(args.out, "pm_fig37", rows, "Fig. 3.7: server egress bottleneck (ms)"))
    plot_percentiles(rows, args.out / "pm_fig37.png", "Fig. 3.7: network bottleneck", PERCENTILES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
