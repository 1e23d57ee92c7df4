"""``tailbound admit``: arrival-order admission control with SNC-Meister or a DNC baseline."""

from __future__ import annotations

import argparse

from tailbound.cli.bound import BOUND_FUNCTIONS, with_floor


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "admit",
        help="decide admission of tenants in arrival order (SNC-Meister or a DNC baseline)",
        description=(
            "Tenants arrive in file order; each is admitted only if it and every admitted "
            "tenant still meet their SLOs (thesis §4.2). Rejected tenants run best effort. "
            "dnc, silo and qjump are the worst-case (100th percentile) baselines of thesis "
            "§4.3.1 (PriorityMeister-style DNC, Silo++, QJump++)."
        ),
    )
    parser.add_argument("--tenants", required=True, help="tenants JSON file (arrival order)")
    parser.add_argument(
        "--policy",
        default="snc-meister",
        choices=BOUND_FUNCTIONS,
        help="bound function deciding admission (default snc-meister)",
    )
    parser.add_argument(
        "--no-alone-floor",
        action="store_true",
        help=(
            "decide on the SNC bound alone (the thesis' SNC-Meister); by default a tenant's "
            "predicted latency is at least its latency alone, measured by replaying its trace "
            "in the simulator, so a tenant whose own bursts miss its SLO is rejected"
        ),
    )
    parser.add_argument(
        "--joint-floor",
        action="store_true",
        help=(
            "also replay the admitted tenants and the newcomer together in the simulator at "
            "each arrival, and admit only if every one meets its SLO in that replay too (SNC "
            "policies; one replay per arrival)"
        ),
    )
    parser.add_argument("--out", help="write the decisions as JSON to this file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tailbound.snc.admission import admit_in_order
    from tailbound.snc.analysis import BoundFunction, snc_bound_function
    from tailbound.snc.dnc_policies import POLICIES, dnc_bound_function
    from tailbound.snc.incremental import IncrementalSnc
    from tailbound.snc.io import fmt_ms, markdown_table, write_json_atomic
    from tailbound.snc.tenants import FitCache, load_tenants

    tset = load_tenants(args.tenants)
    fits = FitCache()
    bounds: BoundFunction
    if args.policy in POLICIES:
        bounds = dnc_bound_function(tset, args.policy)
    elif args.policy == "snc-meister":
        # same bounds, re-using flows an arrival leaves unchanged
        bounds = IncrementalSnc(tset, fits)
    else:
        bounds = snc_bound_function(tset, args.policy, fits)
    bounds = with_floor(
        bounds, tset, args.policy, fits, alone=not args.no_alone_floor, joint=args.joint_floor
    )
    decisions = admit_in_order(tset.tenants, bounds)
    rows = [
        [
            d.tenant.name,
            "admitted" if d.admitted else "rejected",
            fmt_ms(d.bound.latency_s),
            fmt_ms(d.bound.latency_alone_s),
            *([fmt_ms(d.bound.latency_joint_s)] if args.joint_floor else []),
            fmt_ms(d.tenant.slo_s),
            d.tenant.percentile,
            ", ".join(d.violated),
        ]
        for d in decisions
    ]
    header = ["tenant", "decision", "predicted ms", "alone ms", "SLO ms", "pct", "would miss"]
    if args.joint_floor:
        header.insert(4, "together ms")
    print(markdown_table(header, rows))
    admitted = sum(d.admitted for d in decisions)
    print(f"\n{args.policy}: admitted {admitted} of {len(decisions)} tenants")
    if args.out:
        write_json_atomic(
            args.out,
            {"policy": args.policy, "decisions": [d.to_json() for d in decisions]},
        )
    return 0
