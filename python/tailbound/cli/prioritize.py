"""``tailbound prioritize``: PriorityMeister's priorities and multiple rate limits for placed
tenants (thesis §3.2), written as a :class:`~tailbound.plan.Plan`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import epilog, outcome
from tailbound.cli.options import add_quiet, integer, number, progress
from tailbound.errors import ConfigError
from tailbound.limits import MAX_BUCKETS_PER_STAGE
from tailbound.model import DEFAULT_LINK_BYTES_PER_S
from tailbound.policies.registry import names
from tailbound.stages import Stage

#: The legend of the table ``prioritize`` prints (in ``--help``).
COLUMNS = (
    ("net_in, storage, net_out", "the tenant's priority level at each stage, 0 the highest"),
    ("bound (ms)", "its worst-case latency by the LP analysis"),
    ("SLO (ms)", "the latency target"),
    ("met", "the bound is not above the SLO"),
)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "prioritize",
        help="choose per-stage priorities and multiple rate limits that meet tenants' SLOs",
        description=(
            "Read a placement plan (from `tailbound place`) and the tenants' traces, give every "
            "tenant K token buckets per stage from its r-b curve and per-stage priorities from "
            "PriorityMeister's prioritizer (or bySLO), and write the plan with the LP bounds. "
            "The traces, SSD profile and link bandwidth are those the plan records (a trace "
            "changed since planning is refused); --tenants, --profile and --link-bandwidth "
            "override them, and the plan written records what was used."
        ),
        epilog=epilog("a tenant's LP bound is above its SLO", COLUMNS),
    )
    parser.add_argument("--plan", required=True, type=Path, help="placement plan JSON")
    parser.add_argument(
        "--tenants",
        type=Path,
        help="tenants file giving each tenant's trace, joined by name (default: the plan's)",
    )
    parser.add_argument(
        "--profile", type=Path, help="SSD profile JSON (default: the profile the plan records)"
    )
    parser.add_argument(
        "--link-bandwidth",
        type=number(low=0.0, low_open=True),
        metavar="BYTES_PER_S",
        help="bandwidth of every link, each direction, in bytes/s (default: the plan's; for a "
        "plan recording none, 125e6)",
    )
    parser.add_argument(
        "--k",
        type=integer(low=1, high=MAX_BUCKETS_PER_STAGE),
        default=3,
        help=f"token buckets per stage, 1 to {MAX_BUCKETS_PER_STAGE} (default 3)",
    )
    parser.add_argument(
        "--policy",
        choices=names("prioritization"),
        default="prioritymeister",
        help="prioritization policy (default prioritymeister)",
    )
    parser.add_argument(
        "--analysis",
        choices=("tighter", "stages", "path"),
        default="tighter",
        help="end-to-end bound: the tighter of the per-stage LPs summed and the LP over the "
        "whole path (default), or one of them (docs/prioritymeister.md)",
    )
    parser.add_argument("--out", type=Path, default=Path("plan-pm.json"), help="plan to write")
    add_quiet(parser)
    parser.set_defaults(run=run)


def check_fits_its_stages(
    planned: Any, trace: Any, path: Path, profile: Any, args: argparse.Namespace
) -> None:
    """Refuse a tenant no rate limit describes at one of its stages: a trace of 0 s or with
    no work there, or average work at least the rate limits' cap of the stage's capacity (a
    ``--link-bandwidth`` or a trace far off)."""
    from tailbound.characterize.rbcurve import check_characterizable, mean_rate
    from tailbound.errors import TraceFormatError
    from tailbound.policies.prioritymeister import RATE_CAP
    from tailbound.profiles.tokens import stage_model

    for stage in planned.stages:
        model = stage_model(stage, link_bandwidth_bytes_per_s=args.link_bandwidth, profile=profile)
        try:  # a zero-length trace, no work at the stage: named by the file, not the stem
            check_characterizable(trace, model)
        except TraceFormatError as e:
            message = f"tenant {planned.name!r}: {e.message}"
            raise TraceFormatError(path, message, field=e.field) from None
        mean = round(mean_rate(model.tokens(trace), trace.duration), 12)
        if mean >= RATE_CAP:
            capacity = (
                "the SSD profile's"
                if stage == Stage.STORAGE
                else f"a {args.link_bandwidth:g} bytes/s link's (--link-bandwidth)"
            )
            raise ConfigError(
                path,
                f"tenant {planned.name!r}: its work at {stage} averages {mean:.4g} times "
                f"{capacity} capacity; a rate limit carries at most {RATE_CAP}",
            )


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from tailbound.plan import Plan
    from tailbound.plan_inputs import resolve_inputs
    from tailbound.policies.graduated import refuse_graduated_tenants
    from tailbound.policies.pm_plan import (
        plan_devices,
        plan_tenant,
        prioritize_all,
        prioritized_plan,
    )
    from tailbound.profiles import SsdProfile
    from tailbound.stages import STORAGE_PATH
    from tailbound.traces.readers import read_trace

    plan = Plan.load(args.plan)
    refuse_graduated_tenants(plan.tenants, args.plan, args.policy)
    inputs = resolve_inputs(
        plan,
        args.plan,
        [t.name for t in plan.tenants],
        tenants=args.tenants,
        profile=args.profile,
        link_bytes_per_s=args.link_bandwidth,
    )
    if inputs.link_bytes_per_s is None:  # a plan recording no inputs: the default, as before
        inputs = dataclasses.replace(inputs, link_bytes_per_s=DEFAULT_LINK_BYTES_PER_S)
    args.link_bandwidth = inputs.link_bytes_per_s
    profile = inputs.device_profile()
    if not isinstance(profile, SsdProfile):
        raise ConfigError(
            inputs.profile_source, "PriorityMeister needs an SSD profile", field="type"
        )
    start = time.perf_counter()
    with progress(args, total=len(plan.tenants), desc="r-b curves", unit="tenant") as bar:
        tenants = []
        for planned in plan.tenants:
            ref = inputs.traces[planned.name]
            trace = read_trace(ref.path, ref.format)
            check_fits_its_stages(planned, trace, ref.path, profile, args)
            tenants.append(
                plan_tenant(
                    planned,
                    trace,
                    profile=profile,
                    link_bandwidth_bytes_per_s=args.link_bandwidth,
                    k=args.k,
                )
            )
            bar.update()
    # the plan's devices keep several requests in service: their blocking and sharing count
    result = prioritize_all(
        tenants, args.policy, devices=plan_devices(plan, profile), analysis=args.analysis
    )
    seconds = time.perf_counter() - start
    out = prioritized_plan(
        plan,
        tenants,
        result,
        link_bandwidth_bytes_per_s=args.link_bandwidth,
        policy=args.policy,
        meta={"k": args.k, "prioritize_s": round(seconds, 3), "placement_policy": plan.policy},
    )
    dataclasses.replace(out, inputs=inputs.inputs).save(args.out)
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
    return outcome(met.values())
