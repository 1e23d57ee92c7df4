"""Thesis §4.4.6 (Figs 4.16–4.19): SNC-Meister with a storage stage against DNC-based admission
and against no admission control, on wc62 with the SSD profile.

The population is Fig. 4.10's (:func:`tailbound.experiments.snc_fig410.population`: tenant ``i``
replays wc62 trace ``i mod 62`` circularly shifted by a random offset, on client host ``i mod
12`` and a random one of 6 server hosts), and every tenant also crosses its server's SSD
(``ssd0``, served by ``shared/data/wc62/profile_ssd.json``): a storage tenant's latency is its
request, device and response (thesis §4.4.6: storage is one more queue). Each order draws the
arrival order and per tenant a 99.9th-percentile SLO from {10, 20, 50, 100} ms × scale (the
scale as Fig. 4.10's, computed from the tenants' bounds alone with their device). Decisions are
made from the first 300 s of each shifted trace; the admitted set's last 300 s are replayed open
loop in the simulator (:func:`tailbound.sim.plan.replay` of the policy's plan: priorities at all
five queues, the baselines' rate limits at the senders, the device's dispatch as the SSD
profile's) and a tenant violates when its replayed 99.9th percentile exceeds its SLO.

Policies: ``snc-meister`` (SNC-Meister's bound with the storage flow, floored by the tenant's
network latency alone: ``tailbound admit``'s default rule), ``dnc``, ``silo``, ``qjump`` (the DNC
baselines with their storage stage, :mod:`tailbound.policies.dnc_baselines`), and ``none`` (no
admission control: every tenant admitted, priorities by SLO as SNC-Meister's). Run:
``python -m tailbound.experiments.snc_storage --out out/experiments [--tenants 62 --orders 5]``.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tailbound.experiments._snc_common import find_data, parser, write_outputs
from tailbound.experiments.snc_fig410 import BASE_SLOS_S, arrivals, population
from tailbound.model import Tenant, TenantSet
from tailbound.policies.admission import Configured, admit_in_order, network_plan
from tailbound.policies.dnc_baselines import CurveCache
from tailbound.policies.registry import build
from tailbound.sim.plan import replay
from tailbound.sim.results import percentile
from tailbound.snc.tenants import FitCache, priorities_by_slo

POLICIES = ("snc-meister", "dnc", "silo", "qjump", "none")
DEVICE = "ssd0"
LINK = 125e6


@dataclass(frozen=True)
class Result:
    policy: str
    order: int
    admitted: int
    violations: int
    worst_ratio: float


def with_device(tenants: Sequence[Tenant]) -> list[Tenant]:
    return [dataclasses.replace(t, device=DEVICE) for t in tenants]


def run(
    data: Path, tenants: int, orders: int, seed: int, scale: float | None
) -> tuple[list[Result], float]:
    profile = data / "wc62" / "profile_ssd.json"
    pop = population(data, tenants, seed)
    specs = with_device(pop.tenants)
    tset = TenantSet(tuple(specs), LINK, ssd_profile=profile)
    fits = FitCache(traces=dict(pop.first))
    curves = CurveCache(tset, dict(pop.first))
    alone: dict[tuple[str, float], float] = {}
    policies = {
        "snc-meister": build(
            "snc-meister", "admission", tset, fits=fits, alone_floor=True, alone=alone
        ),
        **{p: build(p, "admission", tset, curves=curves) for p in ("dnc", "silo", "qjump")},
    }
    if scale is None:
        bounds = [
            max(policies["snc-meister"]([t])[0].latency_s, policies["dnc"]([t])[0].latency_s)
            for t in specs
        ]
        scale = float(math.ceil(statistics.quantiles(bounds, n=10)[-1] / BASE_SLOS_S[0]))
    results = []
    for order in range(orders):
        arriving = with_device(arrivals(pop, order, seed, scale))
        for name in POLICIES:
            if name == "none":
                admitted = arriving
                levels = priorities_by_slo([t.slo_s for t in admitted])
                configured = [Configured(level) for level in levels]
                mode = "shaping"
            else:
                policy = policies[name]
                decisions = admit_in_order(arriving, policy)
                admitted = [d.tenant for d in decisions if d.admitted]
                configured = policy.configure(admitted)
                mode = policy.mode
            plan = network_plan(name, admitted, configured, link_bytes_per_s=LINK, mode=mode)
            latencies = replay(
                plan,
                {t.name: pop.second[str(t.trace)] for t in admitted},
                profile=profile,
                link_bandwidth_bytes_per_s=LINK,
            )
            ratios = [percentile(latencies[t.name], t.percentile) / t.slo_s for t in admitted]
            results.append(
                Result(
                    name,
                    order,
                    len(admitted),
                    sum(r > 1.0 for r in ratios),
                    max(ratios, default=math.nan),
                )
            )
            print(results[-1], flush=True)
    return results, scale


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__.split("\n\n")[0] if __doc__ else "")
    p.add_argument("--tenants", type=int, default=62)
    p.add_argument("--orders", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scale", type=float, help="SLO scale (default: computed, see docstring)")
    args = p.parse_args(argv)
    data = Path(args.data) if args.data else find_data()
    results, scale = run(data, args.tenants, args.orders, args.seed, args.scale)
    rows = []
    medians = []
    for name in POLICIES:
        rs = [r for r in results if r.policy == name]
        admitted = [r.admitted for r in rs]
        medians.append(statistics.median(admitted))
        rows.append(
            [
                name,
                len(rs),
                f"{statistics.median(admitted):g}",
                f"{min(admitted)}–{max(admitted)}",
                sum(admitted),
                sum(r.violations for r in rs),
                f"{max(r.worst_ratio for r in rs):.2f}",
            ]
        )
    header = [
        "policy",
        "orders",
        "admitted (median)",
        "min–max",
        "tenants replayed",
        "SLO violations (replayed p99.9 > SLO)",
        "worst p99.9 ÷ SLO",
    ]
    png = write_outputs(
        Path(args.out),
        "snc_storage",
        f"SNC-Meister with storage (thesis §4.4.6): {args.tenants} tenants, SLO scale {scale:g}",
        header,
        rows,
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    xs = range(len(POLICIES))
    ax.bar(xs, medians, color="tab:blue", label="admitted (median)")
    ax.bar(
        xs,
        [
            sum(r.violations for r in results if r.policy == n) / max(args.orders, 1)
            for n in POLICIES
        ],
        color="tab:red",
        label="violations per order",
    )
    ax.set_xticks(list(xs), list(POLICIES))
    ax.set_ylabel("tenants")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
