"""Shared pieces of the PriorityMeister experiments (``pm_*`` modules, thesis §3.3–3.4).

A *setup* is a storage server (``server0``) with devices, one client host per tenant, and the
tenants: open-loop latency-sensitive ones (a trace and an SLO) and closed-loop throughput ones
(thesis Table 3.1's workload L, a file copy). Each *policy* of §3.3.1 configures the queues:

- ``ps``: start-time fair queueing with equal weights at the device, FIFO links (no network QoS);
- ``cake``: the same SFQ, with the latency tenants' weights adjusted every ``period_s`` from the
  tail latency measured in that period (:func:`cake_controller`, through the simulator's control
  hook);
- ``edf``: earliest deadline first at the device, deadline = SLO, FIFO links;
- ``byslo``: strict priority by SLO (tightest first) at every queue, no rate limits;
- ``pm``: PriorityMeister's priorities (:func:`~tailbound.policies.prioritymeister.prioritize`)
  and ``k`` token buckets per tenant and stage, enforced in demotion mode (thesis §2.2.1: traffic
  over its limits is served at the lowest priority).

Latencies are reported for requests issued in the second half of the run, as the thesis does
for every policy ("to avoid any convergence issues" of Cake).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.characterize import rb_curve
from tailbound.policies.prioritymeister import (
    PmTenant,
    Prioritized,
    by_slo,
    prioritize,
    rate_limits,
)
from tailbound.profiles import SsdProfile, stage_model
from tailbound.profiles.disk import DiskProfile
from tailbound.profiles.tokens import MessageSizes, SsdModel
from tailbound.sim import Scenario, Simulator, Slo, percentile
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces.sizes import FixedSize
from tailbound.traces.synthetic import onoff_trace, poisson_trace
from tailbound.traces.trace import Op, Trace

POLICIES = ("ps", "cake", "edf", "byslo", "pm")
#: Percentiles of thesis Fig. 3.3/3.4.
PERCENTILES = (0.90, 0.95, 0.99, 0.999, 0.9999)
SERVER = "server0"
BANDWIDTH = 125_000_000.0
MTU = 1500.0
#: Simulated time after the traces end, for the last requests to finish.
GRACE_S = 5.0


#: The disk of the thesis' testbed (§3.3.4: "6 1TB 7200RPM SATA disk drives"), by a data sheet
#: of that class (Seagate Barracuda 7200.12 ST31000528AS: 8.5 ms average read seek, 125 MB/s
#: sustained; track-to-track and full-stroke seeks typical of such drives).
THESIS_DISK: dict[str, Any] = {
    "type": "storageDisk",
    "rpm": 7200,
    "trackToTrackSeekTime": 0.001,
    "averageSeekTime": 0.0085,
    "fullStrokeSeekTime": 0.018,
    "capacityBytes": 1_000_000_000_000,
    "transferBandwidth": 125_000_000,
}


def find_profile() -> Path:
    """The SSD profile of the shared data (device costs for the experiments)."""
    from tailbound.experiments.wc_common import find_wc62

    return find_wc62() / "profile_ssd.json"


def table31_trace(
    storage_load: float,
    c2: float,
    duration_s: float,
    *,
    seed: int,
    size: int,
    read_fraction: float,
    profile: SsdProfile,
    name: str,
) -> Trace:
    """A synthetic stand-in for a thesis Table 3.1 workload: on/off arrivals of inter-arrival C²
    ``c2`` (Poisson when 1) at the rate giving ``storage_load`` utilisation of the device.

    *Choice*: the production traces behind workloads A–E are not available; the synthetic traces
    match their storage load and C² (the table's two burstiness figures); sizes and read/write mix
    are chosen so the network loads are near the table's.
    """
    probe = Trace.from_arrays(
        time=np.zeros(2), op=np.array([Op.READ, Op.WRITE]), size=np.array([size, size])
    )
    work = SsdModel(profile).tokens(probe)
    mean_work = read_fraction * work[0] + (1 - read_fraction) * work[1]
    rate = storage_load / mean_work
    options: dict[str, Any] = {
        "seed": seed,
        "sizes": FixedSize(size),
        "read_fraction": read_fraction,
        "name": name,
    }
    if c2 <= 1.0:
        return poisson_trace(rate, duration_s, **options)
    return onoff_trace(rate, c2, duration_s, **options)


def disk_trace(
    storage_load: float,
    network_load: float,
    c2: float,
    duration_s: float,
    *,
    seed: int,
    disk: DiskProfile,
    name: str,
) -> Trace:
    """A synthetic stand-in for a Table 3.1 workload on a disk with both of the table's loads:
    random reads (no offsets: every request seeks, ``DiskModel``) of one size ``s`` at rate
    ``λ`` solving ``λ·(positioning + s/transfer) = storage_load`` and
    ``λ·(200 + 1.1·s)/BANDWIDTH = network_load`` (the response message of a read,
    ``MessageSizes``). Poisson arrivals when ``c2`` is 1, on/off bursts otherwise.

    >>> from tailbound.profiles.disk import DiskProfile
    >>> t = disk_trace(0.45, 0.25, 1.0, 60.0, seed=1, disk=DiskProfile.from_json(THESIS_DISK),
    ...                name="J")
    >>> int(t.size[0]), round(len(t) / 60.0)  # bytes, requests per second
    (1615279, 18)
    """
    m = MessageSizes()
    positioning = disk.average_seek_s + disk.rotational_latency_s
    ratio = storage_load / network_load  # storage work per second of link time
    denominator = ratio * m.large_factor / BANDWIDTH - 1.0 / disk.transfer_bandwidth
    size = (positioning - ratio * m.overhead_bytes / BANDWIDTH) / denominator
    if not (denominator > 0 and size > 0):
        raise ValueError(f"no request size gives storage {storage_load} and network {network_load}")
    rate = storage_load / (positioning + size / disk.transfer_bandwidth)
    options: dict[str, Any] = {"seed": seed, "sizes": FixedSize(round(size)), "name": name}
    if c2 <= 1.0:
        return poisson_trace(rate, duration_s, **options)
    return onoff_trace(rate, c2, duration_s, **options)


@dataclass(frozen=True)
class Tenant:
    """A tenant of an experiment: open loop (``trace``, ``slo``) or closed loop (``outstanding``
    requests of ``trace``, no SLO)."""

    name: str
    trace: Trace
    slo: Slo | None
    device: str = "disk0"
    outstanding: int | None = None

    @property
    def client(self) -> str:
        return f"client_{self.name}"


@dataclass(frozen=True)
class Setup:
    """A server with ``devices`` (scenario device tables) and the tenants on it."""

    tenants: tuple[Tenant, ...]
    devices: tuple[dict[str, Any], ...]
    duration_s: float


def disk_device(profile: Path, name: str = "disk0") -> dict[str, Any]:
    """The device of the storage-bottleneck experiments: the SSD profile's costs with one read
    and one write dispatched at a time (the thesis' disks: "one or two outstanding requests"),
    and no less important request dispatched beside a more important one in service."""
    return {
        "name": name,
        "host": SERVER,
        "kind": "ssd",
        "profile": str(profile),
        "read_mpl": 1,
        "write_mpl": 1,
        # thesis §2.2.1: nothing less important joins a more important request in service
        "low_priority_mpl": 0,
    }


def file_copy(duration_s: float, size: int = 262_144) -> Trace:
    """Workload L: sequential reads of ``size`` bytes, issued closed loop (enough for the run)."""
    n = int(duration_s * 2000)
    return Trace.from_arrays(
        time=np.zeros(n),
        op=np.full(n, Op.READ),
        size=np.full(n, size),
        offset=np.arange(n, dtype=np.int64) * size,
        name="L",
    )


# ------------------------------------------------------------------------------ scenarios
def base_document(setup: Setup) -> dict[str, Any]:
    """The scenario document of ``setup`` (placeholder traces, replaced in :func:`scenario`)."""
    hosts = [{"name": SERVER}] + [{"name": t.client} for t in setup.tenants]
    workloads = []
    for t in setup.tenants:
        w: dict[str, Any] = {
            "name": t.name,
            "client": t.client,
            "device": t.device,
            "trace": {"synthetic": {"kind": "sequential", "requests": 1}},
        }
        if t.slo is not None:
            w["slo"] = {"latency_s": t.slo.latency_s, "percentile": t.slo.percentile}
        if t.outstanding is not None:
            w["issue"] = {"closed": {"outstanding": t.outstanding}}
        workloads.append(w)
    return {
        "duration_s": setup.duration_s,
        "network": {"bandwidth_bytes_per_s": BANDWIDTH, "mtu_bytes": MTU, "propagation_s": 5e-6},
        "hosts": hosts,
        "devices": [dict(d) for d in setup.devices],
        "workloads": workloads,
    }


def scenario(setup: Setup, queues: Sequence[Mapping[str, Any]]) -> Scenario:
    """The scenario of ``setup`` with the given queue tables and the tenants' own traces."""
    doc = base_document(setup)
    doc["queues"] = [dict(q) for q in queues]
    sc = Scenario.from_dict(doc)
    traces = {t.name: t.trace for t in setup.tenants}
    workloads = tuple(dataclasses.replace(w, trace=traces[w.name]) for w in sc.workloads)
    return dataclasses.replace(sc, workloads=workloads)


def stage_queues(t: Tenant) -> dict[Stage, tuple[str, ...]]:
    """The queues each stage of ``t`` crosses (thesis §3.2: every switch egress and device)."""
    return {
        Stage.NET_IN: (f"{t.client}.egress", f"{SERVER}.ingress"),
        Stage.STORAGE: (t.device,),
        Stage.NET_OUT: (f"{SERVER}.egress", f"{t.client}.ingress"),
    }


# ------------------------------------------------------------------------ PriorityMeister
def pm_tenants(setup: Setup, profile: SsdProfile | None, k: int = 3) -> list[PmTenant]:
    """Every tenant as PriorityMeister sees it: ``k`` buckets per stage from its trace's r-b
    curve (:func:`~tailbound.policies.prioritymeister.rate_limits`), its largest request per
    stage (one packet on a link: links interleave messages by packet), its SLO (none: infinite).
    A stage without work (a memory device) is left out of the analysis; a disk's work is its
    ``DiskModel``'s (the device's inline profile)."""
    memory = {d["name"] for d in setup.devices if d.get("kind") == "memory"}
    disks = {
        d["name"]: DiskProfile.from_json(d["profile"])
        for d in setup.devices
        if d.get("kind") == "disk"
    }
    out = []
    for t in setup.tenants:
        queues = stage_queues(t)
        buckets: dict[Stage, tuple[tuple[float, float], ...]] = {}
        biggest: dict[Stage, float] = {}
        for stage in STORAGE_PATH:
            if stage == Stage.STORAGE and t.device in memory:
                queues.pop(stage)
                continue
            device_profile = disks.get(t.device, profile)
            model = stage_model(stage, link_bandwidth_bytes_per_s=BANDWIDTH, profile=device_profile)
            tokens = model.tokens(t.trace)
            biggest[stage] = float(tokens.max()) if stage == Stage.STORAGE else MTU / BANDWIDTH
            if t.outstanding is None:
                buckets[stage] = rate_limits(rb_curve(t.trace, model), k)
            else:
                buckets[stage] = ()  # closed loop: no arrival curve; placed lowest (no SLO)
        slo = t.slo.latency_s if t.slo is not None else float("inf")
        out.append(PmTenant(t.name, slo, queues, buckets, biggest))
    return out


def priority_queues(
    setup: Setup,
    result: Prioritized,
    buckets: Mapping[str, Mapping[Stage, Sequence[tuple[float, float]]]] | None,
    mode: str = "demotion",
) -> list[dict[str, Any]]:
    """Queue tables for priorities (0 = highest; the simulator's larger-is-higher is
    ``levels − p``) at every queue of a stage, buckets at each stage's first queue (the sender
    shapes). Tenants without a priority at a stage (throughput tenants) go below every level."""
    tables: dict[str, dict[str, Any]] = {}
    top = 1 + max((p for v in result.priorities.values() for p in v.values()), default=0)
    for t in setup.tenants:
        prio = result.priorities.get(t.name, {})
        for stage, queues in stage_queues(t).items():
            level = top - prio[stage] if stage in prio else 0
            for i, q in enumerate(queues):
                table = tables.setdefault(
                    q, {"queue": q, "kind": "priority", "mode": mode, "priority": {}, "buckets": {}}
                )
                table["priority"][t.name] = int(level)
                limits = (buckets or {}).get(t.name, {}).get(stage, ())
                if i == 0 and limits:
                    table["buckets"][t.name] = [[float(r), float(b)] for r, b in limits]
    return list(tables.values())


# ----------------------------------------------------------------------------- policies
@dataclass(frozen=True)
class PolicyRun:
    """One policy's result: per tenant the latencies (s) of requests issued in the second half,
    and PriorityMeister's or bySLO's analysis when it has one."""

    policy: str
    latency: dict[str, NDArray[np.float64]]
    analysis: Prioritized | None = None


def cake_controller(
    sim: Simulator,
    setup: Setup,
    device: str,
    *,
    period_s: float,
    upper: float = 0.9,
    max_weight: float = 64.0,
) -> None:
    """A Cake-style reactive controller (Wang et al., SoCC 2012; thesis §3.3.1), run to the end.

    Every ``period_s`` each latency tenant's tail at its SLO percentile over the requests that
    finished in the period is compared with its SLO: above it, the tenant's SFQ weight at the
    device is multiplied by ``latency / SLO`` (at most ×2); below ``upper × SLO`` (the
    SLO-compliance bound the thesis raised) it is decreased by one step of 10%, never below 1.
    Throughput tenants keep weight 1. *Choice*: the thesis extends Cake to several latency tenants
    with one weight each and gives no further parameters; these are Cake's proportional rule.
    """
    weights = {t.name: 1.0 for t in setup.tenants}
    seen = {t.name: 0 for t in setup.tenants}
    t = 0.0
    while t < setup.duration_s:
        t = min(t + period_s, setup.duration_s)
        sim.run(t)
        results = sim.results()
        for tenant in setup.tenants:
            if tenant.slo is None or tenant.device != device:
                continue
            res = results[tenant.name]
            done = np.flatnonzero(res.finished)
            fresh = done[seen[tenant.name] :] if done.size > seen[tenant.name] else done[:0]
            seen[tenant.name] = done.size
            if fresh.size == 0:
                continue
            tail = percentile(res.latency[fresh], tenant.slo.percentile)
            w = weights[tenant.name]
            if tail > tenant.slo.latency_s:
                w = min(max_weight, w * min(2.0, tail / tenant.slo.latency_s))
            elif tail < upper * tenant.slo.latency_s:
                w = max(1.0, w * 0.9)
            if w != weights[tenant.name]:
                weights[tenant.name] = w
                sim.set_param(device, tenant.name, "weight", w)


def run_policy(
    setup: Setup,
    policy: str,
    profile_path: Path,
    *,
    k: int = 3,
    period_s: float = 1.0,
    declared: Setup | None = None,
) -> PolicyRun:
    """Simulate ``setup`` under ``policy`` (one of :data:`POLICIES`).

    ``declared`` is what the tenants' traces looked like when PriorityMeister and bySLO
    configured the system (default: ``setup`` itself); Fig. 3.6 runs a misbehaving trace against
    the limits of a well-behaved one."""
    devices = [d["name"] for d in setup.devices]
    analysis = None
    if policy in ("ps", "cake"):
        names = [t.name for t in setup.tenants]
        queues = [{"queue": d, "kind": "sfq", "weight": dict.fromkeys(names, 1.0)} for d in devices]
    elif policy == "edf":
        loose = {t.name: 10.0 * setup.duration_s for t in setup.tenants if t.slo is None}
        queues = [{"queue": d, "kind": "edf", "deadline_s": loose} for d in devices]
    elif policy in ("byslo", "pm"):
        profile = SsdProfile.load(profile_path)
        tenants = pm_tenants(declared or setup, profile, k)
        analysis = prioritize(tenants) if policy == "pm" else by_slo(tenants)
        missed = analysis.violations(tenants)
        if missed:  # the order is used anyway, so the run shows what it does; flagged here
            late = ", ".join(f"{n} by {1e3 * v:.3g} ms" for n, v in missed.items())
            print(f"{policy}: the analysis does not guarantee every SLO ({late})", file=sys.stderr)
        buckets = {t.name: t.buckets for t in tenants} if policy == "pm" else None
        queues = priority_queues(setup, analysis, buckets)
    else:
        raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")
    sim = scenario(setup, queues).simulator()
    if policy == "cake":
        for d in devices:
            cake_controller(sim, setup, d, period_s=period_s)
    # a grace period lets the last requests finish; one still unfinished counts as infinite
    sim.run(setup.duration_s + GRACE_S)
    results = sim.results()
    half = setup.duration_s / 2
    latency = {}
    for t in setup.tenants:
        res = results[t.name]
        lat = np.full(res.issue.size, np.inf)
        lat[res.finished] = res.latency
        keep = (res.issue >= half) & (res.issue < setup.duration_s)
        latency[t.name] = lat[keep]
    return PolicyRun(policy, latency, analysis)


def percentile_rows(
    runs: Sequence[PolicyRun], setup: Setup, percentiles: Sequence[float] = PERCENTILES
) -> list[dict[str, Any]]:
    """One row per (policy, latency tenant): latency (ms) at each percentile, the SLO, the
    analysis' bound when there is one, and whether the SLO is met at every percentile up to
    the SLO's own."""
    rows = []
    for run in runs:
        for t in setup.tenants:
            if t.slo is None:
                continue
            lat = run.latency[t.name]
            row: dict[str, Any] = {"policy": run.policy, "tenant": t.name}
            for p in percentiles:
                row[f"p{100 * p:g}_ms"] = 1e3 * percentile(lat, p) if lat.size else float("nan")
            row["slo_ms"] = 1e3 * t.slo.latency_s
            bound = run.analysis.bounds.get(t.name) if run.analysis is not None else None
            row["bound_ms"] = 1e3 * bound if bound is not None else float("nan")
            # whether the policy's own analysis guarantees the SLO ("" without an analysis)
            row["guaranteed"] = "" if bound is None else bool(bound <= t.slo.latency_s)
            row["met_all"] = all(
                lat.size > 0 and percentile(lat, p) <= t.slo.latency_s
                for p in percentiles
                if p <= t.slo.percentile + 1e-12
            )
            row["requests"] = int(lat.size)
            rows.append(row)
    return rows


def plot_percentiles(
    rows: Sequence[Mapping[str, Any]], path: Path, title: str, percentiles=PERCENTILES
) -> None:
    """Thesis Fig. 3.4's view: per policy, latency against percentile (log), SLOs dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tailbound.experiments.wc_common import save_plot

    policies = list(dict.fromkeys(r["policy"] for r in rows))
    fig, axes = plt.subplots(1, len(policies), figsize=(3.2 * len(policies), 3.2), sharey=True)
    axes = np.atleast_1d(axes)
    x = np.arange(len(percentiles))
    for ax, pol in zip(axes, policies, strict=True):
        for i, r in enumerate(r for r in rows if r["policy"] == pol):
            ys = [r[f"p{100 * p:g}_ms"] for p in percentiles]
            (line,) = ax.plot(x, ys, marker="o", label=r["tenant"], color=f"C{i}")
            ax.axhline(r["slo_ms"], color=line.get_color(), linestyle="--", linewidth=0.8)
        ax.set_title(pol)
        ax.set_xticks(x, [f"{100 * p:g}" for p in percentiles], rotation=45)
        ax.set_yscale("log")
        ax.set_xlabel("percentile")
    axes[0].set_ylabel("latency (ms)")
    axes[-1].legend(fontsize=7)
    fig.suptitle(title)
    save_plot(fig, path)
