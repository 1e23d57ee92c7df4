"""Thesis Fig. 3.2: why PriorityMeister holds a tenant by several token buckets at once (§3.2.1).

Three tenants share one device at fixed priorities: W_H (Table 3.1's workload B: storage load 5%,
inter-arrival C² 14) highest, W_M (workload A: 5%, C² 1.3) next, W_L (workload C: 55%, C² 2.2)
lowest. W_H's rate limits are taken from its well-behaved trace's r-b curve: ``k`` = 3 points
(:func:`~tailbound.policies.prioritymeister.rate_limits`: low rate/large bucket, medium,
high rate/small bucket; Fig. 3.2(a)). Then W_H misbehaves — a burst of :data:`BURST_LOAD` extra
device load for :data:`BURST_S` seconds in the middle of the run ("a large 40 second burst of
work") — and W_H is held by each bucket alone, then by all three (PriorityMeister); traffic over
the limits is demoted below every level (thesis §2.2.1). Reported: W_M's and W_L's p99.9
latency over the whole run (Fig. 3.2(b), (c)), their SLOs, and the LP bound each configuration
guarantees them.

SLOs (fixed before any run): each of W_M, W_L's LP bound when W_H is held by all three buckets,
rounded up to :data:`SLO_STEP` — the least SLO the analysis guarantees with PriorityMeister's
limits. A single bucket is a looser arrival curve, so its bounds are never lower; the
experiment shows whether the simulated latencies follow.

*Choices*: the production trace behind W_H and the thesis' SLOs are not available (synthetic
stand-ins, :func:`~tailbound.experiments.pm_common.table31_trace`, on the SSD profile's device
as in Figs. 3.3/3.6); only W_H's storage buckets vary (its network buckets stay all three: the
links are not the bottleneck here).

Run: ``python -m tailbound.experiments.pm_fig32 --out DIR [--duration S]`` (writes
``pm_fig32.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.cli.options import progress
from tailbound.experiments.pm_common import (
    GRACE_S,
    Setup,
    Tenant,
    disk_device,
    find_profile,
    placed_plan,
    pm_tenants,
    priority_plan,
    simulator,
    table31_trace,
)
from tailbound.experiments.pm_fig33 import parser
from tailbound.experiments.wc_common import write_table
from tailbound.policies.prioritymeister import PmTenant, Prioritized, stage_latencies
from tailbound.profiles import SsdProfile
from tailbound.sim import Slo, percentile
from tailbound.stages import Stage
from tailbound.traces.trace import Trace

#: (storage load, C², request size, read fraction) of W_H, W_M, W_L (Table 3.1's B, A, C).
WORKLOADS = {
    "H": (0.05, 14.0, 16384, 0.7),
    "M": (0.05, 1.3, 16384, 0.7),
    "L": (0.55, 2.2, 4096, 0.2),
}
#: The misbehaviour: extra device load (utilisation) for ``BURST_S`` seconds mid-run.
BURST_LOAD, BURST_S = 1.0, 40.0
#: SLOs are rounded up to this many seconds.
SLO_STEP = 0.001
#: The percentile of Fig. 3.2(b), (c).
PERCENTILE = 0.999
#: W_H's bucket choices: one of the three alone (by index, low rate first) or all of them.
CHOICES: dict[str, tuple[int, ...]] = {
    "low rate, large bucket": (0,),
    "medium rate, medium bucket": (1,),
    "high rate, small bucket": (2,),
    "all three (PM)": (0, 1, 2),
}


def build(duration_s: float, seed: int, profile_path: Path) -> tuple[Setup, Setup]:
    """The well-behaved setup (W_H's limits and the SLOs come from it) and the one run, where
    W_H carries the burst; SLOs placeholders (1 s) until :func:`slos` sets them."""
    profile = SsdProfile.load(profile_path)
    traces = {
        name: table31_trace(
            load,
            c2,
            duration_s,
            seed=seed + i,
            size=size,
            read_fraction=reads,
            profile=profile,
            name=name,
        )
        for i, (name, (load, c2, size, reads)) in enumerate(WORKLOADS.items())
    }
    device = disk_device(profile_path)
    tenants = tuple(Tenant(n, tr, Slo(1.0, PERCENTILE)) for n, tr in traces.items())
    behaved = Setup(tenants, (device,), duration_s)
    burst = misbehave(traces["H"], profile, duration_s, seed + 7)
    run = dataclasses.replace(
        behaved,
        tenants=tuple(dataclasses.replace(t, trace=burst) if t.name == "H" else t for t in tenants),
    )
    return behaved, run


def misbehave(trace: Trace, profile: SsdProfile, duration_s: float, seed: int) -> Trace:
    """``trace`` plus Poisson arrivals of its request kind at :data:`BURST_LOAD` for
    :data:`BURST_S` seconds centred in the run."""
    _, _, size, reads = WORKLOADS["H"]
    span = min(BURST_S, duration_s / 3)
    start = (duration_s - span) / 2
    extra = table31_trace(
        BURST_LOAD,
        1.0,
        span,
        seed=seed,
        size=size,
        read_fraction=reads,
        profile=profile,
        name="H",
    )
    time = np.concatenate([trace.time, extra.time + start])
    order = np.argsort(time, kind="stable")
    return Trace.from_arrays(
        time=time[order],
        op=np.concatenate([trace.op, extra.op])[order],
        size=np.concatenate([trace.size, extra.size])[order],
        duration_s=duration_s,
        name="H",
    )


def held(tenants: Sequence[PmTenant], choice: tuple[int, ...]) -> list[PmTenant]:
    """``tenants`` with W_H's storage buckets cut to ``choice`` (indices, low rate first)."""
    out = []
    for t in tenants:
        if t.name == "H":
            storage = t.buckets[Stage.STORAGE]
            buckets = {**t.buckets, Stage.STORAGE: tuple(storage[i] for i in choice)}
            t = dataclasses.replace(t, buckets=buckets)
        out.append(t)
    return out


def analysed(tenants: Sequence[PmTenant]) -> Prioritized:
    """The fixed order H > M > L at every stage and the LP bounds it gives."""
    order = [t.name for t in tenants]
    prio = {t.name: dict.fromkeys(t.stages, order.index(t.name)) for t in tenants}
    per_stage = stage_latencies(tenants, prio)
    bounds = {n: float(sum(v.values())) for n, v in per_stage.items()}
    return Prioritized(prio, bounds, per_stage)


def slos(tenants: Sequence[PmTenant]) -> dict[str, float]:
    """W_M's and W_L's SLOs (s): their bounds with W_H held by all three buckets, rounded up."""
    bounds = analysed(held(tenants, CHOICES["all three (PM)"])).bounds
    return {n: SLO_STEP * math.ceil(bounds[n] / SLO_STEP - 1e-9) for n in ("M", "L")}


def run_choice(
    behaved: Setup, run: Setup, tenants: Sequence[PmTenant], label: str
) -> list[dict[str, Any]]:
    """Simulate ``run`` with W_H held by the buckets ``label`` names; one row per W_M, W_L."""
    limited = held(tenants, CHOICES[label])
    result = analysed(limited)
    slo = slos(tenants)
    plan = priority_plan(placed_plan(behaved), result, limited, buckets=True, name="fig32")
    sim = simulator(run, plan)
    sim.run(run.duration_s + GRACE_S)
    results = sim.results()
    h = dict(
        zip(
            ("rate", "size_s"),
            np.array([tenants[0].buckets[Stage.STORAGE][i] for i in CHOICES[label]]).T,
            strict=True,
        )
    )
    rows = []
    for name in ("M", "L"):
        res = results[name]
        lat = np.full(res.issue.size, np.inf)
        lat[res.finished] = res.latency
        p = percentile(lat, PERCENTILE)
        rows.append(
            {
                "buckets": label,
                "h_rates": " ".join(f"{r:.3g}" for r in h["rate"]),
                "h_sizes_ms": " ".join(f"{1e3 * b:.3g}" for b in h["size_s"]),
                "tenant": name,
                "p99.9_ms": 1e3 * p,
                "slo_ms": 1e3 * slo[name],
                "bound_ms": 1e3 * result.bounds[name],
                "met": bool(p <= slo[name]),
                "requests": int(lat.size),
            }
        )
    return rows


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Fig. 3.2(b), (c): per tenant, p99.9 per bucket choice, SLO dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tailbound.experiments.wc_common import save_plot

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    labels = list(CHOICES)
    for ax, name in zip(axes, ("M", "L"), strict=True):
        mine = [r for r in rows if r["tenant"] == name]
        ys = np.array([next(r["p99.9_ms"] for r in mine if r["buckets"] == lab) for lab in labels])
        finite = ys[np.isfinite(ys)]
        top = 2 * max(float(finite.max()) if finite.size else 1.0, mine[0]["slo_ms"])
        bars = ax.bar(range(len(labels)), np.minimum(ys, top), color=[f"C{i}" for i in range(4)])
        for bar, y in zip(bars, ys, strict=True):
            if not np.isfinite(y):  # requests still unfinished at the end: drawn at the top
                bar.set_hatch("//")
                ax.annotate("unfinished", (bar.get_x(), top), fontsize=7, va="bottom")
        ax.axhline(mine[0]["slo_ms"], color="k", linestyle="--", linewidth=0.8)
        ax.set_xticks(range(len(labels)), [lab.split(",")[0] for lab in labels], rotation=20)
        ax.set_title(f"W_{name}")
        ax.set_ylabel("p99.9 latency (ms)")
    fig.suptitle("Fig. 3.2: W_H held by one bucket or by all three")
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile_path = args.profile or find_profile()
    behaved, run = build(args.duration, args.seed, profile_path)
    tenants = pm_tenants(behaved, SsdProfile.load(profile_path), 3)
    rows = []
    for label in progress(args, iterable=list(CHOICES), desc="pm_fig32", unit="choice"):
        rows += run_choice(behaved, run, tenants, label)
    print(write_table(args.out, "pm_fig32", rows, "Fig. 3.2: W_H's buckets and W_M, W_L's tail"))
    plot(rows, args.out / "pm_fig32.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
