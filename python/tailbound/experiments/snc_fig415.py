"""Thesis Fig. 4.15: admitted tenants against cluster size, SNC-Meister and the best DNC baseline.

The thesis (§4.4.5) replicates Fig. 4.10's 180 workloads and its machines by a scaling factor
``k`` and counts the workloads SNC-Meister admits, with the order and the placement of tenants
on servers random as before. Here: for each ``k`` of ``--factors``, Fig. 4.10's population
(:func:`~tailbound.experiments.snc_fig410.population`) of ``k × --tenants`` tenants, the unit
replicated: tenant ``i`` replays the unit's tenant ``i mod --tenants``'s wc62 trace (trace
``(i mod --tenants) mod 62``) with its own random circular shift, on ``k × --clients`` client
and ``k × --servers`` server hosts (tenant ``i`` on client ``i mod`` clients, a random server),
``--orders`` random arrival orders with Fig. 4.10's SLOs ({10, 20, 50, 100} ms × ``--scale``,
99.9th percentile). Policies: ``snc-meister`` (with its measured floor, as in Fig. 4.10) and
``dnc``, the best DNC baseline of Fig. 4.10. Counts admission decisions only (the figure's
metric); the admitted sets are not replayed (Figs. 4.10 and 4.11 judge them), and the decision
time of each run is reported.

Defaults are a quarter-size cluster (45 tenants on 3 client and 2 server hosts per unit, scale 3
as Fig. 4.10's, factors 1–4); the thesis' unit is ``--tenants 180 --clients 12 --servers 6``.

Run: ``python -m tailbound.experiments.snc_fig415 --out out/experiments`` (a small
configuration: ``--tenants 12 --factors 1,2 --orders 1``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tailbound.cli.options import progress
from tailbound.experiments._snc_common import (
    Line,
    find_data,
    parser,
    plot_latency_ms,
    rehost,
    write_outputs,
)
from tailbound.experiments.snc_fig410 import (
    TRACES,
    Population,
    arrivals,
    caches,
    decide,
    population,
)
from tailbound.model import TenantSet
from tailbound.policies.registry import registered

POLICIES = registered(("snc-meister", "dnc"), "admission")


@dataclass(frozen=True)
class Row:
    factor: int
    order: int
    policy: str
    tenants: int
    admitted: int
    seconds: float


def run(
    data: Path,
    factors: Sequence[int],
    tenants: int,
    clients: int,
    servers: int,
    orders: int,
    seed: int,
    scale: float,
    *,
    quiet: bool = True,
) -> list[Row]:
    rows = []
    for k in progress(quiet, iterable=factors, desc="snc_fig415", unit="factor"):
        # tenant i replays the unit's trace i mod tenants: every unit has the same traces
        unit = tuple(i % TRACES for i in range(tenants))
        base = population(data, k * tenants, seed, unit)
        pop = Population(
            tuple(rehost(base.tenants, k * clients, k * servers, seed)), base.first, base.second
        )
        fits, curves = caches(pop)
        alone: dict[tuple[str, float], float] = {}
        for order in range(orders):
            arriving = arrivals(pop, order, seed, scale)
            tset = TenantSet(tuple(arriving))
            for policy in POLICIES:
                start = time.perf_counter()
                got = decide(policy, arriving, tset, fits, curves, alone)
                rows.append(
                    Row(
                        k,
                        order,
                        policy,
                        len(arriving),
                        len(got.tenants),
                        time.perf_counter() - start,
                    )
                )
                print(rows[-1], flush=True)
    return rows


HEADER = [
    "factor",
    "tenants",
    "hosts (clients+servers)",
    *[f"{p} admitted (median)" for p in POLICIES],
    *[f"{p} per factor" for p in POLICIES],
    "snc-meister ÷ dnc",
    *[f"{p} decision s (median)" for p in POLICIES],
]


def _fields(s: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in s.split(","))
    except ValueError:
        raise ValueError(f"not a comma-separated list of integers: {s!r}") from None
    if not values or min(values) < 1:
        raise ValueError(f"factors must be positive integers: {s!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--factors", default="1,2,3,4", help="scaling factors (default 1,2,3,4)")
    p.add_argument("--tenants", type=int, default=45, help="tenants per unit (default 45)")
    p.add_argument("--clients", type=int, default=3, help="client hosts per unit (default 3)")
    p.add_argument("--servers", type=int, default=2, help="server hosts per unit (default 2)")
    p.add_argument("--orders", type=int, default=2, help="random orders per factor (default 2)")
    p.add_argument("--scale", type=float, default=3.0, help="SLO scale (default 3)")
    p.add_argument("--seed", type=int, default=415)
    args = p.parse_args(argv)
    try:
        factors = _fields(args.factors)
    except ValueError as e:
        p.error(f"--factors: {e}")
    if min(args.tenants, args.clients, args.servers, args.orders) < 1 or args.scale <= 0:
        p.error("--tenants, --clients, --servers, --orders must be at least 1, --scale positive")
    start = time.perf_counter()
    data = find_data(args.data)
    rows = run(
        data,
        factors,
        args.tenants,
        args.clients,
        args.servers,
        args.orders,
        args.seed,
        args.scale,
        quiet=args.quiet,
    )
    wall = time.perf_counter() - start

    def med(k: int, policy: str, key: str) -> float:
        return statistics.median(
            getattr(r, key) for r in rows if r.factor == k and r.policy == policy
        )

    table = [
        [
            k,
            k * args.tenants,
            f"{k * args.clients}+{k * args.servers}",
            *[f"{med(k, q, 'admitted'):g}" for q in POLICIES],
            *[f"{med(k, q, 'admitted') / k:.1f}" for q in POLICIES],
            f"{med(k, 'snc-meister', 'admitted') / max(med(k, 'dnc', 'admitted'), 1):.2f}",
            *[f"{med(k, q, 'seconds'):.1f}" for q in POLICIES],
        ]
        for k in factors
    ]
    title = (
        f"Fig. 4.15 reproduction: {args.tenants} tenants on {args.clients}+{args.servers} hosts "
        f"per unit, factors {args.factors}, {args.orders} orders, SLO scale {args.scale:g}, seed "
        f"{args.seed}, {wall:.0f} s"
    )
    png = write_outputs(Path(args.out), "snc_fig415", title, HEADER, table)
    # plot_latency_ms draws seconds as ms: hand it counts / 1000 to draw counts
    lines: list[Line] = [
        (
            list(factors),
            [med(k, q, "admitted") / 1e3 for k in factors],
            {"marker": "o", "label": q},
        )
        for q in POLICIES
    ]
    plot_latency_ms(png, lines, "scaling factor (tenants and hosts)", "admitted tenants (median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
