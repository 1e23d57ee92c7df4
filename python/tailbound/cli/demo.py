"""``tailbound demo``: the whole pipeline on a fleet tailbound generates itself."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import epilog, outcome
from tailbound.cli.options import integer, number
from tailbound.limits import MAX_FLEET_WORKLOADS


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="generate a fleet, characterise, place, replay and check every SLO",
        description=(
            "Generate a fleet of bursty workloads with SLOs, characterise the first half of each "
            "trace, place the fleet with WorkloadCompactor and its baselines, replay the second "
            "half through WorkloadCompactor's plan in the simulator and check every SLO."
        ),
        epilog=epilog("a tenant missed its SLO on the replayed second half"),
    )
    parser.add_argument(
        "--workloads",
        type=integer(low=1, high=MAX_FLEET_WORKLOADS),
        default=24,
        help="fleet size in workloads (default 24)",
    )
    parser.add_argument("--seed", type=integer(low=0), default=0, help="random seed (default 0)")
    parser.add_argument(
        "--duration",
        type=number(low=0.0, low_open=True, high=86400.0),
        default=300.0,
        metavar="SECONDS",
        help="trace length in seconds, at most a day (default 300)",
    )
    parser.add_argument("--out", type=Path, default=Path("out/demo"), help="output folder")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tailbound.demo import (
        DEMO_LINK_BYTES_PER_S,
        DEMO_SSD,
        run_demo,
        servers_table,
        write_fleet,
    )
    from tailbound.plan_inputs import PlanInputs
    from tailbound.sim.plot import plot_tail

    result = run_demo(
        workloads=args.workloads,
        seed=args.seed,
        duration_s=args.duration,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    # the generated traces are written beside the plans, which record them (with the profile and
    # link bandwidth), so `tailbound verify --plan` replays a demo plan alone
    # with the tenants, cluster and profile files every verb and the control plane read
    write_fleet(result.fleet, args.out)
    traces = {w.name: args.out / "traces" / f"{w.name}.parquet" for w in result.fleet}
    for name, plan in result.plans.items():
        inputs = PlanInputs.record(
            {t.name: traces[t.name] for t in plan.tenants},
            link_bytes_per_s=DEMO_LINK_BYTES_PER_S,
            profile=DEMO_SSD,
        )
        dataclasses.replace(plan, inputs=inputs).save(
            args.out / f"plan-{name.replace(':', '-')}.json"
        )
    result.verification.to_csv(args.out / "verification.csv")
    plot = plot_tail(result.verification.results, args.out / "tail-latency.png")

    print("\n## Servers used (planned from the first halves, safety margin 1.1)\n")
    print(servers_table(result.plans, result.seconds))
    print("\n## WorkloadCompactor's plan, second halves replayed in the simulator\n")
    print(result.verification.table())
    v = result.verification
    met = sum(c.met for c in v.checks)
    print(f"\n{met} of {len(v.checks)} tenants met their SLO on the replayed halves.")
    if not v.all_met:
        print(
            f"Missed: {', '.join(v.violations)}. Their second halves are burstier than the first "
            "halves they were planned from, by more than the 1.1 safety margin and demotion to "
            "the lowest priority cover: plan from a longer or more representative trace, or "
            "raise the margin."
        )
    print(
        f"Plans, their traces, tenants.json, cluster.json, profile_ssd.json, verification.csv "
        f"and {plot.name} written to {args.out}"
    )
    return outcome(v.all_met)
