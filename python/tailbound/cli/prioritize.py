"""``tailbound prioritize``: PriorityMeister's priorities and multiple rate limits for placed
tenants (thesis §3.2), written as a :class:`~tailbound.plan.Plan`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from tailbound.policies.registry import names


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "prioritize",
        help="choose per-stage priorities and multiple rate limits that meet tenants' SLOs",
        description=(
            "Read a placement plan (from `tailbound place`) and the tenants' traces, give every "
            "tenant K token buckets per stage from its r-b curve and per-stage priorities from "
            "PriorityMeister's prioritizer (or bySLO), and write the plan with the LP bounds."
        ),
    )
    parser.add_argument("--plan", required=True, type=Path, help="placement plan JSON")
    parser.add_argument("--tenants", required=True, type=Path, help="tenants.json (traces)")
    parser.add_argument("--profile", required=True, type=Path, help="SSD profile JSON")
    parser.add_argument(
        "--link-bandwidth",
        type=float,
        default=125e6,
        help="bytes/s of every link, each direction (default 125e6)",
    )
    parser.add_argument("--k", type=int, default=3, help="token buckets per stage (default 3)")
    parser.add_argument(
        "--policy",
        choices=names("prioritization"),
        default="prioritymeister",
        help="prioritization policy (default prioritymeister)",
    )
    parser.add_argument("--out", type=Path, default=Path("plan-pm.json"), help="plan to write")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tailbound.errors import ConfigError
    from tailbound.model import load_tenants
    from tailbound.plan import Plan
    from tailbound.policies.pm_plan import (
        plan_devices,
        plan_tenant,
        prioritize_all,
        prioritized_plan,
    )
    from tailbound.profiles import SsdProfile
    from tailbound.stages import STORAGE_PATH
    from tailbound.traces.readers import read_trace

    if args.k < 1:
        raise ConfigError(None, f"--k must be at least 1, got {args.k}")
    if not args.link_bandwidth > 0:
        raise ConfigError(None, f"--link-bandwidth must be positive, got {args.link_bandwidth}")
    plan = Plan.load(args.plan)
    configs = {c.name: c for c in load_tenants(args.tenants).tenants}
    missing = [t.name for t in plan.tenants if t.name not in configs]
    if missing:
        raise ConfigError(args.tenants, f"no trace for planned tenants {missing}")
    profile = SsdProfile.load(args.profile)
    start = time.perf_counter()
    tenants = [
        plan_tenant(
            t,
            read_trace(configs[t.name].trace),
            profile=profile,
            link_bandwidth_bytes_per_s=args.link_bandwidth,
            k=args.k,
        )
        for t in plan.tenants
    ]
    # the plan's devices keep several requests in service: their blocking and sharing count
    result = prioritize_all(tenants, args.policy, devices=plan_devices(plan, profile))
    seconds = time.perf_counter() - start
    out = prioritized_plan(
        plan,
        tenants,
        result,
        link_bandwidth_bytes_per_s=args.link_bandwidth,
        policy=args.policy,
        meta={"k": args.k, "prioritize_s": round(seconds, 3), "placement_policy": plan.policy},
    )
    out.save(args.out)
    met = result.meets(tenants)
    print("| tenant | net_in | storage | net_out | bound (ms) | SLO (ms) | met |")
    print("|---|---|---|---|---|---|---|")
    for t in tenants:
        levels = " | ".join(str(result.priorities[t.name].get(s, "-")) for s in STORAGE_PATH)
        bound, slo = 1e3 * result.bounds[t.name], 1e3 * t.slo_s
        print(f"| {t.name} | {levels} | {bound:.3g} | {slo:.3g} | {met[t.name]} |")
    print(
        f"{sum(met.values())} of {len(tenants)} tenants meet their SLO by the LP bound "
        f"({seconds:.2f} s); plan written to {args.out}"
    )
    return 0 if all(met.values()) else 1
