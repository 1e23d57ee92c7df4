"""A lower bound on the servers any plan needs when a level's requests share the device
(docs/dnc.md, "Why one request per level").

With processor sharing inside a level, the least important tenant of a device has every rate
of the device's tenants in its bound's denominator: a set ``S`` of tenants on one device needs
``Σ_{k ∈ S} b_k ≤ T (1 − Σ_{k ∈ S} r_k)``, ``T`` the largest SLO in ``S`` (the network stages and
the blocking only add to the left side). Each ``(r_k, b_k)`` on or above ``k``'s r-b curve at the
device, so ``Σ_{k ∈ S} g_k(T) ≤ T`` with ``g_k(T) = min_r (b_k(r) + T r)`` (at a vertex of the
convex curve, rates up to 0.999). ``g_k(T) / T`` decreases in ``T``, so with ``T`` the largest SLO
of all tenants every device holds tenants whose sizes ``g_k(T) / T`` sum to at most 1: the sizes'
sum, rounded up, is a lower bound on the devices (servers of one device) of any such plan,
whatever its placement and priorities.

Run: ``python -m tailbound.experiments.wc_lower_bound --out DIR`` (wc62).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tailbound.policies.server import RATE_CAP
from tailbound.policies.workload import TenantCurves
from tailbound.stages import Stage


def shared_level_size(workload: TenantCurves, slo_s: float) -> float:
    """``g(T) / T = min_r (b(r) + T r) / T`` over the workload's r-b curve at the device (rates
    up to 0.999): the least share of a device it takes under a least important SLO of ``T``."""
    c = workload.curves[Stage.STORAGE]
    keep = c.rates < RATE_CAP
    r = np.append(c.rates[keep], RATE_CAP)
    b = np.append(c.buckets[keep], float(c.bucket_at(RATE_CAP)))
    return float(np.min(b + slo_s * r)) / slo_s


def shared_level_bound(workloads: Sequence[TenantCurves]) -> tuple[float, int]:
    """The sizes' sum at the largest SLO and the lower bound on devices it gives (rounded up,
    less a hair for rounding)."""
    largest = max(w.slo_s for w in workloads)
    total = sum(shared_level_size(w, largest) for w in workloads)
    return total, math.ceil(total - 1e-9)


def main(argv: Sequence[str] | None = None) -> int:
    from tailbound.experiments.wc_common import parser, setup, write_table

    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    workloads, _ = setup(args)
    rows = []
    for name, scale in (("wc62", 1.0), ("SLOs × 0.5", 0.5), ("SLOs × 2", 2.0)):
        scaled = [w.with_slo(w.slo_s * scale) for w in workloads]
        total, bound = shared_level_bound(scaled)
        rows.append({"SLO mix": name, "sizes' sum": round(total, 3), "servers at least": bound})
    print(write_table(args.out, "wc_lower_bound", rows, "servers any levels-sharing plan needs"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
