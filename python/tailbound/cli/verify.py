"""``tailbound verify``: replay a Plan with its tenants' traces and check every promise it made.

Exit codes: 0 every SLO met and every bound held, 1 the replay ran and a check failed, 2 bad
input (a file, field or option at fault is named).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import epilog, outcome
from tailbound.cli.options import add_span, check_window, span_of

#: The legend of the table ``verify`` (and ``enforce replay``) prints (in ``--help``).
COLUMNS = (
    ("server", "the tenant's storage server or host"),
    ("SLO", "the latency target at its percentile"),
    ("achieved", "the replayed latency at the SLO's percentile, over the whole replay"),
    ("worst window", "the worst such percentile over sliding windows of --window-s"),
    ("max", "the largest replayed latency"),
    ("bound", "the plan's prediction at its percentile (100%: a worst-case bound)"),
    (
        "SLO met",
        "achieved is not above the SLO (a graduated SLO: every grade met, in a second "
        "table giving each grade's fraction of requests within its latency)",
    ),
    ("bound held", "the replayed latency at the bound's percentile is not above it (× the ratio)"),
    (
        "throughput",
        "with a throughput SLO: completions per second between the tenant's first and last "
        "completion (or their bytes per second) / the SLO",
    ),
    ("throughput met", "the throughput achieved is at least the SLO"),
)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="replay a plan's tenants in the simulator and check their SLOs and bounds",
        description=(
            "Replay every planned tenant's trace (whole, one half, or a window) through the plan "
            "in the simulator, with the plan's priorities, rate limits, disciplines and device "
            "dispatch rule, and print per tenant the SLO, the achieved percentile, the worst "
            "3-minute-window percentile, the maximum, the bound, and the two verdicts. The "
            "traces, SSD profile and link bandwidth are those the plan records (a trace changed "
            "since planning is refused); --tenants, --profile and --link-bandwidth override them."
        ),
        epilog=(
            epilog(
                "a tenant missed its SLO (latency or throughput) or a bound was exceeded in the "
                "replay",
                COLUMNS,
            )
            + " A bound holds when the replayed latency at the bound's percentile (the maximum "
            "for a worst-case bound) is not above it."
        ),
    )
    parser.add_argument("--plan", required=True, type=Path, help="plan JSON (any verb's --out)")
    parser.add_argument(
        "--tenants",
        type=Path,
        help="tenants file giving each tenant's trace, joined by name (default: the traces the "
        "plan records)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="SSD profile of the plan's devices (default: the profile the plan records)",
    )
    parser.add_argument(
        "--link-bandwidth",
        type=float,
        help="bytes/s of every host link, each direction (default: the plan's; for a plan "
        "recording none, the tenants file's)",
    )
    add_span(parser)
    parser.add_argument(
        "--mode",
        choices=("shaping", "demotion"),
        help="override the plan's rate-limiter behaviour at every priority queue",
    )
    parser.add_argument("--mtu", type=float, default=1500.0, help="packet size, bytes")
    parser.add_argument(
        "--propagation", type=float, default=0.0, help="propagation delay per link, seconds"
    )
    parser.add_argument(
        "--window-s", type=float, default=180.0, help="sliding window of the worst-window column, s"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="folder for verify.csv and verify.png (and verify-grades.csv, one row per grade "
        "of the graduated SLOs; an Aequitas plan: verify.csv, one row per class and per tenant "
        "and class, docs/aequitas.md)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import math

    from tailbound.errors import ConfigError
    from tailbound.plan import Plan
    from tailbound.verify import replay_saved

    plan = Plan.load(args.plan)
    for option, value in (
        ("--link-bandwidth", args.link_bandwidth),
        ("--mtu", args.mtu),
        ("--window-s", args.window_s),
    ):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ConfigError(None, f"{option} must be a positive number, got {value}")
    check_window(args)
    if plan.aequitas is not None:
        return run_aequitas(args, plan)

    v = replay_saved(
        plan,
        args.plan,
        tenants=args.tenants,
        profile=args.profile,
        link_bandwidth_bytes_per_s=args.link_bandwidth,
        span=lambda trace: span_of(trace, args),
        mode=args.mode,
        mtu_bytes=args.mtu,
        propagation_s=args.propagation,
        window_s=args.window_s,
    )
    print(v.table())
    ratios = sorted(c.ratio for c in v.checks)
    median = ratios[len(ratios) // 2] if ratios else math.nan
    print(
        f"\n{len(v.checks)} tenants: {len(v.violations)} SLOs missed, {len(v.exceeded)} bounds "
        f"exceeded; replayed/bound median {median:.3f}, worst {max(ratios, default=math.nan):.3f}"
        + (
            f"; {len(v.throughput_missed)} throughput SLOs missed"
            if any(c.throughput is not None for c in v.checks)
            else ""
        )
    )
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        v.to_csv(args.out / "verify.csv")
        _plot(v, args.out / "verify.png")
        print(f"wrote {args.out / 'verify.csv'} and {args.out / 'verify.png'}")
        if any(c.grades for c in v.checks):
            v.grades_to_csv(args.out / "verify-grades.csv")
            print(f"wrote {args.out / 'verify-grades.csv'}")
    return outcome(v.all_held)


def _plot(v: Any, path: Path) -> None:
    """Per tenant: the replayed latency at the bound's percentile against the bound, and the
    achieved percentile against the SLO (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tailbound.plotting import save_figure

    checks = v.checks
    x = range(len(checks))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.2 * len(checks)), 3.5))
    ax.scatter(x, [1e3 * c.bound_s for c in checks], marker="_", s=140, color="k", label="bound")
    ax.scatter(x, [1e3 * c.at_bound_s for c in checks], s=12, label="replayed at the bound's pct")
    ax.scatter(x, [1e3 * c.slo.latency_s for c in checks], marker="x", s=20, label="SLO")
    ax.scatter(x, [1e3 * c.achieved_s for c in checks], s=12, label="achieved at the SLO's pct")
    ax.set_yscale("log")
    ax.set_xticks(list(x), [c.name for c in checks], rotation=90, fontsize=6)
    ax.set_ylabel("latency (ms)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    save_figure(fig, path, bbox_inches="tight")


def run_aequitas(args: argparse.Namespace, plan: Any) -> int:
    """An Aequitas plan replayed in the packet-level network simulator
    (:mod:`tailbound.verify_aequitas`): per class and per tenant the tail RNL against the class
    SLO and the admitted share against the prediction; ``verify.csv`` with its columns."""
    from tailbound.errors import ConfigError
    from tailbound.verify_aequitas import replay_aequitas_saved

    for option, value in (
        ("--profile", args.profile),
        ("--mode", args.mode),
        ("--link-bandwidth", args.link_bandwidth),
    ):
        if value is not None:
            raise ConfigError(
                None, "an Aequitas plan is replayed in the network simulator", field=option
            )
    v = replay_aequitas_saved(
        plan, args.plan, tenants=args.tenants, span=lambda trace: span_of(trace, args)
    )
    print(v.table())
    run = v.replay.run
    print(
        f"\n{len(v.classes)} classes: {len(v.violations)} SLOs missed, {len(v.shares_missed)} "
        f"admitted shares below the prediction; {len(run.rpcs)} RPCs, "
        f"{int(run.downgraded.sum())} downgraded, {int(run.counters['unfinished'])} unfinished"
    )
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        v.to_csv(args.out / "verify.csv")
        print(f"wrote {args.out / 'verify.csv'}")
    return outcome(v.all_held)
