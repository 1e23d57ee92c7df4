"""``tailbound place``: characterise tenants from their traces and place them with
WorkloadCompactor or a baseline, writing a :class:`~tailbound.plan.Plan`."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import epilog, outcome
from tailbound.cli.options import add_quiet, number, progress_disabled
from tailbound.policies.registry import names


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "place",
        help="place tenants on servers with rate limits that meet their SLOs",
        description=(
            "Build each tenant's r-b curves from its trace, choose rate limits and placement "
            "(WorkloadCompactor or a baseline) and write the plan as JSON."
        ),
        epilog=epilog("a tenant could not be placed on the cluster's servers"),
    )
    parser.add_argument("--tenants", required=True, type=Path, help="tenants.json")
    parser.add_argument("--cluster", required=True, type=Path, help="cluster.json")
    parser.add_argument("--profile", required=True, type=Path, help="SSD profile JSON")
    parser.add_argument(
        "--policy",
        default="workloadcompactor",
        help=f"placement policy: {', '.join(names('placement'))} (default workloadcompactor)",
    )
    parser.add_argument("--fast-first-fit", action="store_true", help="skip near-full servers")
    parser.add_argument(
        "--grow",
        action="store_true",
        help=(
            "when no server fits a tenant, add a server like the cluster's last one (how many "
            "servers the tenants need) instead of leaving the tenant out"
        ),
    )
    parser.add_argument(
        "--server-model",
        choices=("sound", "reference"),
        default="sound",
        help=(
            "sound (default): bounds that hold against the device's dispatch limits (blocking by "
            "requests in service, sharing inside a level; docs/dnc.md); reference: the "
            "WorkloadCompactor system's Eq. 5.1, to reproduce its figures (unsound on an SSD "
            "with several requests in service)"
        ),
    )
    parser.add_argument(
        "--mtu", type=float, default=1500.0, help="packet size on the links, bytes (default 1500)"
    )
    parser.add_argument(
        "--low-priority-work-ms",
        type=float,
        help=(
            "cap, in milliseconds of device work, on what the levels below a device's most "
            "important one may have in service at once (a dispatch rule the plan carries; "
            "smaller blocking for the more important tenants, so fewer servers; docs/dnc.md)"
        ),
    )
    parser.add_argument(
        "--share-levels",
        action="store_true",
        help=(
            "let the requests of one priority level share the device (no limit of one request "
            "per level in service); the sound bounds then count a level's own rates, so more "
            "servers (docs/dnc.md)"
        ),
    )
    parser.add_argument("--events", type=Path, help="arrivals/departures CSV (index,addClient)")
    parser.add_argument(
        "--half",
        choices=("first", "second"),
        help="characterise from one half of each trace (default safety margin then 1.1)",
    )
    parser.add_argument(
        "--safety-margin",
        type=number(low=0.0, low_open=True),
        metavar="X",
        help="scale the r-b curves by X (work × X; default 1.0, 1.1 with --half)",
    )
    parser.add_argument("--out", type=Path, default=Path("plan.json"), help="plan JSON to write")
    add_quiet(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from tailbound.errors import ConfigError
    from tailbound.model import load_cluster, load_tenants
    from tailbound.plan_inputs import with_inputs
    from tailbound.policies.events import load_events
    from tailbound.policies.graduated import refuse_graduated
    from tailbound.policies.placement import place
    from tailbound.policies.registry import build
    from tailbound.policies.server import REFERENCE
    from tailbound.policies.workload import characterize_all
    from tailbound.policies.workloadcompactor import LEVEL_MPL, server_model, to_plan
    from tailbound.profiles import SsdProfile
    from tailbound.traces.readers import read_trace

    tset = load_tenants(args.tenants)
    refuse_graduated(tset, args.policy)
    tenants = tset.tenants
    cluster = load_cluster(args.cluster)
    profile = SsdProfile.load(args.profile)
    events = load_events(args.events, len(tenants)) if args.events else None
    try:
        cap = None if args.low_priority_work_ms is None else args.low_priority_work_ms / 1e3
        if cap is not None and not (math.isfinite(cap) and cap >= 0):
            raise ConfigError(None, f"--low-priority-work-ms must be >= 0, got {cap * 1e3}")
        model = (
            server_model(
                profile,
                cluster.link_bytes_per_s,
                args.mtu,
                cap,
                None if args.share_levels else LEVEL_MPL,
            )
            if args.server_model == "sound"
            else REFERENCE
        )
        policy = build(args.policy, "placement", model)
    except ValueError as e:
        raise ConfigError(None, f"--policy: {e}") from None
    margin = args.safety_margin if args.safety_margin is not None else (1.1 if args.half else 1.0)

    def read(config: Any) -> Any:
        trace = read_trace(config.trace)
        if args.half == "first":
            return trace.first_half()
        if args.half == "second":
            return trace.second_half()
        return trace

    start = time.perf_counter()
    with tqdm(
        total=len(tenants),
        desc="r-b curves",
        unit="tenant",
        disable=progress_disabled(args),
        file=sys.stderr,
    ) as bar:
        workloads = characterize_all(
            tenants,
            read,
            profile=profile,
            link_bandwidth_bytes_per_s=cluster.link_bytes_per_s,
            safety_margin=margin,
            progress=bar.update,
        )
    curves_s = time.perf_counter() - start
    steps = len(events) if events is not None else len(workloads)
    with tqdm(
        total=steps,
        desc="placement",
        unit="event",
        disable=progress_disabled(args),
        file=sys.stderr,
    ) as bar:
        result = place(
            workloads,
            cluster,
            policy,
            fast_first_fit=args.fast_first_fit,
            events=events,
            grow=args.grow,
            progress=bar.update,
        )
    total_s = time.perf_counter() - start
    plan = to_plan(
        result,
        cluster,
        policy=args.policy,
        safety_margin=margin,
        meta={
            "fast_first_fit": args.fast_first_fit,
            "grow": args.grow,
            "peak_servers": result.peak_servers,
            "configure_calls": result.configure_calls,
            "curves_s": round(curves_s, 3),
            "placement_s": round(result.seconds, 3),
            "half": args.half,
            "server_model": args.server_model,
        },
    )
    # what verify, prioritize and enforce need, recorded in the plan (docs/architecture.md)
    plan = with_inputs(plan, tset, profile=args.profile, link_bytes_per_s=cluster.link_bytes_per_s)
    plan.save(args.out)
    print(
        f"{len(plan.tenants)} tenants on {plan.servers_used} servers "
        f"(peak {result.peak_servers}) with {args.policy}"
        f"{' + fast-first-fit' if args.fast_first_fit else ''}; "
        f"{len(plan.rejected)} rejected"
    )
    for rejection in plan.rejected:
        print(f"rejected {rejection.name}: {rejection.reason}")
    print(
        f"time: {total_s:.2f} s ({curves_s:.2f} s r-b curves, {result.seconds:.2f} s placement, "
        f"{result.configure_calls} configurations tried); plan written to {args.out}"
    )
    return outcome(not plan.rejected)
