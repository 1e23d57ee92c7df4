"""WorkloadCompactor's validation (paper §5.2, Figs. 7–8; thesis §5.3): plan from the first half
of each wc62 trace with a 1.1 safety margin, replay the second half through the plan's priorities
and rate limits in the simulator, and compare every tenant's 99.9th percentile with its SLO.

The paper found every tenant under its SLO with the margin. The run places the 62 tenants with
the cluster, SSD profile and 1 Gb/s links of ``shared/data/wc62`` (WorkloadCompactor, first-fit;
by default with the sound server model and a 10 ms cap on low-priority work in service, adding
servers like the cluster's when it is full, ``--server-model reference`` for the paper's model),
replays the 300 s second halves (MTU 1500) with the thesis' enforcement (§2.2: priorities are
honoured only within the rate limits; over-limit requests drop to the lowest priority rather than
wait; ``--mode shaping`` makes them wait instead) and writes ``wc_halves.csv``,
``wc_halves.md`` and ``wc_halves.png`` (achieved 99.9th percentile against SLO per tenant).

Run: ``python -m tailbound.experiments.wc_halves --out DIR [--safety-margin 1.1]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tailbound.cli.options import progress
from tailbound.experiments.wc_common import find_wc62, parser, save_plot, write_table
from tailbound.model import load_cluster, load_tenants
from tailbound.policies import registry
from tailbound.policies.placement import place
from tailbound.policies.server import REFERENCE
from tailbound.policies.workload import characterize_all
from tailbound.policies.workloadcompactor import LEVEL_MPL, server_model, to_plan
from tailbound.profiles import SsdProfile
from tailbound.traces import read_trace
from tailbound.verify import Verification, replay_plan

#: Length of every wc62 recording (the files do not say it; data README: 600 s each).
WC62_DURATION_S = 600.0


def run(
    data: object,
    margin: float,
    mode: str = "demotion",
    server_model_name: str = "sound",
    cap_s: float | None = None,
    *,
    level_mpl: int | None = LEVEL_MPL,
    quiet: bool = True,
) -> Verification:
    """Plan the first halves with ``margin`` (growing the cluster when it is full) and replay the
    second halves."""
    from pathlib import Path

    data = Path(str(data))
    configs = load_tenants(data / "tenants.json").tenants
    cluster = load_cluster(data / "cluster.json")
    profile = SsdProfile.load(data / "profile_ssd.json")
    traces = {c.name: read_trace(c.trace, duration_s=WC62_DURATION_S) for c in configs}
    with progress(quiet, total=len(configs), desc="r-b curves", unit="tenant") as bar:
        workloads = characterize_all(
            configs,
            lambda c: traces[c.name].first_half(),
            profile=profile,
            link_bandwidth_bytes_per_s=cluster.link_bytes_per_s,
            safety_margin=margin,
            progress=bar.update,
        )
    model = (
        server_model(profile, cluster.link_bytes_per_s, 1500.0, cap_s, level_mpl)
        if server_model_name == "sound"
        else REFERENCE
    )
    policy = registry.build("workloadcompactor", "placement", model)
    with progress(quiet, total=len(workloads), desc="placement", unit="tenant") as bar:
        result = place(workloads, cluster, policy, grow=True, progress=bar.update)
    plan = to_plan(result, cluster, policy="workloadcompactor", safety_margin=margin)
    return replay_plan(
        plan,
        {t.name: traces[t.name].second_half() for t in plan.tenants},
        profile=data / "profile_ssd.json",
        link_bandwidth_bytes_per_s=cluster.link_bytes_per_s,
        mode=mode,
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--safety-margin", type=float, default=1.1)
    p.add_argument("--server-model", choices=("sound", "reference"), default="sound")
    p.add_argument(
        "--low-priority-work-ms",
        type=float,
        help="dispatch cap on less important work in service (sound model; default none, as place)",
    )
    p.add_argument(
        "--share-levels",
        action="store_true",
        help="let a level's requests share the device (sound model; as place --share-levels)",
    )
    p.add_argument(
        "--mode",
        choices=("shaping", "demotion"),
        default="demotion",
        help="over-limit requests drop to the lowest priority (demotion, the thesis' storage "
        "enforcer, §2.2.1; default) or wait for tokens (shaping)",
    )
    args = p.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    v = run(
        find_wc62(args.data),
        args.safety_margin,
        args.mode,
        args.server_model,
        None if args.low_priority_work_ms is None else args.low_priority_work_ms / 1e3,
        level_mpl=None if args.share_levels else LEVEL_MPL,
        quiet=args.quiet,
    )
    rows = [
        {
            "tenant": c.name,
            "server": v.plan.tenant(c.name).server,
            "slo_ms": 1e3 * c.slo.latency_s,
            "bound_ms": 1e3 * c.bound_s,
            "p999_ms": 1e3 * c.achieved_s,
            "max_ms": 1e3 * c.max_s,
            "met": c.met,
            "bound_held": c.bound_held,
        }
        for c in v.checks
    ]
    title = (
        f"wc62: planned on first halves (margin {args.safety_margin}), second halves replayed "
        f"({args.mode}, {args.server_model} server model): "
        f"{sum(c.met for c in v.checks)} of {len(v.checks)} met, "
        f"{sum(c.bound_held for c in v.checks)} bounds held, {v.plan.servers_used} servers"
    )
    print(write_table(args.out, "wc_halves", rows, title))
    fig, ax = plt.subplots(figsize=(12, 4))
    x = range(len(v.checks))
    ax.bar(x, [1e3 * c.achieved_s for c in v.checks], label="achieved 99.9th percentile")
    ax.scatter(
        x, [1e3 * c.slo.latency_s for c in v.checks], marker="_", s=120, color="k", label="SLO"
    )
    ax.set_yscale("log")
    ax.set_xlabel("tenant")
    ax.set_ylabel("latency (ms)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    save_plot(fig, args.out / "wc_halves.png")
    print(f"violations: {v.violations or 'none'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
