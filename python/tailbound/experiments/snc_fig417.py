"""Thesis Figs. 4.17 and 4.18: storage tenants with 150/200/400 ms SLOs at the 99.9th and the
90th percentile — no admission control, DNC and SNC-Meister, admitted tenants and each tenant's
replayed latency against its SLO.

The thesis (§4.4.6) runs 35 storage workloads whose SLOs are a mixture of 150, 200 and 400 ms,
lower-numbered workloads with lower SLOs, once with 99.9th-percentile SLOs (Fig. 4.17) and once
with 90th-percentile ones (Fig. 4.18); DNC is PriorityMeister, which cannot tell the two
percentiles apart. Here: :mod:`~tailbound.experiments.snc_storage`'s setting — Fig. 4.10's
population of wc62 tenants (:func:`~tailbound.experiments.snc_fig410.population`), each also
crossing its server's SSD (``profile_ssd.json``) — with ``--tenants`` 35 on ``--clients`` client
and ``--servers`` server hosts (tenant ``i`` on client ``i mod`` clients, a random server;
default 12 and 2: two SSDs, so that the devices are what the tenants share), arriving in their
numbered order. Tenant ``i`` has SLO 150 ms if ``i < 12``, 200 ms if ``i < 24``, else 400 ms,
each × ``--slo-scale``. Policies: ``none`` (everyone admitted, priorities by SLO), ``dnc``
(PriorityMeister-style DNC with its storage stage) and ``snc-meister`` (its storage flow,
floored by the tenant's network latency alone: ``tailbound admit``'s default rule). Decisions
from the first 300 s of each shifted trace; the admitted tenants' last 300 s replayed in the
simulator with their devices and judged at the SLO's percentile over the whole half and every
3-minute window (:class:`~tailbound.experiments._snc_common.Judged`: a miss alone, device
included, is counted apart from violations).

Run: ``python -m tailbound.experiments.snc_fig417 --out out/experiments`` (a small
configuration: ``--tenants 8``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tailbound.experiments._snc_common import (
    Judged,
    Replayer,
    find_data,
    parser,
    rehost,
    write_outputs,
)
from tailbound.experiments.snc_fig410 import Admitted, Population, decide, population
from tailbound.experiments.snc_storage import LINK, with_device
from tailbound.model import Slo, Tenant, TenantSet
from tailbound.plotting import save_figure
from tailbound.policies.dnc_baselines import CurveCache
from tailbound.policies.registry import registered
from tailbound.snc.tenants import FitCache
from tailbound.tables import fmt_ms, markdown_table

POLICIES = ("none", *registered(("dnc", "snc-meister"), "admission"))
PERCENTILES = (0.999, 0.9)
SLOS_S = (0.150, 0.200, 0.400)


def storage_population(
    data: Path, tenants: int, clients: int, servers: int, seed: int
) -> Population:
    """``tenants`` wc62 tenants with a device each on ``clients`` + ``servers`` hosts."""
    base = population(data, tenants, seed)
    specs = with_device(rehost(base.tenants, clients, servers, seed))
    return Population(tuple(specs), base.first, base.second)


def slo_of(i: int, n: int, scale: float = 1.0) -> float:
    """Tenant ``i``'s SLO of :data:`SLOS_S` (lower-numbered tenants tighter), in thirds of
    ``n`` rounded as the thesis' 35 → 12, 12, 11."""
    third = math.ceil(n / 3)
    return SLOS_S[min(i // third, 2)] * scale


def with_slos(tenants: Sequence[Tenant], slos_s: Sequence[float], p: float) -> list[Tenant]:
    return [dataclasses.replace(t, slo=Slo(s, p)) for t, s in zip(tenants, slos_s, strict=True)]


@dataclass(frozen=True)
class Outcome:
    percentile: float
    policy: str
    admitted: tuple[str, ...]
    judged: tuple[Judged, ...]
    seconds: float

    @property
    def violations(self) -> int:
        return sum(j.violates for j in self.judged)

    @property
    def misses_alone(self) -> int:
        return sum(j.misses_alone for j in self.judged)


@dataclass
class Storage:
    """The population with its caches, shared by the runs over percentiles and SLO draws."""

    pop: Population
    profile: Path
    fits: FitCache
    curves: CurveCache
    replayer: Replayer
    alone: dict[tuple[str, float], float]

    @classmethod
    def of(cls, data: Path, pop: Population) -> Storage:
        profile = data / "wc62" / "profile_ssd.json"
        tset = TenantSet(pop.tenants, LINK, ssd_profile=profile)
        return cls(
            pop,
            profile,
            FitCache(traces=dict(pop.first)),
            CurveCache(tset, dict(pop.first)),
            Replayer(pop.second, LINK, profile),
            {},
        )

    def decide(self, policy: str, arriving: Sequence[Tenant]) -> Admitted:
        """``policy``'s admission of ``arriving`` (:func:`.snc_fig410.decide`)."""
        tset = TenantSet(tuple(arriving), LINK, ssd_profile=self.profile)
        return decide(policy, arriving, tset, self.fits, self.curves, self.alone)


def run(
    data: Path, tenants: int, clients: int, servers: int, seed: int, slo_scale: float
) -> tuple[Population, list[Outcome]]:
    pop = storage_population(data, tenants, clients, servers, seed)
    st = Storage.of(data, pop)
    slos = [slo_of(i, tenants, slo_scale) for i in range(tenants)]
    out = []
    for p in PERCENTILES:
        arriving = with_slos(pop.tenants, slos, p)
        for policy in POLICIES:
            start = time.perf_counter()
            got = st.decide(policy, arriving)
            judged = st.replayer.judge(got.tenants, got.configured, got.mode)
            out.append(
                Outcome(
                    p,
                    policy,
                    tuple(t.name for t in got.tenants),
                    tuple(judged),
                    time.perf_counter() - start,
                )
            )
            o = out[-1]
            print(p, policy, len(o.admitted), o.violations, o.misses_alone, flush=True)
    return pop, out


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=35, help="tenants (default 35)")
    p.add_argument("--clients", type=int, default=12, help="client hosts (default 12)")
    p.add_argument("--servers", type=int, default=2, help="server hosts, one SSD each (default 2)")
    p.add_argument("--slo-scale", type=float, default=1.0, help="multiplies the SLOs (default 1)")
    p.add_argument("--seed", type=int, default=417)
    args = p.parse_args(argv)
    if min(args.tenants, args.clients, args.servers) < 1 or args.slo_scale <= 0:
        p.error("--tenants, --clients, --servers must be at least 1, --slo-scale positive")
    start = time.perf_counter()
    data = find_data(args.data)
    pop, outcomes = run(data, args.tenants, args.clients, args.servers, args.seed, args.slo_scale)
    wall = time.perf_counter() - start
    rows = [
        [
            f"{o.percentile * 100:g}%",
            o.policy,
            len(o.admitted),
            f"{len(o.admitted) / args.tenants:.0%}",
            o.violations,
            o.misses_alone,
            f"{max((j.ratio for j in o.judged), default=math.nan):.2f}",
            f"{o.seconds:.1f}",
        ]
        for o in outcomes
    ]
    header = [
        "SLO percentile",
        "policy",
        "admitted",
        "of all",
        "SLO violations (by sharing)",
        "misses alone",
        "worst latency ÷ SLO",
        "decide + replay s",
    ]
    # per tenant: SLO and each outcome's replayed latency (worst of whole half and windows)
    names = [t.name for t in pop.tenants]
    per = {(o.percentile, o.policy): {j.name: j for j in o.judged} for o in outcomes}
    detail = [
        [
            n,
            fmt_ms(slo_of(i, args.tenants, args.slo_scale)),
            *[
                (
                    f"{fmt_ms(max(j.whole_s, j.window_s))}{' ✗' if j.misses else ''}"
                    if (j := per[(q, pol)].get(n))
                    else "—"
                )
                for q in PERCENTILES
                for pol in POLICIES
            ],
        ]
        for i, n in enumerate(names)
    ]
    title = (
        f"Figs. 4.17/4.18 reproduction: {args.tenants} storage tenants on "
        f"{args.clients}+{args.servers} hosts (SSD profile), SLOs "
        f"{'/'.join(f'{s * args.slo_scale * 1e3:g}' for s in SLOS_S)} ms, seed {args.seed}, "
        f"{wall:.0f} s"
    )
    extra = (
        "\nEach tenant's replayed latency at its SLO's percentile (ms; the worse of the whole "
        "half and the worst 3-minute window; ✗ above the SLO, — not admitted):\n\n"
        + markdown_table(
            ["tenant", "SLO ms", *[f"{q * 100:g}% {pol}" for q in PERCENTILES for pol in POLICIES]],
            detail,
        )
        + "\n"
    )
    png = write_outputs(Path(args.out), "snc_fig417", title, header, rows, extra=extra)
    plot(png, title, outcomes, names, args.tenants, args.slo_scale)
    return 0


def plot(
    png: Path,
    title: str,
    outcomes: Sequence[Outcome],
    names: Sequence[str],
    n: int,
    scale: float,
) -> None:
    """Per percentile (row): admitted per policy (bars), then per policy each tenant's replayed
    latency (dots) and its SLO (red line), as the thesis' figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(PERCENTILES), 1 + len(POLICIES), figsize=(13, 3.2 * len(PERCENTILES)), squeeze=False
    )
    xs = range(len(names))
    for row, q in zip(axes, PERCENTILES, strict=True):
        mine = {o.policy: o for o in outcomes if o.percentile == q}
        row[0].bar(range(len(POLICIES)), [len(mine[p].admitted) for p in POLICIES])
        row[0].set_xticks(range(len(POLICIES)), list(POLICIES))
        row[0].set_ylabel(f"admitted ({q * 100:g}% SLOs)")
        for ax, p in zip(row[1:], POLICIES, strict=True):
            got = {j.name: j for j in mine[p].judged}
            ax.step(xs, [slo_of(i, n, scale) * 1e3 for i in xs], "r-", where="mid", label="SLO")
            ax.plot(
                [i for i, m in enumerate(names) if m in got],
                [max(got[m].whole_s, got[m].window_s) * 1e3 for m in names if m in got],
                "o",
                markersize=3,
            )
            ax.set_yscale("log")
            ax.set_title(p, fontsize=8)
            ax.set_xlabel("tenant")
            ax.set_ylabel(f"p{q * 100:g} latency (ms)")
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    save_figure(fig, png, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
