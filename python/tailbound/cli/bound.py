"""``tailbound bound``: every tenant's latency bound for a fixed set, written as a Plan."""

from __future__ import annotations

import argparse
from typing import Any

from tailbound.cli.exitcodes import epilog, outcome
from tailbound.cli.options import add_quiet, progress
from tailbound.policies.registry import names

#: The legend of the table ``bound`` prints (in ``--help``).
COLUMNS = (
    ("priority", "the tenant's network priority level, 0 the highest"),
    ("in ms", "bound of the request direction, client to server"),
    ("out ms", "bound of the response direction"),
    ("storage ms", "bound at the device (- without one)"),
    ("total ms", "the tenant's bound: at its SLO percentile for SNC, the worst case for DNC"),
    ("alone ms", "its latency replayed alone, the floor of total with --alone-floor (- if not)"),
    ("SLO ms", "the latency target"),
    ("pct", "the SLO's percentile"),
    ("meets", "total ms is not above SLO ms"),
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bound",
        help="predict every tenant's percentile latency with stochastic network calculus",
        description=(
            "Predict each tenant's latency at its SLO percentile (request and response "
            "directions and total) for a fixed set of tenants, with SNC (thesis ch. 4) or the "
            "worst case of a DNC baseline, and write the plan that enforces it."
        ),
        epilog=epilog("a tenant's bound is above its SLO", COLUMNS),
    )
    parser.add_argument("--tenants", required=True, help="tenants JSON file")
    parser.add_argument(
        "--analysis",
        default="snc-meister",
        choices=names("admission", "snc") + names("admission", "dnc"),  # not nested-qos
        help=(
            "network analysis (default snc-meister); dnc, silo and qjump are the worst-case "
            "(100th percentile) bounds of the DNC baselines of thesis §4.3.1"
        ),
    )
    parser.add_argument(
        "--arrival-model",
        default="deterministic",
        choices=["deterministic", "reference"],
        help=(
            "arrival characterisation and search: the reference implementation's MMPP fit, with "
            "dependency groups' Hölder parameters found by a deterministic search in the Rust "
            "core (deterministic, the default) or by the reference's seeded random search "
            "(reference: the reference implementation's numbers)"
        ),
    )
    parser.add_argument(
        "--alone-floor",
        action="store_true",
        help=(
            "raise each SNC bound to the tenant's latency alone, measured by replaying its "
            "trace in the simulator (off by default: the analysis' own bound)"
        ),
    )
    parser.add_argument(
        "--cache",
        help=(
            "folder keeping MMPP fits across runs, keyed by each trace's content (default "
            "$TAILBOUND_CACHE, else ~/.cache/tailbound)"
        ),
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="fit every trace afresh and store nothing"
    )
    parser.add_argument("--out", help="write the plan (priorities, limits, bounds) as JSON here")
    add_quiet(parser)
    parser.set_defaults(run=run)


def ticking_fits(bar: Any, disk: Any = None) -> Any:
    """A :class:`~tailbound.snc.tenants.FitCache` (kept on ``disk`` when given) ticking ``bar``
    at each new MMPP fit (one per trace and direction: the slow part of an SNC bound; the DNC
    analyses fit nothing)."""
    from tailbound.snc.tenants import FitCache

    class TickingFits(FitCache):
        def model(self, spec: Any, direction: str, tset: Any) -> Any:
            new = (str(spec.trace), direction) not in self.models
            model = super().model(spec, direction, tset)
            if new:
                bar.update(1)
            return model

    return TickingFits(disk=disk)


def run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from tailbound.model import load_tenants
    from tailbound.plan_inputs import with_inputs
    from tailbound.policies.admission import bounds_plan
    from tailbound.policies.graduated import refuse_graduated
    from tailbound.policies.registry import build
    from tailbound.snc.tenants import FitCache, default_cache_dir
    from tailbound.tables import fmt_ms, markdown_table

    tset = load_tenants(args.tenants)
    refuse_graduated(tset, args.analysis)
    disk = None if args.no_cache else Path(args.cache) if args.cache else default_cache_dir()
    search = "reference" if args.arrival_model == "reference" else "deterministic"
    with progress(args, desc="MMPP fits", unit="fit") as bar:
        fits: FitCache = ticking_fits(bar, disk)
        policy = build(
            args.analysis,
            "admission",
            tset,
            fits=fits,
            alone_floor=args.alone_floor,
            incremental=False,
            search=search,
        )
        start = time.perf_counter()
        results = policy(tset.tenants)
    elapsed = time.perf_counter() - start - fits.fit_seconds
    rows = [
        [
            r.name,
            r.priority,
            fmt_ms(r.latency_in_s),
            fmt_ms(r.latency_out_s),
            fmt_ms(r.latency_storage_s),
            fmt_ms(r.latency_s),
            fmt_ms(r.latency_alone_s),
            fmt_ms(r.slo.latency_s),
            r.slo.percentile,
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
        f"(MMPP fits {fits.fit_seconds:.3f} s, {fits.disk_hits} read from the cache)"
    )
    if args.out:
        plan = bounds_plan(
            args.analysis,
            policy,
            tset.tenants,
            results,
            link_bytes_per_s=tset.link_bytes_per_s,
            meta={"verb": "bound", "arrival_model": args.arrival_model, "tenants": str(tset.path)},
        )
        with_inputs(plan, tset).save(args.out)
    return outcome(r.meets_slo for r in results)
