"""Nested QoS §4.2–4.3 (Figs. 4.6, 4.7): a bursty WebSearch W1 beside W2, within 50 ms per policy.

Nested QoS thesis §4.2–4.3 (Figs. 4.4, 4.6, 4.7): a WebSearch W1 bursts to ~700 IOPS
during 600–700 s beside a Financial W2; fraction of each within its 50 ms deadline under
Nested QoS, pClock and WF2Q+ (thesis, W1: 94% vs 75.4% vs 75.3%).

Setup (the thesis' numbers, §4.2): one server of 628 IOPS serving uniform requests one at a
time; W1 at 330 IOPS with classes (20, 330 IOPS, 50 ms), (40, 360, 500 ms), (200, 400, 5 s); W2
at 120 IOPS with (7, 130, 50 ms), (14, 143, 500 ms), (28, 158, 5 s) (the thesis' stated values,
which it obtained by profiling its traces). pClock: each workload's outermost envelope with its
50 ms deadline; WF2Q+: weights 330 and 120 (``nested_qos_common``).

Stand-ins (``../shared/data``): W1 is ``mqsim/wsrch-small.trace`` (a WebSearch trace, 60 s at
413 IOPS) time-scaled to 330 IOPS (75 s) and repeated to the run's length; W2 (Financial) is
``msnfs/MSN-FS-30s-ms.txt`` (143 s at 1048 IOPS) time-scaled to 120 IOPS (1250 s). The burst:
W1's own arrivals that follow 600 s, time-scaled to 370 IOPS, laid over 600–700 s (W1 then
offers ~700 IOPS). The run lasts 1200 s (the thesis does not give its length; from its numbers,
pClock's misses — W1 from 600 s to ~790 s, Fig. 4.7 — being 24.6% of W1 put it near 1100–1200 s).

Run: ``tailbound experiment nested_qos_fig43 --out DIR`` (writes ``nested_qos_fig43.csv``,
``.md``, ``.png``); ``--burst-iops 0`` is the well-behaved run of §4.2.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from tailbound.cli.options import progress
from tailbound.experiments.nested_qos_common import (
    POLICIES,
    Klass,
    Workload,
    at_rate,
    classes_text,
    find_data,
    inject_burst,
    latencies,
    parser,
    repeat,
    rows_by,
    standin,
    within,
)
from tailbound.experiments.wc_common import save_plot, write_table

#: Server capacity (IOPS), §4.2.
CAPACITY_IOPS = 628.0
#: Long-term rates (IOPS) of W1 (WebSearch) and W2 (Financial), §4.2.
W1_IOPS, W2_IOPS = 330.0, 120.0
#: The thesis' classes (σ requests, ρ IOPS, δ s), §4.2.
W1_CLASSES = (Klass(20, 330, 0.05), Klass(40, 360, 0.5), Klass(200, 400, 5.0))
W2_CLASSES = (Klass(7, 130, 0.05), Klass(14, 143, 0.5), Klass(28, 158, 5.0))
#: W1's burst (§4.2): 600–700 s, bringing W1 to ~700 IOPS.
BURST = (600.0, 700.0, 700.0 - W1_IOPS)
DURATION_S = 1200.0


def workloads(
    data: Path,
    duration_s: float = DURATION_S,
    burst: tuple[float, float, float] = BURST,
) -> list[Workload]:
    """W1 (with its burst ``(start s, end s, extra IOPS)``) and W2 over ``duration_s``."""
    w1 = repeat(at_rate(standin(data, "websearch").time, W1_IOPS), duration_s)
    w1 = inject_burst(w1, *burst)
    w2 = repeat(at_rate(standin(data, "financial").time, W2_IOPS), duration_s)
    return [Workload("W1", w1, W1_CLASSES, W1_IOPS), Workload("W2", w2, W2_CLASSES, W2_IOPS)]


def run(
    ws: Sequence[Workload], capacity_iops: float = CAPACITY_IOPS, quiet: bool = True
) -> dict[str, dict[str, NDArray[np.float64]]]:
    """Every policy's response times (s) per workload."""
    return {
        p: latencies(p, ws, capacity_iops)
        for p in progress(quiet, iterable=POLICIES, desc="nested_qos_fig43", unit="policy")
    }


def plot(
    ws: Sequence[Workload],
    lat: Mapping[str, Mapping[str, NDArray[np.float64]]],
    burst: tuple[float, float, float],
    path: Path,
) -> None:
    """(a) fraction within 50 ms per policy and workload (Fig. 4.6); (b) W1's response times
    around the burst under each policy (Fig. 4.7)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4), width_ratios=(1, 2))
    x = np.arange(len(ws))
    for k, p in enumerate(lat):
        values = [100 * within(lat[p][w.name], w.deadline_s) for w in ws]
        bars = ax.bar(x + (k - 1) * 0.27, values, 0.27, label=p)
        ax.bar_label(bars, fmt="%.1f", fontsize=7)
    ax.set_xticks(x, [w.name for w in ws])
    ax.set_ylabel("% within the 50 ms deadline")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("(a) fraction within deadline")
    w1 = ws[0]
    lo, hi = burst[0] - 50, burst[1] + 200
    show = (w1.arrival >= lo) & (w1.arrival < hi)
    for p in reversed(list(lat)):  # Nested QoS on top
        bx.plot(w1.arrival[show], 1e3 * lat[p][w1.name][show], ",", label=p, alpha=0.6)
    bx.axhline(1e3 * w1.deadline_s, color="black", linewidth=0.5)
    bx.set_yscale("log")
    bx.set_xlabel("W1 arrival time (s)")
    bx.set_ylabel("W1 response time (ms)")
    bx.legend(fontsize=8, markerscale=20)
    bx.set_title(f"(b) W1 around its burst ({burst[0]:.0f}–{burst[1]:.0f} s)")
    fig.suptitle("Nested QoS thesis Figs. 4.6/4.7: a bursty W1 beside W2 at 628 IOPS")
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=DURATION_S, help="run length (s)")
    p.add_argument("--burst-start", type=float, default=BURST[0], help="W1's burst begins (s)")
    p.add_argument("--burst-end", type=float, default=BURST[1], help="W1's burst ends (s)")
    p.add_argument(
        "--burst-iops", type=float, default=BURST[2], help="W1's extra IOPS (0: well behaved)"
    )
    p.add_argument("--capacity", type=float, default=CAPACITY_IOPS, help="server IOPS")
    args = p.parse_args(argv)
    burst = (args.burst_start, args.burst_end, args.burst_iops)
    ws = workloads(find_data(args.data), args.duration, burst)
    for w in ws:
        rate = len(w.arrival) / args.duration
        print(
            f"{w.name}: {len(w.arrival)} requests ({rate:.0f} IOPS), classes "
            f"{classes_text(w.classes)}",
            file=sys.stderr,
        )
    lat = run(ws, args.capacity, args.quiet)
    fr = {pol: {w.name: within(lat[pol][w.name], w.deadline_s) for w in ws} for pol in lat}
    rows = rows_by(fr, [w.name for w in ws])
    title = "Nested QoS §4.2–4.3: fraction within the 50 ms deadline (thesis W1: 94%, 75.4%, 75.3%)"
    print(write_table(args.out, "nested_qos_fig43", rows, title))
    plot(ws, lat, burst, args.out / "nested_qos_fig43.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
