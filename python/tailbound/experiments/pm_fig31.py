"""Thesis Fig. 3.1: SLO violations over time, reactive (Cake) against PriorityMeister, for a
steady and a bursty latency-sensitive tenant, each sharing a device with a throughput workload.

Per 10 s window: the tenant's requests issued, and how many of them exceed the SLO's latency
under Cake and under PriorityMeister (Fig. 3.1's blue, red and green lines). The two tenants
have the same storage load (25%; 16 KiB, 70% reads) and differ in inter-arrival C² only:
:data:`C2S` — 1 (Poisson, Fig. 3.1(a)'s "synthetic trace with less burstiness") and 40 (the
burstiest of Table 3.1, standing in for (b)'s real trace, which is not available). The
throughput workload is Table 3.1's L (the closed-loop file copy); the device, SLO (20 ms at
p99) and the policies are Fig. 3.5's (:mod:`~tailbound.experiments.pm_fig35`). As everywhere in
these experiments, only requests issued in the run's second half are counted (Cake's
convergence, thesis §3.3.1).

Run: ``python -m tailbound.experiments.pm_fig31 --out DIR [--duration S]`` (writes
``pm_fig31.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.cli.options import progress
from tailbound.experiments.pm_common import (
    Setup,
    Tenant,
    disk_device,
    file_copy,
    find_profile,
    run_policy,
    table31_trace,
)
from tailbound.experiments.pm_fig33 import parser
from tailbound.experiments.pm_fig35 import SLO
from tailbound.experiments.wc_common import write_table
from tailbound.profiles import SsdProfile

#: Fig. 3.1(a) and (b): the tenant's inter-arrival C².
C2S = {"a": 1.0, "b": 40.0}
#: Table 3.1's F/H storage load, the window (s) of Fig. 3.1's time series.
LOAD, WINDOW_S = 0.25, 10.0
POLICIES = ("cake", "pm")


def build(c2: float, duration_s: float, seed: int, profile_path: Path) -> Setup:
    """The latency tenant ``W`` (inter-arrival ``c2``) and the file copy on one device."""
    profile = SsdProfile.load(profile_path)
    trace = table31_trace(
        LOAD, c2, duration_s, seed=seed, size=16384, read_fraction=0.7, profile=profile, name="W"
    )
    return Setup(
        (Tenant("W", trace, SLO), Tenant("L", file_copy(duration_s), None, outstanding=2)),
        (disk_device(profile_path),),
        duration_s,
    )


def windows(setup: Setup, profile_path: Path, k: int) -> list[dict[str, Any]]:
    """One row per :data:`WINDOW_S` window of the second half: requests issued, and per policy
    those above the SLO's latency (unfinished ones included)."""
    w = setup.tenants[0]
    assert w.slo is not None
    half, end = setup.duration_s / 2, setup.duration_s
    # open loop: requests are issued at their trace times, and results are kept in that order
    issued = w.trace.time[(w.trace.time >= half) & (w.trace.time < end)]
    edges = np.arange(half, end + 1e-9, WINDOW_S)
    counts = np.histogram(issued, edges)[0]
    rows: list[dict[str, Any]] = [
        {"start_s": float(a), "requests": int(n)} for a, n in zip(edges, counts, strict=False)
    ]
    for policy in POLICIES:
        latency = run_policy(setup, policy, profile_path, k=k).latency["W"]
        if latency.size != issued.size:
            raise RuntimeError(f"{policy}: {latency.size} latencies for {issued.size} requests")
        late = np.histogram(issued[latency > w.slo.latency_s], edges)[0]
        for row, n in zip(rows, late, strict=True):
            row[f"{policy}_violations"] = int(n)
    return rows


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Fig. 3.1: per panel, requests (left axis) and violations per policy (right axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tailbound.experiments.wc_common import save_plot

    fig, axes = plt.subplots(1, len(C2S), figsize=(5 * len(C2S), 3.2))
    for ax, (panel, c2) in zip(np.atleast_1d(axes), C2S.items(), strict=True):
        mine = [r for r in rows if r["panel"] == panel]
        t = [r["start_s"] for r in mine]
        ax.plot(t, [r["requests"] for r in mine], color="C0", label="requests")
        ax.set_ylabel(f"requests per {WINDOW_S:g} s")
        ax.set_xlabel("time (s)")
        right = ax.twinx()
        for policy, color in zip(POLICIES, ("C3", "C2"), strict=True):
            ys = [r[f"{policy}_violations"] for r in mine]
            right.plot(t, ys, color=color, label=f"{policy} violations")
        right.set_ylabel("SLO violations")
        right.legend(fontsize=7, loc="upper right")
        ax.set_title(f"({panel}) C² = {c2:g}")
    fig.suptitle("Fig. 3.1: SLO violations over time")
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    profile_path = args.profile or find_profile()
    rows = []
    for panel, c2 in progress(args, iterable=list(C2S.items()), desc="pm_fig31", unit="panel"):
        setup = build(c2, args.duration, args.seed, profile_path)
        rows += [{"panel": panel, "c2": c2, **r} for r in windows(setup, profile_path, args.k)]
    print(
        write_table(args.out, "pm_fig31", rows, "Fig. 3.1: requests and SLO violations per window")
    )
    plot(rows, args.out / "pm_fig31.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
