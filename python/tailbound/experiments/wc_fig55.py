"""Thesis Figs. 5.5 and 5.6: every workload's replayed 99.9th-percentile latency against its SLO
in the "same SLO" and "random SLO" runs of Fig. 5.4, placed by WorkloadCompactor.

The thesis (§5.4.2) plans each run from the first half of every trace with its r-b curves scaled
by a 10% safety margin and replays the second halves; so does this experiment: it takes the runs
of :func:`tailbound.experiments.wc_fig54.scenarios` (the same seed gives the same workloads, SLOs
and order as Fig. 5.4), replaces each workload's whole-trace curves by its first-half curves
times ``--safety-margin`` (1.1), places them first-fit with WorkloadCompactor on the wc62
cluster (servers added as needed) under ``--server-model``, and replays the 300 s second halves
through the plan (:func:`tailbound.verify.replay_plan`, the thesis' demotion enforcement as
:mod:`~tailbound.experiments.wc_halves`; ``--mode shaping`` for waiting instead). A workload
whose first-half curves miss its SLO even alone is rejected by the placement and counted.

Writes ``wc_fig55.csv`` and ``.md`` (one row per workload: SLO, bound, replayed 99.9th
percentile and maximum, the latency at the bound's percentile and its ratio to the bound
(``replayed/bound``, as ``tailbound verify``), requests replayed, whether the SLO was met and
the bound held),
``wc_fig55_summary.csv`` and ``.md`` (one row per run) and ``wc_fig55.png`` (Fig. 5.5: the
same-SLO runs; Fig. 5.6: the random-SLO run grouped by SLO).

Run: ``python -m tailbound.experiments.wc_fig55 --out DIR [--server-model reference]
[--count N]``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tailbound.cli.options import progress
from tailbound.experiments.wc_common import (
    FIG54_SLOS,
    add_server_model,
    find_wc62,
    parser,
    save_plot,
    setup,
    setup_model,
    write_table,
)
from tailbound.experiments.wc_fig54 import scenarios
from tailbound.experiments.wc_halves import WC62_DURATION_S
from tailbound.model import Cluster, load_tenants
from tailbound.policies import registry
from tailbound.policies.placement import place
from tailbound.policies.server import ServerModel
from tailbound.policies.workload import TenantCurves, characterize_all
from tailbound.policies.workloadcompactor import to_plan
from tailbound.profiles import SsdProfile
from tailbound.traces import Trace, read_trace
from tailbound.verify import replay_plan


def source(name: str) -> str:
    """The wc62 tenant a run's workload comes from (``name`` or ``name#k`` for a draw)."""
    return name.split("#", 1)[0]


def first_half_curves(
    data: Path, names: Sequence[str], cluster: Cluster, margin: float, *, quiet: bool = True
) -> tuple[dict[str, TenantCurves], dict[str, Trace]]:
    """The wc62 tenants ``names``: their curves from each trace's first half scaled by
    ``margin``, and the second halves to replay (600 s recordings: 300 s each)."""
    configs = [c for c in load_tenants(data / "tenants.json").tenants if c.name in set(names)]
    traces = {c.name: read_trace(c.trace, duration_s=WC62_DURATION_S) for c in configs}
    with progress(quiet, total=len(configs), desc="first-half curves", unit="tenant") as bar:
        curves = characterize_all(
            configs,
            lambda c: traces[c.name].first_half(),
            profile=SsdProfile.load(data / "profile_ssd.json"),
            link_bandwidth_bytes_per_s=cluster.link_bytes_per_s,
            safety_margin=margin,
            progress=bar.update,
        )
    return {w.name: w for w in curves}, {n: t.second_half() for n, t in traces.items()}


def replay_run(
    label: str,
    chosen: Sequence[TenantCurves],
    halves: Mapping[str, TenantCurves],
    second: Mapping[str, Trace],
    *,
    data: Path,
    cluster: Cluster,
    model: ServerModel,
    margin: float,
    mode: str,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Place one run's workloads (their first-half curves, the run's SLOs) with
    WorkloadCompactor under ``model`` and replay their second halves: the per-workload rows and
    the run's summary row."""
    planned = [halves[source(w.name)].with_slo(w.slo_s, w.name) for w in chosen]
    policy = registry.build("workloadcompactor", "placement", model)
    result = place(planned, cluster, policy, grow=True)
    plan = to_plan(result, cluster, policy="workloadcompactor", safety_margin=margin)
    v = replay_plan(
        plan,
        {t.name: second[source(t.name)] for t in plan.tenants},
        profile=data / "profile_ssd.json",
        link_bandwidth_bytes_per_s=cluster.link_bytes_per_s,
        mode=mode,
    )
    rows: list[dict[str, Any]] = [
        {
            "scenario": label,
            "tenant": c.name,
            "server": plan.tenant(c.name).server,
            "slo_ms": 1e3 * c.slo.latency_s,
            "bound_ms": 1e3 * c.bound_s,
            "p999_ms": 1e3 * c.achieved_s,
            "max_ms": 1e3 * c.max_s,
            "at_bound_ms": 1e3 * c.at_bound_s,
            "requests": c.requests,
            "p999/slo": c.achieved_s / c.slo.latency_s,
            "replayed/bound": c.ratio,
            "met": c.met,
            "bound_held": c.bound_held,
        }
        for c in v.checks
    ]
    summary = {
        "scenario": label,
        "workloads": len(chosen),
        "rejected (first-half curves miss the SLO alone)": len(result.rejected),
        "servers": plan.servers_used,
        "SLOs met": sum(c.met for c in v.checks),
        "bounds held": sum(c.bound_held for c in v.checks),
        "worst p999/SLO": max((r["p999/slo"] for r in rows), default=0.0),
        "worst replayed/bound": max((r["replayed/bound"] for r in rows), default=0.0),
    }
    return rows, summary


def run(
    workloads: Sequence[TenantCurves],
    cluster: Cluster,
    data: Path,
    *,
    model: ServerModel,
    seed: int = 0,
    count: int | None = None,
    margin: float = 1.1,
    mode: str = "demotion",
    quiet: bool = True,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every run of Fig. 5.4 (:func:`~tailbound.experiments.wc_fig54.scenarios`, chosen with the
    whole-trace curves of ``workloads`` under ``model``) planned on first halves and replayed on
    second halves: the per-workload rows and one summary row per run."""
    halves, second = first_half_curves(
        data, [w.name for w in workloads], cluster, margin, quiet=quiet
    )
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    runs = scenarios(workloads, seed, count, model=model)
    for label, chosen, _ in progress(
        quiet, iterable=runs, total=len(FIG54_SLOS) + 1, desc="wc_fig55", unit="run"
    ):
        if not chosen:
            continue
        run_rows, run_summary = replay_run(
            label,
            chosen,
            halves,
            second,
            data=data,
            cluster=cluster,
            model=model,
            margin=margin,
            mode=mode,
        )
        print(
            f"{label}: {run_summary['SLOs met']} of {len(run_rows)} met, "
            f"{run_summary['bounds held']} bounds held, {run_summary['servers']} servers",
            file=sys.stderr,
        )
        rows += run_rows
        summary.append(run_summary)
    return rows, summary


def plot(rows: Sequence[Mapping[str, Any]], path: Path, title: str) -> None:
    """Fig. 5.5 (same-SLO runs, left to right) and Fig. 5.6 (the random-SLO run grouped by SLO):
    each workload's replayed 99.9th percentile as a bar, its SLO as a black tick."""
    import matplotlib.pyplot as plt

    same = [r for r in rows if r["scenario"] != "random SLO"]
    rand = sorted((r for r in rows if r["scenario"] == "random SLO"), key=lambda r: r["slo_ms"])
    fig, axes = plt.subplots(2, 1, figsize=(12, 7))
    for ax, group, name in ((axes[0], same, "Fig. 5.5: same SLO"), (axes[1], rand, "Fig. 5.6")):
        x = range(len(group))
        ax.bar(x, [r["p999_ms"] for r in group], label="replayed 99.9th percentile")
        ax.scatter(
            x, [r["slo_ms"] for r in group], marker="_", s=60, color="k", label="SLO", zorder=3
        )
        ax.set_yscale("log")
        ax.set_ylabel("latency (ms)")
        ax.set_xlabel("workload (grouped by run)" if group is same else "workload (by SLO)")
        ax.set_title(name, fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.subplots_adjust(hspace=0.4)
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    add_server_model(p)
    p.add_argument("--count", type=int, help="draw this many workloads per run (as wc_fig54)")
    p.add_argument(
        "--safety-margin", type=float, default=1.1, help="scale of the first-half r-b curves"
    )
    p.add_argument(
        "--mode",
        choices=("shaping", "demotion"),
        default="demotion",
        help="over-limit requests drop to the lowest priority (demotion, the thesis' storage "
        "enforcer, §2.2.1; default) or wait for tokens (shaping)",
    )
    args = p.parse_args(argv)
    workloads, cluster = setup(args)
    model = setup_model(args, cluster)
    rows, summary = run(
        workloads,
        cluster,
        find_wc62(args.data),
        model=model,
        seed=args.seed,
        count=args.count,
        margin=args.safety_margin,
        mode=args.mode,
        quiet=args.quiet,
    )
    if not rows:
        print("no run has a workload to replay", file=sys.stderr)
        return 1
    met = sum(r["met"] for r in rows)
    held = sum(r["bound_held"] for r in rows)
    title = (
        f"Figs. 5.5–5.6: first halves planned (margin {args.safety_margin}), second halves "
        f"replayed ({args.mode}, {args.server_model} server model): {met} of {len(rows)} SLOs "
        f"met, {held} bounds held, worst replayed/bound "
        f"{max(r['replayed/bound'] for r in rows):.3g}"
    )
    write_table(args.out, "wc_fig55", rows, title)
    print(write_table(args.out, "wc_fig55_summary", summary, title))
    plot(rows, args.out / "wc_fig55.png", title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
