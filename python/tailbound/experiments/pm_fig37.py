"""Thesis Fig. 3.7: a bottleneck at the server's network egress. Four tenants on one server, each
on a device of its own (§3.4.4): I, J and F on 7200 rpm disks (``THESIS_DISK``; random reads
sized so that both of Table 3.1's loads hold: storage 35%, 45%, 25% and network 20%, 25%, 5%,
Poisson) and K on a RAM disk (network 35%, inter-arrival C² 3.6, 64 KiB reads). The server's
egress link carries 85%. K has the tightest SLO; PriorityMeister sees that K's storage is free
and need not have the highest network priority; bySLO gives it the highest, which costs the
others at the tail; ps has no network QoS (FIFO links, equal shares at each device).

Run: ``python -m tailbound.experiments.pm_fig37 --out DIR [--duration S]`` (writes
``pm_fig37.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence

from tailbound.cli.options import progress
from tailbound.experiments.pm_common import (
    BANDWIDTH,
    SERVER,
    THESIS_DISK,
    Setup,
    Tenant,
    disk_trace,
    find_profile,
    percentile_rows,
    plot_percentiles,
    pm_tenants,
    run_policy,
)
from tailbound.experiments.pm_fig33 import parser
from tailbound.experiments.wc_common import write_table
from tailbound.policies.prioritymeister import latencies
from tailbound.profiles.disk import DiskProfile
from tailbound.profiles.tokens import MessageSizes
from tailbound.sim import Slo
from tailbound.traces.sizes import FixedSize
from tailbound.traces.synthetic import onoff_trace

#: The order SLOs are derived from (highest first at every queue): by network load, smallest
#: first. Not an order any policy uses; see :func:`reference_slos`.
REFERENCE_ORDER = ("F", "K", "J", "I")
#: SLOs are rounded up to this many seconds.
SLO_STEP = 0.010
#: Table 3.1: (storage load, network load, C²) of the disk tenants.
DISKS = {"I": (0.35, 0.20, 1.0), "J": (0.45, 0.25, 1.0), "F": (0.25, 0.05, 1.0)}
#: Table 3.1: K's network load and C² (its RAM disk does no work).
K_NETWORK_LOAD, K_C2, K_SIZE = 0.35, 3.6, 65536
PERCENTILES = (0.90, 0.99, 0.999)


def build(
    duration_s: float, seed: int, slos: Mapping[str, float] | None = None, *, k: int = 3
) -> Setup:
    """The four tenants; SLOs (s, at p99.9) from :func:`reference_slos` (``k`` buckets per
    stage) unless given."""
    if slos is None:
        draft = build(duration_s, seed, dict.fromkeys(REFERENCE_ORDER, 1.0))
        slos = reference_slos(draft, k)
    disk = DiskProfile.from_json(THESIS_DISK)
    tenants, devices = [], []
    for i, (name, (storage, network, c2)) in enumerate(DISKS.items()):
        trace = disk_trace(storage, network, c2, duration_s, seed=seed + i, disk=disk, name=name)
        device = f"disk{i}"
        devices.append({"name": device, "host": SERVER, "kind": "disk", "profile": THESIS_DISK})
        tenants.append(Tenant(name, trace, Slo(slos[name], 0.999), device=device))
    m = MessageSizes()
    rate = K_NETWORK_LOAD * BANDWIDTH / (m.overhead_bytes + m.large_factor * K_SIZE)
    k_trace = onoff_trace(rate, K_C2, duration_s, seed=seed + 9, sizes=FixedSize(K_SIZE), name="K")
    devices.append({"name": "ram0", "host": SERVER, "kind": "memory"})
    tenants.append(Tenant("K", k_trace, Slo(slos["K"], 0.999), device="ram0"))
    return Setup(tuple(tenants), tuple(devices), duration_s)


def reference_slos(setup: Setup, k: int = 3) -> dict[str, float]:
    """SLOs (s) at p99.9: each tenant's LP bound (``k`` buckets per stage) when the tenants are
    prioritized in :data:`REFERENCE_ORDER` at every queue, rounded up to :data:`SLO_STEP`.

    *Choice* (the thesis shows the SLOs only as lines in its figure): this rule gives what the
    thesis describes — K the tightest SLO, I the loosest (§3.4.4: "a higher SLO that is satisfied
    by all policies") — and SLOs that some order provably meets, so that the experiment tests
    whether the prioritizer *finds* such an order and whether bySLO's order and ps meet them.
    It looks at no policy's result.
    """
    # every device is a disk or memory: no SSD profile is needed
    tenants = pm_tenants(setup, None, k)
    prio = {t.name: dict.fromkeys(t.stages, REFERENCE_ORDER.index(t.name)) for t in tenants}
    bounds = latencies(tenants, prio)
    return {n: SLO_STEP * math.ceil(b / SLO_STEP - 1e-9) for n, b in bounds.items()}


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile_path = args.profile or find_profile()
    setup = build(args.duration, args.seed, k=args.k)
    slos = ", ".join(f"{t.name} {1e3 * t.slo.latency_s:.0f} ms" for t in setup.tenants if t.slo)
    print(f"SLOs at p99.9 (reference order {' > '.join(REFERENCE_ORDER)}): {slos}", file=sys.stderr)
    policies = progress(args, iterable=("pm", "byslo", "ps"), desc="pm_fig37", unit="policy")
    runs = [
        run_policy(setup, p, profile_path, k=args.k, server_model=args.server_model)
        for p in policies
    ]
    rows = percentile_rows(runs, setup, PERCENTILES)
    print(write_table(args.out, "pm_fig37", rows, "Fig. 3.7: server egress bottleneck (ms)"))
    plot_percentiles(rows, args.out / "pm_fig37.png", "Fig. 3.7: network bottleneck", PERCENTILES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
