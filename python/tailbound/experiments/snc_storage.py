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

Policies: ``snc-meister`` (SNC-Meister's bound with the storage flow under ``tailbound admit``'s
default rule, :class:`~tailbound.policies.admission_policies.SncRule`: raised by the analysis'
error on the tenant alone and floored by its latency alone, both measured through its network
path and device, split levels, and each tenant's network traffic beyond its first half's load
bucket demoted below every level: :mod:`tailbound.policies.policing`),
``snc-meister-unpoliced`` (the same without policing, the default rule before),
``snc-meister-split`` (also without the model error), ``snc-meister-net`` (floored by the
network latency alone, levels by SLO: the first rule), ``dnc``, ``silo``, ``qjump`` (the DNC
baselines with their storage stage, :mod:`tailbound.policies.dnc_baselines`), and ``none`` (no
admission control: every tenant admitted, priorities by SLO as SNC-Meister's). Run:
``python -m tailbound.experiments.snc_storage --out out/experiments [--tenants 62 --orders 5]``
(``--policies`` a subset; ``dnc`` and ``snc-meister`` also set the computed SLO scale).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tailbound.cli.options import progress
from tailbound.experiments._snc_common import bytes_per_s, find_data, parser, write_outputs
from tailbound.experiments.snc_fig410 import (
    BASE_SLOS_S,
    arrivals,
    classify,
    labels,
    population,
)
from tailbound.model import Tenant, TenantSet
from tailbound.policies.admission import Configured, admit_in_order
from tailbound.policies.admission_policies import SncRule
from tailbound.policies.dnc_baselines import CurveCache
from tailbound.policies.floors import alone_result, replay_results
from tailbound.policies.registry import build, registered
from tailbound.sim.results import Judged
from tailbound.snc.tenants import FitCache, priorities_by_slo

#: The SNC-Meister variants' rules.
SNC_VARIANTS = {
    "snc-meister": SncRule(),
    "snc-meister-unpoliced": SncRule(police=False),
    "snc-meister-split": SncRule(add_model_error=False, police=False),
    "snc-meister-net": SncRule(
        add_model_error=False, split_levels=False, device_floor=False, police=False
    ),
}
DNC_POLICIES = registered(("dnc", "silo", "qjump"), "admission")
POLICIES = (*SNC_VARIANTS, *DNC_POLICIES, "none")
#: The admission rule each policy runs (issue 14: every table says whether a floor ran).
RULES = {
    **{name: rule.text(device=True) for name, rule in SNC_VARIANTS.items()},
    "dnc": "DNC bound only",
    "silo": "DNC bound only",
    "qjump": "DNC bound only",
    "none": "no admission control; levels by SLO",
}
DEVICE = "ssd0"
LINK = 125e6


@dataclass(frozen=True)
class Result:
    policy: str
    order: int
    admitted: int
    bytes_per_s: float  # request+response bytes per second of the admitted second halves
    # violators judged over the whole half and at the worst 180 s window, and those of them
    # whose second half replayed alone (network and device to itself) misses in the same sense
    whole: tuple[str, ...]
    whole_alone: tuple[str, ...]
    window: tuple[str, ...]
    window_alone: tuple[str, ...]
    worst_ratio: float
    worst_window_ratio: float

    @property
    def violations(self) -> int:
        return len(self.whole)


def with_device(tenants: Sequence[Tenant]) -> list[Tenant]:
    return [dataclasses.replace(t, device=DEVICE) for t in tenants]


def run(
    data: Path,
    tenants: int,
    orders: int,
    seed: int,
    scale: float | None,
    *,
    policies: Sequence[str] = POLICIES,
    quiet: bool = True,
) -> tuple[list[Result], float]:
    profile = data / "wc62" / "profile_ssd.json"
    pop = population(data, tenants, seed)
    specs = with_device(pop.tenants)
    tset = TenantSet(tuple(specs), LINK, ssd_profile=profile)
    fits = FitCache(traces=dict(pop.first))
    curves = CurveCache(tset, dict(pop.first))
    alone: dict[tuple[str, float], float] = {}
    built = {
        **{
            name: build(
                "snc-meister",
                "admission",
                tset,
                fits=fits,
                curves=curves,
                alone=alone,
                **rule.kwargs(),
            )
            for name, rule in SNC_VARIANTS.items()
        },
        **{p: build(p, "admission", tset, curves=curves) for p in DNC_POLICIES},
    }
    if scale is None:
        bounds = [
            max(built["snc-meister"]([t])[0].latency_s, built["dnc"]([t])[0].latency_s)
            for t in specs
        ]
        scale = float(math.ceil(statistics.quantiles(bounds, n=10)[-1] / BASE_SLOS_S[0]))
    alone_second: dict[str, Judged] = {}  # the second half alone, network and device

    def alone_judged(t: Tenant) -> Judged:
        key = f"{t.trace}@{t.percentile}"
        if key not in alone_second:
            result = alone_result(t, pop.second[str(t.trace)], LINK, profile)
            alone_second[key] = result.judged(t.percentile)
        return alone_second[key]

    results = []
    for order in progress(quiet, iterable=range(orders), desc="snc_storage", unit="order"):
        arriving = with_device(arrivals(pop, order, seed, scale))
        for name in policies:
            if name == "none":
                admitted = arriving
                levels = priorities_by_slo([t.slo_s for t in admitted])
                configured = [Configured(level) for level in levels]
                mode = "shaping"
            else:
                policy = built[name]
                decisions = admit_in_order(arriving, policy)
                admitted = [d.tenant for d in decisions if d.admitted]
                configured = policy.configure(admitted)
                mode = policy.mode
            second = [pop.second[str(t.trace)] for t in admitted]
            replayed = replay_results(
                admitted, second, configured, link_bytes_per_s=LINK, mode=mode, profile=profile
            )
            judged = [replayed[t.name].judged(t.percentile) for t in admitted]
            whole, whole_alone, window, window_alone = classify(
                admitted, judged, [alone_judged(t) for t in admitted]
            )
            pairs = list(zip(admitted, judged, strict=True))
            volume = bytes_per_s(second)
            results.append(
                Result(
                    name,
                    order,
                    len(admitted),
                    volume,
                    labels(whole),
                    labels(whole_alone),
                    labels(window),
                    labels(window_alone),
                    max((j.whole_s / t.slo_s for t, j in pairs), default=math.nan),
                    max((j.window_s / t.slo_s for t, j in pairs), default=math.nan),
                )
            )
            print(results[-1], flush=True)
    return results, scale


HEADER = [
    "policy",
    "admission rule",
    "orders",
    "admitted (median)",
    "min–max",
    "median ÷ best DNC baseline",
    "admitted MB/s (median)",
    "tenants replayed",
    "violations, whole half",
    "of which miss alone (whole half)",
    "through sharing (whole half)",
    "violations, worst 180 s window",
    "of which miss alone (window)",
    "through sharing (window)",
    "worst p99.9 ÷ SLO",
    "worst window p99.9 ÷ SLO",
]


def summary_rows(results: Sequence[Result]) -> list[list[object]]:
    policies = list(dict.fromkeys(r.policy for r in results))
    by = {p: [r for r in results if r.policy == p] for p in policies}
    baselines = [p for p in DNC_POLICIES if p in by]
    best_dnc = max((statistics.median(r.admitted for r in by[p]) for p in baselines), default=0)
    rows: list[list[object]] = []
    for name in policies:
        rs = by[name]
        admitted = [r.admitted for r in rs]
        rows.append(
            [
                name,
                RULES[name],
                len(rs),
                f"{statistics.median(admitted):g}",
                f"{min(admitted)}–{max(admitted)}",
                f"{statistics.median(admitted) / best_dnc:.2f}" if best_dnc else "-",
                f"{statistics.median(r.bytes_per_s for r in rs) / 1e6:.2f}",
                sum(admitted),
                sum(len(r.whole) for r in rs),
                sum(len(r.whole_alone) for r in rs),
                sum(len(r.whole) - len(r.whole_alone) for r in rs),
                sum(len(r.window) for r in rs),
                sum(len(r.window_alone) for r in rs),
                sum(len(r.window) - len(r.window_alone) for r in rs),
                f"{max(r.worst_ratio for r in rs):.2f}",
                f"{max(r.worst_window_ratio for r in rs):.2f}",
            ]
        )
    return rows


def sharing_lines(results: Sequence[Result]) -> str:
    """Per policy, every violation through sharing (whole half, then worst window) with its
    order."""
    lines = []
    for name in dict.fromkeys(r.policy for r in results):
        rs = [r for r in results if r.policy == name]
        whole = [f"{v} (order {r.order})" for r in rs for v in r.whole if v not in r.whole_alone]
        window = [f"{v} (order {r.order})" for r in rs for v in r.window if v not in r.window_alone]
        lines.append(f"- {name}, through sharing: {', '.join(whole) or 'none'}")
        lines.append(f"- {name}, through sharing, worst window: {', '.join(window) or 'none'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__.split("\n\n")[0] if __doc__ else "")
    p.add_argument("--tenants", type=int, default=62)
    p.add_argument("--orders", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scale", type=float, help="SLO scale (default: computed, see docstring)")
    p.add_argument(
        "--policies",
        type=lambda text: tuple(text.split(",")),
        default=POLICIES,
        help=f"comma-separated policies (default: all, {','.join(POLICIES)})",
    )
    args = p.parse_args(argv)
    if unknown := [q for q in args.policies if q not in POLICIES]:
        p.error(f"unknown policies {', '.join(unknown)} (known: {', '.join(POLICIES)})")
    data = Path(args.data) if args.data else find_data()
    results, scale = run(
        data,
        args.tenants,
        args.orders,
        args.seed,
        args.scale,
        policies=args.policies,
        quiet=args.quiet,
    )
    policies = args.policies
    medians = [statistics.median(r.admitted for r in results if r.policy == n) for n in policies]
    png = write_outputs(
        Path(args.out),
        "snc_storage" + ("" if policies == POLICIES else "_" + "+".join(policies)),
        f"SNC-Meister with storage (thesis §4.4.6): {args.tenants} tenants, {args.orders} orders, "
        f"SLO scale {scale:g}",
        HEADER,
        summary_rows(results),
        extra="\nViolations through sharing:\n\n" + sharing_lines(results) + "\n",
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    xs = range(len(policies))
    ax.bar(xs, medians, color="tab:blue", label="admitted (median)")
    ax.bar(
        xs,
        [
            sum(r.violations for r in results if r.policy == n) / max(args.orders, 1)
            for n in policies
        ],
        color="tab:red",
        label="violations per order",
    )
    ax.set_xticks(list(xs), list(policies))
    ax.set_ylabel("tenants")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
