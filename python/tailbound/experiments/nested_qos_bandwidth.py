"""Nested QoS §4.2 (Fig. 4.3): the bandwidth W1 and W2 receive when both are well behaved.

Nested QoS thesis §4.2 (Fig. 4.3(a)–(c)): the WebSearch W1 (330 IOPS) and the Financial W2
(120 IOPS) of ``nested_qos_fig43``, without W1's burst, on the 628 IOPS server; the throughput
each workload receives over time under Nested QoS, pClock and WF2Q+ (the thesis: "both of the
workloads' bandwidth (W1 (330 IOPS) and W2 (120) IOPS) are guaranteed by all three methods").

Setup: ``nested_qos_fig43``'s workloads, classes and baselines with no burst (its
``--burst-iops 0`` run), 1200 s. A request's completion is its arrival plus its simulated
response time; the bandwidth a workload receives in a window is its completions there per
second. One row per (policy, workload): ``offered_iops`` (arrivals per second over the run),
``served_iops`` (completions per second over the run), and the least and largest ``window_s``
window of completions per second — the fluctuation the plot shows over time, Fig. 4.3's panels.

Run: ``tailbound experiment nested_qos_bandwidth --out DIR [--window 10]`` (writes
``nested_qos_bandwidth.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from tailbound.experiments import nested_qos_fig43
from tailbound.experiments.nested_qos_common import Workload, find_data, parser
from tailbound.experiments.wc_common import save_plot, write_table

#: Width (s) of the windows completions are counted in.
WINDOW_S = 10.0


def served(
    arrival: NDArray[np.float64], latency: NDArray[np.float64], edges: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Completions per second in each window between consecutive ``edges`` (s).

    >>> served(np.array([0.0, 0.5, 1.0]), np.array([0.2, 0.2, 1.5]), np.array([0.0, 1.0, 3.0]))
    array([2. , 0.5])
    """
    counts, _ = np.histogram(arrival + latency, bins=edges)
    return counts / np.diff(edges)


def rows_of(
    ws: Sequence[Workload],
    lat: Mapping[str, Mapping[str, NDArray[np.float64]]],
    duration_s: float,
    window_s: float,
) -> list[dict[str, object]]:
    """One row per (policy, workload) (module documentation)."""
    edges = np.arange(0.0, duration_s + window_s / 2, window_s)
    rows: list[dict[str, object]] = []
    for policy, per in lat.items():
        for w in ws:
            rate = served(w.arrival, per[w.name], edges)
            rows.append(
                {
                    "policy": policy,
                    "workload": w.name,
                    "offered_iops": round(len(w.arrival) / duration_s, 2),
                    "served_iops": round(
                        float(np.count_nonzero(w.arrival + per[w.name] <= duration_s)) / duration_s,
                        2,
                    ),
                    "min_window_iops": round(float(rate.min()), 2),
                    "max_window_iops": round(float(rate.max()), 2),
                }
            )
    return rows


def plot(
    ws: Sequence[Workload],
    lat: Mapping[str, Mapping[str, NDArray[np.float64]]],
    duration_s: float,
    window_s: float,
    path: Path,
) -> None:
    """One panel per policy: each workload's completions per second over time (Fig. 4.3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edges = np.arange(0.0, duration_s + window_s / 2, window_s)
    mid = (edges[:-1] + edges[1:]) / 2
    fig, axes = plt.subplots(1, len(lat), figsize=(4 * len(lat), 3.5), sharey=True)
    for ax, (policy, per) in zip(np.atleast_1d(axes), lat.items(), strict=True):
        for w in ws:
            ax.plot(mid, served(w.arrival, per[w.name], edges), label=w.name)
            ax.axhline(w.rate_iops, color="black", linewidth=0.5, linestyle=":")
        ax.set_title(policy)
        ax.set_xlabel("time (s)")
    np.atleast_1d(axes)[0].set_ylabel(f"IOPS served ({window_s:g} s windows)")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.suptitle("Nested QoS thesis Fig. 4.3: bandwidth of well-behaved W1 and W2 at 628 IOPS")
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument(
        "--duration", type=float, default=nested_qos_fig43.DURATION_S, help="run length (s)"
    )
    p.add_argument("--window", type=float, default=WINDOW_S, help="window width (s)")
    args = p.parse_args(argv)
    burst = (nested_qos_fig43.BURST[0], nested_qos_fig43.BURST[1], 0.0)
    ws = nested_qos_fig43.workloads(find_data(args.data), args.duration, burst)
    lat = nested_qos_fig43.run(ws, nested_qos_fig43.CAPACITY_IOPS, args.quiet)
    rows = rows_of(ws, lat, args.duration, args.window)
    title = (
        "Nested QoS §4.2 (Fig. 4.3): bandwidth of well-behaved W1 (330 IOPS) and W2 (120 IOPS) "
        "at 628 IOPS"
    )
    print(write_table(args.out, "nested_qos_bandwidth", rows, title))
    plot(ws, lat, args.duration, args.window, args.out / "nested_qos_bandwidth.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
