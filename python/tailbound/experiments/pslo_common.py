"""Shared pieces of the PSLO reproductions (``pslo_fig4``, ``pslo_fig5``, ``pslo_fig6``; Li et
al., EuroSys 2016, §5; ``docs/pslo.md``, ``docs/results-pslo.md``).

**The consolidated server.** Five VMs share one simulated 16-disk RAID-0 array (the paper's
§5): four applications and a file copy. The paper's production traces are not here; each
application replays a trace of ``../shared/data`` in its place (:data:`STANDS_FOR`): its
request sizes, operations and offsets, tiled to the length of the run.

**The array** (``sim/array.rs``, ``docs/simulator.md`` "Arrays"): a request's work is seconds
on one spindle (:data:`SPINDLE`, the 7200 rpm disk of the PriorityMeister experiments, priced
by ``DiskModel``: seek + rotation + transfer, transfer only when it continues its own trace),
and :data:`ARRAY` gives the array 16 channels (the paper's 16 disks), so with four VMs the knee
is at a depth of 4 each — where the paper's Fig. 4 has it.

**The VMs issue closed loop** (choice: the paper's VMs are applications waiting for their IOs,
and its throughput differences between policies need them backlogged). An application keeps
:data:`OUTSTANDING` requests in flight (the guest's IO concurrency); its requests wait at its
gate in the device's dispatcher (pacing, depth) and its latency counts that wait
(``docs/simulator.md``, "A device's controller"). The file copy reads :data:`COPY_SIZE`-byte
blocks sequentially with :data:`COPY_OUTSTANDING` in flight and has a throughput SLO only, so
the controller paces it by Eq. 9 under every policy (the paper's "always controlled under
PSLO(T)").
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.cli.options import add_quiet
from tailbound.experiments.pm_common import THESIS_DISK
from tailbound.sim import Scenario, percentile
from tailbound.sim.results import SimResults
from tailbound.traces.readers import read_trace
from tailbound.traces.trace import Op, Trace

#: The paper's applications and the trace of ``../shared/data`` standing for each: MSN's file
#: server by MSN-FS itself; Exchange (mixed reads and writes, small) by the MSR Cambridge
#: volume hm_0; TPC-E (small random reads) by the read-only MSR volume wdev_1; WebSearch by
#: the web-search trace of MQSim.
STANDS_FOR: dict[str, str] = {
    "MSN": "msnfs/MSN-FS-30s-ms.txt",
    "Exchange": "msr/hm_0_head7016.csv",
    "TPC-E": "msr/wdev_1.csv",
    "WebSearch": "mqsim/wsrch-small.trace",
}
APPS: tuple[str, ...] = tuple(STANDS_FOR)
#: The file copy's VM.
COPY = "File copy"
#: One spindle of the array (a data sheet of the 7200 rpm class, ``pm_common.THESIS_DISK``).
SPINDLE: dict[str, Any] = THESIS_DISK
#: The array's service model (``docs/pslo.md``, "The device with a knee"): 16 channels (the
#: paper's 16 disks; with four VMs the knee is at a depth of 4 each), interference β, thrash α
#: beyond the knee, Pareto(3) per-request tail.
ARRAY: dict[str, Any] = {
    "channels": 16,
    "interference": 0.1,
    "thrash": 0.1,
    "tail_shape": 3.0,
    "seed": 1,
}
#: Requests an application keeps in flight (closed loop).
OUTSTANDING = 4
#: The file copy's block (bytes) and requests in flight.
COPY_SIZE = 131_072
COPY_OUTSTANDING = 4
#: The file copy's throughput SLO, IOPS (the paper's, every experiment).
COPY_IOPS = 150.0
#: The policies of the paper's Figs. 5 and 6, in the order of the result tables.
POLICIES = ("LS+T", "TS+L", "L", "LS+U", "T")
DEVICE = "raid"
HOST = "server0"


@dataclass(frozen=True)
class VmSlo:
    """A VM's SLOs: ``percentile`` (a fraction) of its requests within ``latency_s`` seconds,
    and ``iops`` requests per second. ``controlled = False``: the controller is given the
    throughput SLO alone (the paper's file copy) and the latency SLO is only reported against."""

    latency_s: float
    percentile: float
    iops: float
    controlled: bool = True

    def table(self) -> dict[str, float]:
        """The VM's entry in a device's ``control.slo`` table."""
        out = {"throughput_iops": self.iops}
        if self.controlled:
            out |= {"latency_s": self.latency_s, "percentile": self.percentile}
        return out


def find_data(explicit: Path | None = None) -> Path:
    """The shared data folder: ``explicit``, ``$TAILBOUND_DATA`` or the ``shared/data`` found
    above the working directory or the package (as :func:`~tailbound.experiments.wc_common.
    find_wc62`)."""
    from tailbound.experiments.wc_common import find_wc62

    return explicit if explicit is not None else find_wc62().parent


def app_trace(name: str, data: Path, requests: int) -> Trace:
    """Application ``name``'s stand-in trace, its requests repeated to ``requests`` (issue
    times 0: the VM issues closed loop)."""
    t = read_trace(data / STANDS_FOR[name])
    reps = -(-requests // len(t))
    offset = t.offset if t.offset is not None else np.zeros(len(t), dtype=np.int64)
    return Trace.from_arrays(
        time=np.zeros(requests),
        op=np.tile(t.op, reps)[:requests],
        size=np.tile(t.size, reps)[:requests],
        offset=np.tile(offset, reps)[:requests],
        name=name,
    )


def copy_trace(requests: int) -> Trace:
    """The file copy: sequential reads of :data:`COPY_SIZE` bytes."""
    return Trace.from_arrays(
        time=np.zeros(requests),
        op=np.full(requests, Op.READ),
        size=np.full(requests, COPY_SIZE),
        offset=np.arange(requests, dtype=np.int64) * COPY_SIZE,
        name=COPY,
    )


def scenario(
    data: Path,
    duration_s: float,
    outstanding: Mapping[str, int],
    control: Mapping[str, Any] | None,
    array: Mapping[str, Any] | None = None,
) -> Scenario:
    """The consolidated server for ``duration_s`` seconds: every VM of ``outstanding`` (its
    requests in flight) on the array, with the device's PSLO ``control`` table (``None``: no
    controller). A VM has enough requests for 4000 IOPS over the run."""
    requests = int(duration_s * 4000)
    device = {
        "name": DEVICE,
        "host": HOST,
        "kind": "disk",
        "profile": SPINDLE,
        # the array admits what the gates let through: PSLO's depth is the only limit
        "read_mpl": 1024,
        "write_mpl": 1024,
        "batch_requests": 1,
        "array": dict(array if array is not None else ARRAY),
    }
    if control is not None:
        device["control"] = dict(control)
    workloads = [
        {
            "name": name,
            "client": HOST,  # the VMs run on the storage server's hypervisor: no network
            "device": DEVICE,
            "issue": {"closed": {"outstanding": n}},
            "trace": copy_trace(requests) if name == COPY else app_trace(name, data, requests),
        }
        for name, n in outstanding.items()
    ]
    doc = {
        "duration_s": duration_s,
        "hosts": [{"name": HOST}],
        "devices": [device],
        "workloads": workloads,
    }
    return Scenario.from_dict(doc, base=data)


def pslo_table(policy: str, slos: Mapping[str, VmSlo], vms: int) -> dict[str, Any]:
    """A device's PSLO table for ``policy``: the paper's N = 1000 completions a VM per
    interval (``docs/pslo.md``: the interval counts all VMs' completions together)."""
    return {
        "kind": "pslo",
        "policy": policy,
        "interval_completions": 1000 * vms,
        "slo": {name: s.table() for name, s in slos.items()},
    }


@dataclass(frozen=True)
class VmResult:
    """One VM's requests issued during the run: latencies (s) and throughput (IOPS)."""

    latency: NDArray[np.float64]
    iops: float


def run(sc: Scenario, duration_s: float) -> tuple[dict[str, VmResult], SimResults]:
    """Simulate ``sc`` (a grace period lets the last requests finish) and measure each VM over
    the requests it issued in ``[0, duration_s)``: IOPS = their number / ``duration_s``."""
    sim = sc.simulator()
    sim.run(duration_s + 30.0)
    results = sim.results()
    out = {}
    for w in results.workloads:
        issued = w.issue[np.isfinite(w.issue)]
        keep = issued < duration_s
        lat = np.full(issued.size, np.inf)
        done = w.finished[np.isfinite(w.issue)]
        lat[done] = w.latency
        out[w.name] = VmResult(lat[keep], float(keep.sum()) / duration_s)
    return out, results


def rows_for(
    policy: str,
    slos: Mapping[str, VmSlo],
    data: Path,
    duration_s: float,
    per_app: int = OUTSTANDING,
) -> list[dict[str, Any]]:
    """Figs. 5/6: one policy's :func:`slo_rows` (every VM of ``slos``) over ``duration_s``
    simulated seconds; each application keeps ``per_app`` requests in flight, the file copy
    :data:`COPY_OUTSTANDING`."""
    outstanding = dict.fromkeys(APPS, per_app) | {COPY: COPY_OUTSTANDING}
    sc = scenario(data, duration_s, outstanding, pslo_table(policy, slos, len(slos)))
    measured, _ = run(sc, duration_s)
    return slo_rows(policy, measured, slos)


def slo_rows(
    policy: str, measured: Mapping[str, VmResult], slos: Mapping[str, VmSlo]
) -> list[dict[str, Any]]:
    """Figs. 5/6's rows: per VM its latency at its SLO's percentile (ms), the SLO, its IOPS and
    IOPS SLO (a request unfinished at the end counts as infinitely late)."""
    rows = []
    for name, s in slos.items():
        m = measured[name]
        rows.append(
            {
                "policy": policy,
                "vm": name,
                "p_latency_ms": 1e3 * percentile(m.latency, s.percentile),
                "latency_slo_ms": 1e3 * s.latency_s,
                "iops": m.iops,
                "iops_slo": s.iops,
            }
        )
    return rows


def parser(description: str, duration_s: float) -> argparse.ArgumentParser:
    """The options every ``pslo_*`` experiment takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument("--data", type=Path, help="the shared data folder (default: shared/data)")
    p.add_argument(
        "--duration",
        type=float,
        default=duration_s,
        help=f"simulated seconds per run (default {duration_s:g})",
    )
    p.add_argument(
        "--outstanding",
        type=int,
        default=OUTSTANDING,
        help=f"requests each application keeps in flight (default {OUTSTANDING})",
    )
    add_quiet(p)
    return p


def plot_policies(
    rows: Sequence[Mapping[str, Any]], path: Path, title: str, percentile_label: str
) -> None:
    """Figs. 5/6's view: per VM, its latency at its SLO's percentile and its IOPS under each
    policy, the SLOs as ticks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tailbound.experiments.wc_common import save_plot

    policies = list(dict.fromkeys(r["policy"] for r in rows))
    vms = list(dict.fromkeys(r["vm"] for r in rows))
    by = {(r["policy"], r["vm"]): r for r in rows}
    fig, (ax_l, ax_t) = plt.subplots(1, 2, figsize=(12, 3.8))
    width = 0.8 / len(policies)
    x = np.arange(len(vms))
    for i, pol in enumerate(policies):
        lat = [by[(pol, v)]["p_latency_ms"] for v in vms]
        iops = [by[(pol, v)]["iops"] for v in vms]
        ax_l.bar(x + i * width, lat, width, label=pol, color=f"C{i}")
        ax_t.bar(x + i * width, iops, width, label=pol, color=f"C{i}")
    for j, v in enumerate(vms):
        r = by[(policies[0], v)]
        span = (x[j] - width / 2, x[j] + 0.8 - width / 2)
        ax_l.hlines(r["latency_slo_ms"], *span, colors="k", linestyles="--", linewidth=1)
        ax_t.hlines(r["iops_slo"], *span, colors="k", linestyles="--", linewidth=1)
    for ax, label in ((ax_l, f"latency at {percentile_label} (ms)"), (ax_t, "IOPS")):
        ax.set_xticks(x + 0.4 - width / 2, vms)
        ax.set_ylabel(label)
    ax_l.set_yscale("log")
    ax_t.legend(fontsize=7, ncol=len(policies))
    fig.suptitle(f"{title} (dashed: SLOs)")
    save_plot(fig, path)
