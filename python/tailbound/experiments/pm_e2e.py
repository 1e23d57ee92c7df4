"""PriorityMeister's two end-to-end analyses compared: the per-stage LPs summed and the one LP
over the whole path (:func:`tailbound.dnc.lp.path_delay`), on the ``pm_*`` figures' setups and
on groups of wc62 workloads (``docs/results-pm.md``, "End to end or per stage").

For every setup the tenants are prioritized once (the prioritizer with the per-stage analysis,
or the figure's reference order) and each tenant's bound is computed under those same priorities
by both analyses, with the LP without the device model (``reference``, the figures' SLO rule)
and with the sound device model (``sound``, the Plan's dispatch rules). The table gives, per
setup and model, how many tenants each analysis bounds more tightly and the ratio path / stages
(median, least, largest); the plot (``pm_e2e.png``) puts every tenant's two bounds against each
other.

wc62: the 62 workloads (``tenants.json``, their SLOs) in groups of ``--group`` consecutive ones,
each group on one SSD of one server, every tenant on its own client, ``--k`` buckets per stage,
the traces' first ``--window`` seconds.

``--replay`` also replays every wc62 group through the simulator under PriorityMeister's plan
with the default analysis (``analysis="tighter"``, the smaller of the two bounds per tenant) and
writes ``pm_e2e_replay.csv``/``.md``: per group and model, how many tenants' simulated latencies
exceed their bound (:func:`replay_rows`).

Run: ``tailbound experiment pm_e2e [--out DIR] [--groups 10] [--group 6] [--replay]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tailbound.dnc.device import DeviceLimits
from tailbound.experiments.pm_common import Setup, device_limits, pm_tenants
from tailbound.model import Slo
from tailbound.model import Tenant as TenantSpec
from tailbound.plan import Bound, TenantPlan, device_name
from tailbound.policies.pm_plan import plan_tenant
from tailbound.policies.prioritymeister import (
    PmTenant,
    Priorities,
    end_to_end,
    prioritize,
    stage_latencies,
)
from tailbound.profiles import SsdProfile
from tailbound.traces import read_trace

LINK = 125_000_000.0
SERVER = "s0"


def compare(
    tenants: Sequence[PmTenant],
    priorities: Priorities,
    devices: Mapping[str, DeviceLimits] | None,
) -> dict[str, tuple[float, float]]:
    """Per tenant with an SLO: its bound (s) by the per-stage sum and by the path LP."""
    per_stage = stage_latencies(tenants, priorities, devices)
    out = {}
    for t in tenants:
        if not math.isfinite(t.slo_s):
            continue
        stages = end_to_end(tenants, priorities, t, per_stage[t.name], devices, "stages")
        path = end_to_end(tenants, priorities, t, per_stage[t.name], devices, "path")
        out[t.name] = (stages, path)
    return out


def row(label: str, model: str, pairs: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    """One table row: counts of tighter bounds and the ratios path / stages."""
    finite = [(s, p) for s, p in pairs.values() if math.isfinite(s) and math.isfinite(p)]
    ratios = [p / s for s, p in finite if s > 0]
    return {
        "setup": label,
        "model": model,
        "tenants": len(pairs),
        "path_tighter": sum(p < s * (1 - 1e-9) for s, p in finite),
        "stages_tighter": sum(s < p * (1 - 1e-9) for s, p in finite),
        "ratio_median": round(statistics.median(ratios), 3) if ratios else math.nan,
        "ratio_min": round(min(ratios), 3) if ratios else math.nan,
        "ratio_max": round(max(ratios), 3) if ratios else math.nan,
        "stages_ms": " ".join(f"{1e3 * s:.1f}" for s, _ in pairs.values()),
        "path_ms": " ".join(f"{1e3 * p:.1f}" for _, p in pairs.values()),
    }


def figure_rows(duration_s: float, seed: int, profile_path: Path) -> list[dict[str, Any]]:
    """The ``pm_*`` figures' setups in their reference orders (their SLO rule) and under the
    prioritizer."""
    from tailbound.experiments import pm_fig33, pm_fig35, pm_fig37

    setups: list[tuple[str, Setup, int, Sequence[str] | None]] = [
        (
            "fig33 (disk)",
            pm_fig33.build(
                duration_s, seed, profile_path, dict.fromkeys(pm_fig33.REFERENCE_ORDER, 1.0)
            ),
            5,
            (*pm_fig33.REFERENCE_ORDER, "L"),
        ),
        (
            "fig35 F (disk)",
            pm_fig35.setup_of("F", 1.0, duration_s, seed, profile_path, Slo(1.0, 0.99), "disk"),
            3,
            ("F", "L"),
        ),
        ("fig37", pm_fig37.build(duration_s, seed, k=3), 3, pm_fig37.REFERENCE_ORDER),
    ]
    rows = []
    for label, setup, k, order in setups:
        tenants = pm_tenants(setup, None, k)
        sound = device_limits(setup)
        assert order is not None
        prio = {t.name: dict.fromkeys(t.stages, order.index(t.name)) for t in tenants}
        for model, devices in (("reference", None), ("sound", sound)):
            rows.append(row(label, model, compare(tenants, prio, devices)))
    return rows


def wc62_groups(data: Path, groups: int, size: int) -> Iterator[tuple[TenantSpec, ...]]:
    """The tenants of ``data``'s ``tenants.json`` (wc62) in consecutive groups of ``size``, the
    first ``groups`` of them (whole groups only)."""
    from tailbound.model import load_tenants

    configs = load_tenants(data / "tenants.json").tenants
    for g in range(groups):
        chosen = configs[g * size : (g + 1) * size]
        if len(chosen) < size:
            return
        yield chosen


def wc62_rows(data: Path, groups: int, size: int, window_s: float, k: int) -> list[dict[str, Any]]:
    """wc62 in groups of ``size`` on one SSD each (module docstring)."""
    profile = SsdProfile.load(data / "profile_ssd.json")
    rows = []
    for chosen in wc62_groups(data, groups, size):
        tenants = []
        device = None
        for i, c in enumerate(chosen):
            trace = read_trace(c.trace).slice_time(0.0, window_s)
            tp = TenantPlan(c.name, c.slo, SERVER, "ssd0", {}, {}, Bound(math.inf, "none"), f"c{i}")
            device = device_name(tp)
            tenants.append(
                plan_tenant(tp, trace, profile=profile, link_bandwidth_bytes_per_s=LINK, k=k)
            )
        assert device is not None
        sound = {device: DeviceLimits.of(profile)}
        for model, devices in (("reference", None), ("sound", sound)):
            prio = prioritize(tenants, devices=devices, analysis="stages").priorities
            label = f"wc62 {chosen[0].name}..{chosen[-1].name}"
            rows.append(row(label, model, compare(tenants, prio, devices)))
    return rows


def replay_rows(
    data: Path, groups: int, size: int, window_s: float, k: int
) -> list[dict[str, Any]]:
    """wc62 in the groups of :func:`wc62_rows`, each group replayed for its traces' first
        ``window_s`` seconds on one SSD as the ``pm_*`` figures' SSD setup has it
        (:func:`~tailbound.experiments.pm_common.disk_device`: the profile's costs, one read and one
        write in service, nothing less important beside a more important request), every tenant from
        its own client, under PriorityMeister's plan (its prioritizer and ``k`` buckets per stage,
        enforced in demotion mode; the default analysis, the smaller of the per-stage sum and the
        path LP per tenant), with both server models. Per group and model: tenants, how many the
        plan guarantees (bound ≤ SLO), how many have a simulated latency above their bound (requests
        issued in the second half, :func:`~tailbound.experiments.pm_common.run_policy`), the largest
        ratio worst latency / bound, and how many tenants' path LP is below their per-stage sum (the
    bound the default then takes)."""
    from tailbound.experiments.pm_common import Tenant, disk_device, run_policy
    from tailbound.policies.prioritymeister import latencies

    profile_path = data / "profile_ssd.json"
    rows = []
    for chosen in wc62_groups(data, groups, size):
        tenants = tuple(
            Tenant(c.name, read_trace(c.trace).slice_time(0.0, window_s), c.slo, device="disk0")
            for c in chosen
        )
        setup = Setup(tenants, (disk_device(profile_path),), window_s)
        for model in ("reference", "sound"):
            run = run_policy(setup, "pm", profile_path, k=k, server_model=model)
            assert run.analysis is not None
            bounds = run.analysis.bounds
            pm = pm_tenants(setup, SsdProfile.load(profile_path), k)
            devices = device_limits(setup) if model == "sound" else None
            path = latencies(pm, run.analysis.priorities, devices, "path")
            summed = {n: sum(b.values()) for n, b in run.analysis.stage_bounds.items()}
            ratios = {
                t.name: float(max(run.latency[t.name], default=0.0)) / bounds[t.name]
                for t in tenants
            }
            rows.append(
                {
                    "setup": f"wc62 {chosen[0].name}..{chosen[-1].name}",
                    "model": model,
                    "tenants": len(tenants),
                    "guaranteed": sum(bounds[c.name] <= c.slo.latency_s for c in chosen),
                    "path_tighter": sum(path[t.name] < summed[t.name] for t in tenants),
                    "exceeded": sum(r > 1.0 + 1e-9 for r in ratios.values()),
                    "worst_over_bound": round(max(ratios.values()), 3),
                    "requests": sum(int(run.latency[t.name].size) for t in tenants),
                }
            )
    return rows


def plot(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Every tenant's path bound against its per-stage sum (log-log), one panel per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tailbound.experiments.wc_common import save_plot

    models = ("reference", "sound")
    fig, axes = plt.subplots(1, 2, figsize=(8, 4))
    for ax, model in zip(axes, models, strict=True):
        for group, marker in (("fig", "s"), ("wc62", "o")):
            xs, ys = [], []
            for r in rows:
                if r["model"] == model and str(r["setup"]).startswith(group):
                    xs += [float(v) for v in str(r["stages_ms"]).split()]
                    ys += [float(v) for v in str(r["path_ms"]).split()]
            ax.scatter(
                xs, ys, marker=marker, s=14, label="pm_* figures" if group == "fig" else group
            )
        lo, hi = ax.get_xlim()
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set(xscale="log", yscale="log", title=f"LP {model}", xlabel="per-stage sum (ms)")
        ax.set_ylabel("end-to-end LP (ms)")
        ax.legend(fontsize=8)
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    from tailbound.experiments._snc_common import find_data
    from tailbound.experiments.pm_common import find_profile
    from tailbound.experiments.wc_common import write_table

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out/experiments", help="output folder")
    p.add_argument("--data", help="shared data folder (default: found automatically)")
    p.add_argument("--duration", type=float, default=60.0, help="figures' traces, s")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--groups", type=int, default=10, help="wc62 groups (default 10)")
    p.add_argument("--group", type=int, default=6, help="wc62 workloads per SSD (default 6)")
    p.add_argument("--window", type=float, default=300.0, help="wc62 traces' first seconds")
    p.add_argument("--k", type=int, default=3, help="wc62 buckets per stage")
    p.add_argument(
        "--replay", action="store_true", help="also replay the wc62 groups (pm_e2e_replay.md)"
    )
    args = p.parse_args(argv)
    data = find_data(args.data) / "wc62"
    rows = figure_rows(args.duration, args.seed, find_profile())
    rows += wc62_rows(data, args.groups, args.group, args.window, args.k)
    title = "PriorityMeister bounds: per-stage sum vs one path LP (ratio = path / stages)"
    print(write_table(Path(args.out), "pm_e2e", rows, title))
    plot(rows, Path(args.out) / "pm_e2e.png")
    if args.replay:
        replayed = replay_rows(data, args.groups, args.group, args.window, args.k)
        title = "PriorityMeister on wc62, replayed: simulated latencies against the default bounds"
        print(write_table(Path(args.out), "pm_e2e_replay", replayed, title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
