"""``tailbound bound``: every tenant's SNC latency bound at its percentile for a fixed set."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tailbound.snc.analysis import BoundFunction
    from tailbound.snc.tenants import FitCache, TenantSet

#: The bound functions the ``bound`` and ``admit`` verbs choose from: the SNC analyses
#: (``tailbound.snc.network.ANALYSES``) then the DNC baselines (``tailbound.snc.dnc_policies``),
#: spelled out here so that building the parser imports neither numpy nor the analyses.
BOUND_FUNCTIONS = ("snc-meister", "snc-hop-by-hop", "snc-convolution", "dnc", "silo", "qjump")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bound",
        help="predict every tenant's percentile latency with stochastic network calculus",
        description=(
            "Predict each tenant's latency at its SLO percentile (request and response "
            "directions and total) for a fixed set of tenants, with SNC (thesis ch. 4)."
        ),
    )
    parser.add_argument("--tenants", required=True, help="tenants JSON file")
    parser.add_argument(
        "--analysis",
        default="snc-meister",
        choices=BOUND_FUNCTIONS,
        help=(
            "network analysis (default snc-meister); dnc, silo and qjump are the worst-case "
            "(100th percentile) bounds of the DNC baselines of thesis §4.3.1"
        ),
    )
    parser.add_argument(
        "--arrival-model",
        default="reference",
        choices=["reference"],
        help="arrival characterisation (reference: the reference implementation's MMPP fit)",
    )
    parser.add_argument(
        "--alone-floor",
        action="store_true",
        help=(
            "raise each SNC bound to the tenant's latency alone, measured by replaying its "
            "trace in the simulator (off by default: the analysis' own bound)"
        ),
    )
    parser.add_argument("--out", help="write the bounds as JSON to this file")
    parser.set_defaults(run=run)


def with_floor(
    bounds: BoundFunction,
    tset: TenantSet,
    analysis: str,
    fits: FitCache,
    *,
    alone: bool,
    joint: bool = False,
) -> BoundFunction:
    """``bounds`` floored by the tenants' measured latencies alone when ``alone``, and by their
    latencies replayed together when ``joint``, if ``analysis`` is an SNC analysis (a DNC
    baseline's worst-case bound is never below either on its own traces); the traces come from
    ``fits``, which the SNC fits read them into."""
    from tailbound.snc.alone import AloneFloor
    from tailbound.snc.dnc_policies import POLICIES
    from tailbound.snc.joint import JointFloor

    if analysis in POLICIES:
        return bounds
    if alone:
        bounds = AloneFloor(bounds, fits.trace, tset.link_bytes_per_s)
    if joint:
        bounds = JointFloor(bounds, fits.trace, tset.link_bytes_per_s)
    return bounds


def run(args: argparse.Namespace) -> int:
    import time

    from tailbound.snc.analysis import snc_bound_function
    from tailbound.snc.dnc_policies import POLICIES, dnc_bound_function
    from tailbound.snc.io import fmt_ms, markdown_table, write_json_atomic
    from tailbound.snc.tenants import FitCache, load_tenants

    tset = load_tenants(args.tenants)
    cache = FitCache()
    bounds: BoundFunction
    if args.analysis in POLICIES:
        bounds = dnc_bound_function(tset, args.analysis)
    else:
        bounds = snc_bound_function(tset, args.analysis, cache)
    bounds = with_floor(bounds, tset, args.analysis, cache, alone=args.alone_floor)
    start = time.perf_counter()
    results = bounds(tset.tenants)
    elapsed = time.perf_counter() - start - cache.fit_seconds
    rows = [
        [
            r.name,
            r.priority,
            fmt_ms(r.latency_in_s),
            fmt_ms(r.latency_out_s),
            fmt_ms(r.latency_storage_s),
            fmt_ms(r.latency_s),
            fmt_ms(r.latency_alone_s),
            fmt_ms(r.slo_s),
            r.percentile,
            "yes" if r.meets_slo else "NO",
        ]
        for r in results
    ]
    header = [
        "tenant",
        "priority",
        "in ms",
        "out ms",
        "storage ms",
        "total ms",
        "alone ms",
        "SLO ms",
        "pct",
        "meets",
    ]
    print(markdown_table(header, rows))
    print(
        f"\n{args.analysis}: {len(results)} tenants, bounds in {elapsed:.3f} s "
        f"(MMPP fits {cache.fit_seconds:.3f} s)"
    )
    if args.out:
        write_json_atomic(
            args.out,
            {
                "analysis": args.analysis,
                "arrival_model": args.arrival_model,
                "tenants": [r.to_json() for r in results],
            },
        )
    return 0
