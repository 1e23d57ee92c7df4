"""Thesis Fig. 4.12: small-request tenants with very tight SLOs beside large-request tenants.

The thesis' experiment (§4.4.3): eleven tenants whose requests are single packets, with a 4 ms
99.9th-percentile SLO, and twenty-one tenants with larger requests and a 50 ms SLO, arriving in
random order; SNC-Meister against PriorityMeister (``dnc``), Silo++ and QJump++, by admitted
tenants and by the bytes per second they transfer.

Our data (*choice*): no wc62 trace has single-packet requests (block requests are 4 KiB and
up), so the small-request tenants are synthesized: each keeps the arrival times of a wc62 trace
(its real burstiness) and makes every request a read of :data:`SMALL_BYTES` (1 KiB): a 226-byte
request and a 1326-byte response under the wire model of
:class:`~tailbound.profiles.tokens.MessageSizes` — one packet each way. Their arrival patterns
come from :data:`SMALL_TRACES` (the first eleven of the moderate-load traces of
:data:`~tailbound.experiments._snc_common.SIMILAR_TRACES`); the large-request tenants replay
:data:`LARGE_TRACES` (the next 21 wc62 traces not used for the small ones) as recorded. Every
trace is circularly shifted by a random offset as in Fig. 4.10
(:func:`~tailbound.experiments.snc_fig410.population`); decisions use the first 300 s, the
admitted tenants' last 300 s are replayed in the simulator and judged as in Fig. 4.11 (whole half
and 3-minute windows; misses alone apart). The 32 tenants share ``--clients`` client hosts and
``--servers`` server hosts (default 4 and 2, 1 Gb/s links: the thesis' 18 hosts would leave 32
of our tenants nothing to contend for); each order draws the arrival order and the server of each
tenant.

Run: ``python -m tailbound.experiments.snc_fig412 --out out/experiments`` (a small
configuration: ``--orders 1``).
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tailbound.cli.options import progress
from tailbound.experiments._snc_common import (
    SIMILAR_TRACES,
    Replayer,
    bytes_per_s,
    find_data,
    parser,
    plot_boxes,
    rehost,
    write_outputs,
)
from tailbound.experiments.snc_fig410 import Population, caches, decide, population
from tailbound.model import Slo, TenantSet
from tailbound.policies.registry import registered
from tailbound.tables import markdown_table
from tailbound.traces.trace import Op, Trace

POLICIES = registered(("snc-meister", "dnc", "silo", "qjump"), "admission")
SMALL_BYTES = 1024
SMALL_TRACES = SIMILAR_TRACES[:11]
LARGE_TRACES = tuple(i for i in range(62) if i not in SMALL_TRACES)[:21]


def small_requests(trace: Trace) -> Trace:
    """``trace``'s arrival times with every request a read of :data:`SMALL_BYTES`."""
    n = len(trace)
    return dataclasses.replace(
        trace,
        op=np.full(n, Op.READ, dtype=np.uint8),
        size=np.full(n, SMALL_BYTES, dtype=np.int64),
        offset=None,
        name=f"{trace.name} (1 KiB reads)",
    )


def mixed_population(data: Path, seed: int, small: int = 11, large: int = 21) -> Population:
    """``small`` small-request tenants (``s00``…) and ``large`` large-request ones (``l00``…),
    SLO 4 ms and 50 ms at the 99.9th percentile (module docstring); hosts not yet assigned."""
    if not (0 <= small <= len(SMALL_TRACES) and 0 <= large <= len(LARGE_TRACES)):
        raise ValueError(f"at most {len(SMALL_TRACES)} small and {len(LARGE_TRACES)} large")
    base = population(data, small + large, seed, (*SMALL_TRACES[:small], *LARGE_TRACES[:large]))
    tenants, first, second = [], {}, {}
    for i, t in enumerate(base.tenants):
        key = str(t.trace)
        is_small = i < small
        if is_small:
            new = f"{key}#small"
            first[new], second[new] = (
                small_requests(base.first[key]),
                small_requests(base.second[key]),
            )
        else:
            new = key
            first[new], second[new] = base.first[key], base.second[key]
        tenants.append(
            dataclasses.replace(
                t,
                name=f"s{i:02d}" if is_small else f"l{i - small:02d}",
                slo=Slo(0.004 if is_small else 0.050),
                trace=Path(new),
            )
        )
    return Population(tuple(tenants), first, second)


@dataclass(frozen=True)
class Row:
    order: int
    policy: str
    small: int  # small-request tenants admitted
    large: int
    bytes_per_s: float
    violations: int
    misses_alone: int
    worst_ratio: float
    seconds: float

    @property
    def admitted(self) -> int:
        return self.small + self.large


def run(
    data: Path,
    orders: int,
    seed: int,
    clients: int,
    servers: int,
    small: int = 11,
    large: int = 21,
    *,
    quiet: bool = True,
) -> list[Row]:
    pop = mixed_population(data, seed, small, large)
    fits, curves = caches(pop)
    replayer = Replayer(pop.second)
    alone: dict[tuple[str, float], float] = {}
    rows = []
    for order in progress(quiet, iterable=range(orders), desc="snc_fig412", unit="order"):
        arriving = rehost(pop.tenants, clients, servers, seed * 1_000_003 + order)
        random.Random(seed * 1_000_003 + order).shuffle(arriving)
        tset = TenantSet(tuple(arriving))
        for policy in POLICIES:
            start = time.perf_counter()
            got = decide(policy, arriving, tset, fits, curves, alone)
            judged = replayer.judge(got.tenants, got.configured, got.mode)
            rows.append(
                Row(
                    order,
                    policy,
                    sum(t.name.startswith("s") for t in got.tenants),
                    sum(t.name.startswith("l") for t in got.tenants),
                    bytes_per_s([pop.second[str(t.trace)] for t in got.tenants]),
                    sum(j.violates for j in judged),
                    sum(j.misses_alone for j in judged),
                    max((j.ratio for j in judged), default=math.nan),
                    time.perf_counter() - start,
                )
            )
            print(rows[-1], flush=True)
    return rows


HEADER = [
    "policy",
    "orders",
    "admitted (median)",
    "small (median)",
    "large (median)",
    "min–max",
    "admitted MB/s (median)",
    "SLO violations (by sharing)",
    "misses alone",
    "worst latency ÷ SLO",
]


def summary(rows: Sequence[Row]) -> list[list[object]]:
    out: list[list[object]] = []
    for p in POLICIES:
        rs = [r for r in rows if r.policy == p]
        counts = [r.admitted for r in rs]
        out.append(
            [
                p,
                len(rs),
                f"{statistics.median(counts):g}",
                f"{statistics.median(r.small for r in rs):g}",
                f"{statistics.median(r.large for r in rs):g}",
                f"{min(counts)}–{max(counts)}",
                f"{statistics.median(r.bytes_per_s for r in rs) / 1e6:.2f}",
                sum(r.violations for r in rs),
                sum(r.misses_alone for r in rs),
                f"{max(r.worst_ratio for r in rs):.2f}",
            ]
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--orders", type=int, default=10, help="random arrival orders (default 10)")
    p.add_argument("--clients", type=int, default=4, help="client hosts (default 4)")
    p.add_argument("--servers", type=int, default=2, help="server hosts (default 2)")
    p.add_argument("--seed", type=int, default=412)
    args = p.parse_args(argv)
    if min(args.orders, args.clients, args.servers) < 1:
        p.error("--orders, --clients and --servers must be at least 1")
    start = time.perf_counter()
    rows = run(
        find_data(args.data), args.orders, args.seed, args.clients, args.servers, quiet=args.quiet
    )
    wall = time.perf_counter() - start
    title = (
        f"Fig. 4.12 reproduction: 11 small-request tenants (4 ms) and 21 large-request tenants "
        f"(50 ms) on {args.clients}+{args.servers} hosts, {args.orders} orders, seed {args.seed}, "
        f"{wall:.0f} s"
    )
    per_order = [
        [
            o,
            *[
                f"{r.small}+{r.large}"
                for q in POLICIES
                for r in rows
                if r.order == o and r.policy == q
            ],
        ]
        for o in range(args.orders)
    ]
    extra = (
        "\nAdmitted tenants per order (small + large):\n\n"
        + markdown_table(["order", *POLICIES], per_order)
        + "\n"
    )
    png = write_outputs(Path(args.out), "snc_fig412", title, HEADER, summary(rows), extra=extra)
    plot_boxes(
        png,
        title,
        POLICIES,
        {
            "admitted tenants": [[r.admitted for r in rows if r.policy == q] for q in POLICIES],
            "admitted tenants' MB/s": [
                [r.bytes_per_s / 1e6 for r in rows if r.policy == q] for q in POLICIES
            ],
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
