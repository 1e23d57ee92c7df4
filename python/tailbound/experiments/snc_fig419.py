"""Thesis Fig. 4.19: histograms of the storage tenants admitted by SNC-Meister and DNC over
random SLO draws, at the 99.9th and the 90th percentile.

The thesis (§4.4.6) draws 1000 random sets of 35 SLOs between 150 and 500 ms and compares the
tenants SNC-Meister and DNC (PriorityMeister) admit, with 99.9th-percentile SLOs (a) and 90th (b).
Here: Figs. 4.17/4.18's storage setting (:mod:`~tailbound.experiments.snc_fig417`: 35 wc62
tenants with their server's SSD on 12 client and 2 server hosts, arriving in their numbered
order), and each draw gives every tenant an SLO uniform over {150, 200, …, 500} ms
(*choice*: a 50 ms grid, 8 values, so that priorities by SLO map each value to one of the 8
priority levels instead of merging continuous values into the last level). DNC's decisions do
not depend on the percentile (it bounds the 100th): they are computed once per draw at the 99.9th
(the test checks they are the same at the 90th). Admission decisions only, as the figure; with
``--replay`` each admitted set is also replayed on the second halves and judged
(:class:`~tailbound.experiments._snc_common.Judged`).

Defaults are small (``--draws 20``, a few minutes); the thesis' run is ``--draws 1000``.

Run: ``python -m tailbound.experiments.snc_fig419 --out out/experiments`` (a small
configuration: ``--tenants 8 --draws 2``).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tailbound.cli.options import progress
from tailbound.experiments._snc_common import find_data, parser, write_outputs
from tailbound.experiments.snc_fig417 import Storage, storage_population, with_slos
from tailbound.plotting import save_figure
from tailbound.policies.registry import registered

#: The policies compared: SNC-Meister and the DNC baseline.
POLICIES = registered(("snc-meister", "dnc"), "admission")
SNC, DNC = POLICIES
PERCENTILES = (0.999, 0.9)
SLO_GRID_S = tuple(0.150 + 0.050 * k for k in range(8))  # 150, 200, …, 500 ms


@dataclass(frozen=True)
class Draw:
    draw: int
    percentile: float
    policy: str
    admitted: int
    violations: int | None  # by sharing, when replayed
    misses_alone: int | None


def draw_slos(n: int, seed: int, draw: int) -> list[float]:
    rng = random.Random(seed * 1_000_003 + draw)
    return [rng.choice(SLO_GRID_S) for _ in range(n)]


def run(
    data: Path,
    tenants: int,
    clients: int,
    servers: int,
    draws: int,
    seed: int,
    replay: bool,
    *,
    quiet: bool = True,
) -> list[Draw]:
    pop = storage_population(data, tenants, clients, servers, seed)
    st = Storage.of(data, pop)
    out: list[Draw] = []
    for d in progress(quiet, iterable=range(draws), desc="snc_fig419", unit="draw"):
        slos = draw_slos(tenants, seed, d)
        for p in PERCENTILES:
            for policy in POLICIES:
                # the DNC baseline's worst case does not depend on the percentile: the first
                if policy == DNC and p != PERCENTILES[0]:
                    first = next(r for r in out if r.draw == d and r.policy == DNC)
                    out.append(
                        Draw(d, p, DNC, first.admitted, first.violations, first.misses_alone)
                    )
                    continue
                got = st.decide(policy, with_slos(pop.tenants, slos, p))
                violations = misses = None
                if replay:
                    judged = st.replayer.judge(got.tenants, got.configured, got.mode)
                    violations = sum(j.violates for j in judged)
                    misses = sum(j.misses_alone for j in judged)
                out.append(Draw(d, p, policy, len(got.tenants), violations, misses))
                print(out[-1], flush=True)
    return out


def summary(rows: Sequence[Draw]) -> list[list[object]]:
    table: list[list[object]] = []
    for p in PERCENTILES:
        snc = [r.admitted for r in rows if r.percentile == p and r.policy == SNC]
        dnc = [r.admitted for r in rows if r.percentile == p and r.policy == DNC]
        for policy, counts in ((SNC, snc), (DNC, dnc)):
            rs = [r for r in rows if r.percentile == p and r.policy == policy]
            replayed = [r for r in rs if r.violations is not None]
            table.append(
                [
                    f"{p * 100:g}%",
                    policy,
                    len(counts),
                    f"{statistics.mean(counts):.1f}",
                    f"{statistics.median(counts):g}",
                    f"{min(counts)}–{max(counts)}",
                    f"{statistics.mean(counts) / statistics.mean(dnc):.2f}",
                    f"{sum(s > c for s, c in zip(snc, dnc, strict=True)) / len(snc):.0%}"
                    if policy == SNC
                    else "",
                    sum(r.violations or 0 for r in replayed) if replayed else "not replayed",
                    sum(r.misses_alone or 0 for r in replayed) if replayed else "",
                ]
            )
    return table


HEADER = [
    "SLO percentile",
    "policy",
    "draws",
    "admitted (mean)",
    "median",
    "min–max",
    "mean ÷ dnc's mean",
    "draws where snc-meister admits more",
    "SLO violations (by sharing)",
    "misses alone",
]


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=20, help="random SLO draws (default 20)")
    p.add_argument("--tenants", type=int, default=35, help="tenants (default 35)")
    p.add_argument("--clients", type=int, default=12, help="client hosts (default 12)")
    p.add_argument("--servers", type=int, default=2, help="server hosts, one SSD each (default 2)")
    p.add_argument("--replay", action="store_true", help="replay and judge every admitted set")
    p.add_argument("--seed", type=int, default=419)
    args = p.parse_args(argv)
    if min(args.draws, args.tenants, args.clients, args.servers) < 1:
        p.error("--draws, --tenants, --clients and --servers must be at least 1")
    start = time.perf_counter()
    data = find_data(args.data)
    rows = run(
        data,
        args.tenants,
        args.clients,
        args.servers,
        args.draws,
        args.seed,
        args.replay,
        quiet=args.quiet,
    )
    wall = time.perf_counter() - start
    title = (
        f"Fig. 4.19 reproduction: {args.tenants} storage tenants on {args.clients}+{args.servers}"
        f" hosts (SSD profile), {args.draws} draws of SLOs in 150–500 ms, seed {args.seed}, "
        f"{wall:.0f} s"
    )
    png = write_outputs(Path(args.out), "snc_fig419", title, HEADER, summary(rows))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PERCENTILES), figsize=(9, 3.5), squeeze=False)
    for ax, q in zip(axes[0], PERCENTILES, strict=True):
        for policy, color in ((DNC, "tab:gray"), (SNC, "tab:blue")):
            counts = [r.admitted for r in rows if r.percentile == q and r.policy == policy]
            ax.hist(
                counts,
                bins=range(0, args.tenants + 2),
                color=color,
                alpha=0.7,
                label=policy,
            )
        ax.set_xlabel(f"admitted tenants ({q * 100:g}% SLOs)")
        ax.set_ylabel("draws")
        ax.legend()
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    save_figure(fig, png, dpi=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
