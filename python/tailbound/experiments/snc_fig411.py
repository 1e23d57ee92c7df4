"""Thesis Fig. 4.11: SNC-Meister and the DNC baselines against OPT, an empirical optimum.

OPT (thesis §4.4.2) is found by trial and error on the replayed workloads, considering them only
in their arrival order: **the largest n such that the first n tenants to arrive, replayed
together, meet their SLOs**. Here the trials are replays in the simulator of the tenants' second
halves (the data every policy's admission is judged on), enforced as SNC-Meister enforces (strict
priorities by SLO, no rate limit). A tenant "meets its SLO" as issue 14 counts it: its 99.9th
percentile over the whole half and over every 3-minute window (thesis §4.3.3) is within the SLO,
or it misses even when replayed alone (its own trace, nothing else present) — a miss no
admission can prevent except by rejecting it, reported in its own column for every policy and
not counted against a prefix.

The search: prefixes are tried from the longest (all ``--tenants``) downwards and the first whose
replay has no violation is OPT — the largest such n by construction, with no assumption of
monotonicity. (A shortcut such as bisection would assume that a prefix passing implies every
shorter prefix passes. That does not hold in general: strict priority with FIFO inside a level
only adds delay at one link, but across two links a tenant's traffic that waits longer at the
first hop arrives later at the second, which can *relieve* a third tenant there. The only
monotone fact used anywhere is the floor of :mod:`tailbound.policies.floors`: a tenant's latency
with others present is never below its latency alone.) Each prefix replay is memoised. The cost
is one replay per prefix from ``--tenants`` down to OPT, which is why the instance is small.

A second reference, ``oracle``, reads "trial and error in arrival order" as an admission:
at every arrival the tenant is admitted iff the replay of the tenants admitted so far with it has
no violation (one replay per arrival, memoryless like the policies, but judging on the very
data it is judged on). Unlike OPT it may skip a tenant and admit later ones, as the policies do;
it is greedy, not an upper bound (a larger subset may exist — the largest subset would take up
to 2^n replays).

Setup: Fig. 4.10's population and orders (:mod:`~tailbound.experiments.snc_fig410`: tenant ``i``
replays wc62 trace ``i mod 62`` circularly shifted, on client host ``i mod 12`` and a random one
of 6 server hosts; each order draws the arrival order and 99.9th-percentile SLOs from {10, 20,
50, 100} ms × scale), with ``--tenants`` 32 instead of 180 and ``--scale`` 1 by default (the
tightest SLOs, so that sharing limits admission in a 32-tenant instance as it does in Fig. 4.10
with 180 tenants at scale 3). The policies decide from the first halves as in Fig. 4.10 and
their admitted sets are replayed and judged as OPT's prefixes are.

Run: ``python -m tailbound.experiments.snc_fig411 --out out/experiments`` (a small
configuration: ``--tenants 10 --orders 1``).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tailbound.cli.options import add_executor, progress_disabled, runner_of
from tailbound.executor import Runner
from tailbound.experiments._snc_common import (
    Judged,
    Replayer,
    by_slo,
    bytes_per_s,
    find_data,
    parser,
    plot_boxes,
    write_outputs,
)
from tailbound.experiments.snc_fig410 import Population, arrivals, caches, decide, population
from tailbound.model import Tenant, TenantSet
from tailbound.policies.dnc_baselines import CurveCache
from tailbound.policies.registry import registered
from tailbound.snc.tenants import FitCache
from tailbound.tables import markdown_table

POLICIES = registered(("snc-meister", "dnc", "silo", "qjump"), "admission")
OPTIMA = ("OPT", "oracle")


@dataclass(frozen=True)
class Row:
    order: int
    policy: str  # a policy of POLICIES, or one of OPTIMA
    admitted: int
    bytes_per_s: float
    violations: int  # misses caused by sharing
    misses_alone: int
    worst_ratio: float  # largest replayed latency ÷ SLO (whole half or window)
    replays: int  # simulator runs this row took (OPT: prefixes tried; oracle: arrivals)
    seconds: float

    @property
    def meeting(self) -> int:
        """Admitted tenants that meet their SLOs in the replay."""
        return self.admitted - self.violations - self.misses_alone


@dataclass
class Opt:
    """OPT's search for one arrival order: prefix length → its judged replay (memoised)."""

    arriving: Sequence[Tenant]
    replayer: Replayer
    tried: dict[int, list[Judged]]

    def judged(self, n: int) -> list[Judged]:
        if n not in self.tried:
            prefix = self.arriving[:n]
            self.tried[n] = self.replayer.judge(prefix, by_slo(prefix))
        return self.tried[n]

    def passes(self, n: int) -> bool:
        return not any(j.violates for j in self.judged(n))

    def search(self) -> int:
        """The largest n whose prefix passes (module docstring): longest first, no shortcut."""
        return next(n for n in range(len(self.arriving), -1, -1) if self.passes(n))

    def in_order(self) -> tuple[list[Tenant], list[Judged], int]:
        """Trial and error at every arrival: admit the arriving tenant iff the replay of the
        admitted tenants with it has no violation. Returns the admitted tenants, their judged
        replay and the replays it took."""
        admitted: list[Tenant] = []
        judged: list[Judged] = []
        for t in self.arriving:
            trial = [*admitted, t]
            got = self.replayer.judge(trial, by_slo(trial))
            if not any(j.violates for j in got):
                admitted, judged = trial, got
        return admitted, judged, len(self.arriving)


def _row(
    order: int, policy: str, tenants: Sequence[Tenant], judged: Sequence[Judged], pop: Population
) -> tuple[int, str, int, float, int, int, float]:
    return (
        order,
        policy,
        len(tenants),
        bytes_per_s([pop.second[str(t.trace)] for t in tenants]),
        sum(j.violates for j in judged),
        sum(j.misses_alone for j in judged),
        max((j.ratio for j in judged), default=math.nan),
    )


#: Each worker process's population, caches and replayer, by (data folder, tenants, seed):
#: built by its first order, reused by the orders it runs next (memoised results, so the rows
#: do not depend on which orders share a process).
_State = tuple[Population, FitCache, CurveCache, Replayer, dict[tuple[str, float], float]]
_STATE: dict[tuple[str, int, int], _State] = {}


def _state(data: str, tenants: int, seed: int) -> _State:
    key = (data, tenants, seed)
    if key not in _STATE:
        _STATE.clear()  # one population per process at a time
        pop = population(Path(data), tenants, seed)
        fits, curves = caches(pop)
        _STATE[key] = (pop, fits, curves, Replayer(pop.second), {})
    return _STATE[key]


def _order_rows(shared: tuple[str, int, int, float, tuple[str, ...]], order: int) -> list[Row]:
    """The rows of one arrival order (each policy's, OPT's and the oracle's): a
    :class:`~tailbound.executor.Runner` task."""
    data, tenants, seed, scale, policies = shared
    pop, fits, curves, replayer, alone = _state(data, tenants, seed)
    arriving = arrivals(pop, order, seed, scale)
    tset = TenantSet(tuple(arriving))
    rows = []
    for policy in policies:
        start = time.perf_counter()
        got = decide(policy, arriving, tset, fits, curves, alone)
        judged = replayer.judge(got.tenants, got.configured, got.mode)
        rows.append(
            Row(*_row(order, policy, got.tenants, judged, pop), 1, time.perf_counter() - start)
        )
        print(rows[-1], flush=True)
    start = time.perf_counter()
    opt = Opt(arriving, replayer, {})
    n = opt.search()
    rows.append(
        Row(
            *_row(order, "OPT", arriving[:n], opt.judged(n), pop),
            len(opt.tried),
            time.perf_counter() - start,
        )
    )
    print(rows[-1], flush=True)
    start = time.perf_counter()
    chosen, judged, replays = opt.in_order()
    rows.append(
        Row(*_row(order, "oracle", chosen, judged, pop), replays, time.perf_counter() - start)
    )
    print(rows[-1], flush=True)
    return rows


def run(
    data: Path,
    tenants: int,
    orders: Sequence[int],
    seed: int,
    scale: float,
    policies: Sequence[str] = POLICIES,
    *,
    quiet: bool = True,
    runner: Runner | None = None,
) -> list[Row]:
    """The rows of the arrival orders ``orders`` (each policy's, OPT's and the oracle's), in
    order; one task per order on ``runner`` (default: in this process), each worker building
    the population once."""
    if runner is None:
        runner = Runner(progress=not progress_disabled(quiet))
    shared = (str(data), tenants, seed, scale, tuple(policies))
    parts = runner.map(_order_rows, list(orders), shared=shared, desc="snc_fig411", unit="order")
    return [row for part in parts for row in part]


HEADER = [
    "policy",
    "orders",
    "admitted (median)",
    "min–max",
    "median ÷ OPT's median",
    "admitted MB/s (median)",
    "MB/s ÷ OPT's",
    "SLO violations (by sharing)",
    "misses alone",
    "meeting their SLOs (median)",
    "worst latency ÷ SLO",
]


def summary(rows: Sequence[Row], policies: Sequence[str]) -> list[list[object]]:
    def med(name: str, key: str) -> float:
        return statistics.median(getattr(r, key) for r in rows if r.policy == name)

    out: list[list[object]] = []
    for p in [*policies, *OPTIMA]:
        rs = [r for r in rows if r.policy == p]
        counts = [r.admitted for r in rs]
        out.append(
            [
                p,
                len(rs),
                f"{statistics.median(counts):g}",
                f"{min(counts)}–{max(counts)}",
                f"{med(p, 'admitted') / med('OPT', 'admitted'):.2f}",
                f"{med(p, 'bytes_per_s') / 1e6:.2f}",
                f"{med(p, 'bytes_per_s') / med('OPT', 'bytes_per_s'):.2f}",
                sum(r.violations for r in rs),
                sum(r.misses_alone for r in rs),
                f"{statistics.median(r.meeting for r in rs):g}",
                f"{max(r.worst_ratio for r in rs):.2f}",
            ]
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=32, help="tenants per order (default 32)")
    p.add_argument("--orders", type=int, default=10, help="random arrival orders (default 10)")
    p.add_argument("--scale", type=float, default=1.0, help="SLO scale (default 1)")
    p.add_argument("--seed", type=int, default=411)
    add_executor(p, "arrival orders")
    args = p.parse_args(argv)
    if min(args.tenants, args.orders) < 1 or args.scale <= 0:
        p.error("--tenants and --orders must be at least 1, --scale positive")
    start = time.perf_counter()
    data = find_data(args.data)
    with runner_of(args) as runner:
        rows = run(data, args.tenants, range(args.orders), args.seed, args.scale, runner=runner)
    wall = time.perf_counter() - start
    per_order = [
        [o, *[next(r.admitted for r in rows if r.order == o and r.policy == q) for q in labels]]
        for o in range(args.orders)
        for labels in [[*POLICIES, *OPTIMA]]
    ]
    replays = [r.replays for r in rows if r.policy == "OPT"]
    title = (
        f"Fig. 4.11 reproduction: {args.tenants} tenants, {args.orders} orders, 99.9th-percentile "
        f"SLOs {'/'.join(f'{s * args.scale * 1e3:g}' for s in (0.01, 0.02, 0.05, 0.1))} ms, seed "
        f"{args.seed}, {wall:.0f} s"
    )
    extra = (
        "\nAdmitted tenants per order:\n\n"
        + markdown_table(["order", *POLICIES, *OPTIMA], per_order)
        + f"\n\nOPT's search replayed {sum(replays)} prefixes ({min(replays)}–{max(replays)} per"
        " order, longest first).\n"
    )
    png = write_outputs(
        Path(args.out), "snc_fig411", title, HEADER, summary(rows, POLICIES), extra=extra
    )
    labels = [*POLICIES, *OPTIMA]
    plot_boxes(
        png,
        title,
        labels,
        {
            "admitted tenants": [[r.admitted for r in rows if r.policy == q] for q in labels],
            "admitted tenants' MB/s": [
                [r.bytes_per_s / 1e6 for r in rows if r.policy == q] for q in labels
            ],
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
