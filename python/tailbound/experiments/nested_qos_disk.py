"""Nested QoS §4.5.1 (Fig. 4.11) on the disk model: prxy within 20 ms, Nested QoS and pClock.

Nested QoS thesis §4.5.1 (Fig. 4.11) on the simulator's disk model: a prxy workload on a
hard disk of ~100 random 4 KiB IOPS; fraction within 20 ms under Nested QoS and pClock (thesis,
its Linux prototype: 76% vs 27%).

Setup: the thesis' classes (2, 100 IOPS, 20 ms), (3, 110, 100 ms), (5, 120, 1000 ms) (stated,
§4.5.1), a request counted as ``1/100`` s of disk work (the disk's nominal random 4 KiB IOPS), so
``σ`` seconds of work is ``σ/100`` and ``ρ`` a utilisation ``ρ/100``; the buckets are charged
each request's own disk work. pClock: the outermost envelope (5, 120) with the 20 ms deadline;
for one workload it serves in arrival order, as WF2Q+ (the thesis: "same as the WF2Q for a
single workload"), which is shown too. One request at the disk at a time (MPL 1).

The disk (``sim/disk.rs``, ``profiles/disk.py``): 7200 rpm, seeks 1 ms track to track, 12 ms
full stroke and an average of 5.8 ms, 125 MB/s, 1 TB: a random 4 KiB read costs 10 ms (100 IOPS,
the thesis' "about 100 IOPS for random 4KB IO"); the trace's offsets give shorter seeks and
sequential runs; sequential writes are batched by the simulator's rule.

Stand-in for prxy (MSR Cambridge's web proxy volume, 300 IOPS, bursts to 550): MSR Cambridge
``msr/hm_0_head7016.csv`` (148 s at 47 IOPS), time-scaled to 75 IOPS: prxy slowed by 4, the
factor the thesis states for §4.5.2 (the single-workload factor is lost in the text).

Run: ``tailbound experiment nested_qos_disk --out DIR [--rate 75]`` (writes
``nested_qos_disk.csv``, ``.md``, ``.png``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.experiments.nested_qos_common import (
    POLICIES,
    STANDINS,
    Klass,
    Workload,
    at_rate,
    classes_text,
    find_data,
    parser,
    rows_by,
    scheduler,
    standin,
    within,
)
from tailbound.experiments.wc_common import save_plot, write_table
from tailbound.profiles.disk import DiskModel, DiskProfile
from tailbound.sim import Requests, Simulator
from tailbound.sim.scenario import disk_rules
from tailbound.traces import Trace

#: The disk: 7200 rpm, random 4 KiB reads at 100 IOPS (module documentation).
DISK = DiskProfile(
    rpm=7200,
    track_to_track_seek_s=0.001,
    average_seek_s=0.0058,
    full_stroke_seek_s=0.012,
    capacity_bytes=10**12,
    transfer_bandwidth=125e6,
)
#: The disk's nominal random IOPS: one request of the classes is 1/NOMINAL_IOPS s of work.
NOMINAL_IOPS = 100.0
#: The thesis' classes for prxy (σ requests, ρ IOPS, δ s), §4.5.1.
PRXY_CLASSES = (Klass(2, 100, 0.02), Klass(3, 110, 0.1), Klass(5, 120, 1.0))
#: prxy's rate after the slow-down (IOPS): 300 / 4.
PRXY_IOPS = 75.0


def prxy(data: Path, rate_iops: float = PRXY_IOPS, which: str = "prxy") -> Trace:
    """The prxy stand-in (or the stand-in ``which`` of ``STANDINS``) time-scaled to
    ``rate_iops`` (offsets, sizes and operations kept)."""
    t = standin(data, which)
    return Trace.from_arrays(
        time=at_rate(t.time, rate_iops), op=t.op, size=t.size, offset=t.offset, name="prxy"
    )


def latencies(policy: str, trace: Trace) -> NDArray[np.float64]:
    """prxy's response times (s) on the disk under ``policy`` (one request at a time)."""
    w = Workload("prxy", trace.time, PRXY_CLASSES, PRXY_IOPS)
    device: dict[str, Any] = {
        "read_mpl": 1,
        "write_mpl": 1,
        "scheduler": scheduler(policy, [w], NOMINAL_IOPS),
        "disk": disk_rules(DISK),
    }
    config = {
        "topology": {"devices": [device]},
        "workloads": [{"route": [{"device": 0}], "issue": "open"}],
    }
    requests = Requests(
        arrival=trace.time,
        op=trace.op,
        size=trace.size.astype(np.float64),
        cost=[DiskModel(DISK).tokens(trace)],
        offset=None if trace.offset is None else trace.offset.astype(np.float64),
    )
    sim = Simulator(config, [requests], names=["prxy"], stage_names=[("storage",)])
    sim.run()
    latency = sim.results().workloads[0].latency
    if not np.all(np.isfinite(latency)):
        raise RuntimeError(f"{policy}: requests left unfinished")
    return latency


def plot(lat: Mapping[str, NDArray[np.float64]], path: Path) -> None:
    """Response-time CDF per policy (Fig. 4.11(b))."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for p, values in lat.items():
        x = np.sort(values) * 1e3
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=p)
    ax.axvline(20, color="black", linewidth=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("response time (ms)")
    ax.set_ylabel("fraction of requests")
    ax.legend(fontsize=8)
    ax.set_title("Nested QoS thesis Fig. 4.11: prxy on a ~100 IOPS disk")
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=PRXY_IOPS, help="prxy's mean IOPS")
    p.add_argument(
        "--standin",
        choices=sorted(STANDINS),
        default="prxy",
        help="the trace to replay (default prxy: MSR hm_0; exchange: MSN-FS)",
    )
    args = p.parse_args(argv)
    trace = prxy(find_data(args.data), args.rate, args.standin)
    work = DiskModel(DISK).tokens(trace)
    print(
        f"prxy: {len(trace)} requests at {args.rate:g} IOPS, disk utilisation "
        f"{work.sum() / trace.time[-1]:.2f}, mean work {1e3 * work.mean():.2f} ms; classes "
        f"{classes_text(PRXY_CLASSES)}",
        file=sys.stderr,
    )
    lat = {pol: latencies(pol, trace) for pol in POLICIES}
    fr = {pol: {"prxy": within(v, PRXY_CLASSES[0].delta_s)} for pol, v in lat.items()}
    title = "Nested QoS §4.5.1 on the disk model: fraction within 20 ms (thesis: 76% vs 27%)"
    print(write_table(args.out, "nested_qos_disk", rows_by(fr, ["prxy"]), title))
    plot(lat, args.out / "nested_qos_disk.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
