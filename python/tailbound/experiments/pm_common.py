"""Shared pieces of the PriorityMeister experiments (``pm_*`` modules, thesis §3.3–3.4).

A *setup* is a storage server (``server0``) with devices, one client host per tenant, and the
tenants: open-loop latency-sensitive ones (a trace and an SLO) and closed-loop throughput ones
(thesis Table 3.1's workload L, a file copy). Each *policy* of §3.3.1 configures the queues:

- ``ps``: start-time fair queueing with equal weights at the device, FIFO links (no network QoS);
- ``cake``: the same SFQ, with the latency tenants' weights adjusted every second from the
  tail latency measured in that period (:class:`~tailbound.policies.scheduling.Cake`, through the
  simulator's control hook);
- ``edf``: earliest deadline first at the device, deadline = SLO, FIFO links;
- ``byslo``: strict priority by SLO (tightest first) at every queue, no rate limits;
- ``pm``: PriorityMeister's priorities (:func:`~tailbound.policies.prioritymeister.prioritize`)
  and ``k`` token buckets per tenant and stage, enforced in demotion mode (thesis §2.2.1: traffic
  over its limits is served at the lowest priority).

Every policy comes from :mod:`tailbound.policies.registry` and produces a
:class:`~tailbound.plan.Plan` of the setup, replayed through the one scenario builder.
Latencies are reported for requests issued in the second half of the run, as the thesis does
for every policy ("to avoid any convergence issues" of Cake).
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.characterize import rb_curve
from tailbound.dnc.device import DeviceLimits
from tailbound.model import Slo
from tailbound.plan import (
    Bound,
    Discipline,
    Plan,
    TenantPlan,
    device_name,
    stage_queues,
)
from tailbound.policies.pm_plan import ANALYSIS as PM_ANALYSIS
from tailbound.policies.pm_plan import stage_limits
from tailbound.policies.prioritymeister import PmTenant, Prioritized, path_limits, rate_limits
from tailbound.policies.registry import Entry, find
from tailbound.policies.scheduling import RuntimeController
from tailbound.profiles import SsdProfile, stage_model
from tailbound.profiles.disk import DiskModel, DiskProfile
from tailbound.profiles.tokens import MessageSizes, SsdModel
from tailbound.sim import Scenario, Simulator, percentile
from tailbound.sim.plan import scenario_from_plan
from tailbound.sim.scenario import DISK_GAP_BYTES
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces.sizes import FixedSize, OffsetPattern, SequentialRuns
from tailbound.traces.synthetic import onoff_trace, poisson_trace
from tailbound.traces.trace import Op, Trace

#: The policies of thesis §3.3.1 as the figures label them: registry names (scheduling or
#: prioritization), ``pm`` standing for the registry's ``prioritymeister`` (its prioritizer with
#: its buckets enforced).
POLICIES = ("ps", "cake", "edf", "byslo", "pm")
#: Each label's registry entry (a misspelt label fails when this module is imported).
ENTRIES: dict[str, Entry] = {p: find("prioritymeister" if p == "pm" else p) for p in POLICIES}
#: Cake with its network extension (thesis §3.3.1, tried and dropped there): not one of the
#: figures' five, run by :mod:`~tailbound.experiments.pm_fig37_cake`.
ENTRIES["cake-net"] = find("cake-net")
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

    >>> from tailbound.profiles.disk import DiskModel, DiskProfile
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
    requests of ``trace``, no SLO), on ``device`` of ``server``, from ``client_host`` (default: a
    client host of its own)."""

    name: str
    trace: Trace
    slo: Slo | None
    device: str = "disk0"
    outstanding: int | None = None
    server: str = SERVER
    client_host: str | None = None

    @property
    def client(self) -> str:
        return self.client_host or f"client_{self.name}"


@dataclass(frozen=True)
class Setup:
    """A server with ``devices`` (scenario device tables) and the tenants on it."""

    tenants: tuple[Tenant, ...]
    devices: tuple[dict[str, Any], ...]
    duration_s: float


def thesis_disk_device(name: str = "disk0") -> dict[str, Any]:
    """The shared device of the storage-bottleneck experiments on a disk (thesis §3.3.4/§3.4.1:
    "all sharing a single disk"): :data:`THESIS_DISK` priced by the simulator's disk model
    (``sim/disk.rs``), one read and one write dispatched at a time (the thesis' "one or two
    outstanding requests") and nothing less important dispatched beside a more important one."""
    return {
        "name": name,
        "host": SERVER,
        "kind": "disk",
        "profile": THESIS_DISK,
        "read_mpl": 1,
        "write_mpl": 1,
        # thesis §2.2.1: nothing less important joins a more important request in service
        "low_priority_mpl": 0,
    }


def random_disk_trace(
    storage_load: float,
    c2: float,
    duration_s: float,
    *,
    seed: int,
    size: int,
    read_fraction: float,
    disk: DiskProfile,
    name: str,
) -> Trace:
    """A synthetic stand-in for a Table 3.1 workload on a disk: random requests (no offsets:
    every one seeks, :class:`~tailbound.profiles.disk.DiskModel`) of ``size`` bytes at the rate
    ``storage_load / (average seek + half a revolution + size / transfer)``, Poisson when ``c2``
    is 1, on/off bursts of inter-arrival C² ``c2`` otherwise.

    >>> t = random_disk_trace(0.05, 1.0, 1000.0, seed=1, size=16384, read_fraction=0.7,
    ...                       disk=DiskProfile.from_json(THESIS_DISK), name="A")
    >>> round(len(t) / 1000.0, 1)  # requests per second: 5% of a 12.8 ms random access
    3.9
    """
    rate = storage_load / _random_access_s(disk, size)
    return _arrivals(
        rate, c2, duration_s, seed=seed, size=size, read_fraction=read_fraction, name=name
    )


#: Fig. 3.8's extents (:func:`extent_trace`): each tenant's on the 1 TB disk is 50 GB (5% of the
#: stroke), A, B and C side by side after the file copy's region. *Choice*: the thesis gives no
#: offsets of its traces.
EXTENT_BYTES = 50_000_000_000
#: Mean length (requests) of a tenant's sequential runs in :func:`extent_trace`: half its
#: requests continue the previous one. *Choice*, as :data:`EXTENT_BYTES`.
RUN_LENGTH = 2.0


def extent_trace(
    storage_load: float,
    c2: float,
    duration_s: float,
    *,
    seed: int,
    size: int,
    read_fraction: float,
    disk: DiskProfile,
    base_bytes: int,
    name: str,
) -> Trace:
    """A Table 3.1 stand-in with offsets (thesis Fig. 3.8): requests of ``size`` bytes in
    sequential runs (:data:`RUN_LENGTH`) within ``[base_bytes, base_bytes + EXTENT_BYTES)``,
    Poisson arrivals when ``c2`` is 1, on/off bursts of inter-arrival C² ``c2`` otherwise, at the
    rate giving ``storage_load`` of the disk as the §2.3.2 model prices this trace on a shared
    disk (every write at its worst; mean work per request measured on the trace drawn at a
    first-guess rate, then the trace redrawn at the corrected rate with the same seed).

    >>> disk = DiskProfile.from_json(THESIS_DISK)
    >>> t = extent_trace(0.05, 1.0, 2000.0, seed=1, size=16384, read_fraction=0.7,
    ...                  disk=disk, base_bytes=0, name="A")
    >>> work = DiskModel(disk, shared_gap_bytes=DISK_GAP_BYTES).tokens(t)
    >>> round(float(work.sum()) / 2000.0, 2)  # the disk's utilisation by A
    0.05
    """

    def draw(rate: float) -> Trace:
        offsets = SequentialRuns(EXTENT_BYTES, mean_run_length=RUN_LENGTH)
        trace = _arrivals(
            rate,
            c2,
            duration_s,
            seed=seed,
            size=size,
            read_fraction=read_fraction,
            name=name,
            offsets=offsets,
        )
        assert trace.offset is not None
        return dataclasses.replace(trace, offset=trace.offset + base_bytes)

    first = draw(storage_load / _random_access_s(disk, size))
    shared = DiskModel(disk, shared_gap_bytes=DISK_GAP_BYTES)  # as the analysis prices it
    mean_work = float(shared.tokens(first).mean())
    return draw(storage_load / mean_work)


def _random_access_s(disk: DiskProfile, size: int) -> float:
    """A random access of ``size`` bytes on ``disk`` (s): average seek + half a revolution +
    transfer."""
    return disk.average_seek_s + disk.rotational_latency_s + size / disk.transfer_bandwidth


def _arrivals(
    rate: float,
    c2: float,
    duration_s: float,
    *,
    seed: int,
    size: int,
    read_fraction: float,
    name: str,
    offsets: OffsetPattern | None = None,
) -> Trace:
    """Requests of ``size`` bytes at ``rate`` per second: Poisson when ``c2`` is 1, on/off bursts
    of inter-arrival C² ``c2`` otherwise; ``offsets`` as given (none: no offsets)."""
    options: dict[str, Any] = {
        "seed": seed,
        "sizes": FixedSize(size),
        "read_fraction": read_fraction,
        "offsets": offsets,
        "name": name,
    }
    if c2 <= 1.0:
        return poisson_trace(rate, duration_s, **options)
    return onoff_trace(rate, c2, duration_s, **options)


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


def file_copy(duration_s: float, size: int = 262_144, *, max_rate_per_s: float = 2000.0) -> Trace:
    """Workload L: sequential reads of ``size`` bytes, issued closed loop; enough for the run
    when the device completes at most ``max_rate_per_s`` of them per second (a disk streaming
    256 KiB at 125 MB/s: 477)."""
    n = int(duration_s * max_rate_per_s)
    return Trace.from_arrays(
        time=np.zeros(n),
        op=np.full(n, Op.READ),
        size=np.full(n, size),
        offset=np.arange(n, dtype=np.int64) * size,
        name="L",
    )


# ------------------------------------------------------------------------------ plans
def placed_plan(setup: Setup) -> Plan:
    """``setup`` as a placed plan: every tenant on its device of its server from its client
    host, best effort everywhere and unlimited until a policy configures it."""
    tenants = [
        TenantPlan(
            name=t.name,
            slo=t.slo,
            server=t.server,
            device=t.device,
            client_host=t.client,
            priority=dict.fromkeys(STORAGE_PATH, None),
            limits={},
            bound=Bound(float("inf"), "none"),
        )
        for t in setup.tenants
    ]
    return Plan("placed", 1, tenants)


def simulator(setup: Setup, plan: Plan) -> Simulator:
    """The simulator replaying ``setup``'s traces through ``plan`` (the one scenario builder,
    :func:`~tailbound.sim.plan.scenario_from_plan`, with the setup's own device tables and the
    closed-loop tenants' issue discipline)."""
    placed = {t.name: t for t in plan.tenants}
    devices = {
        device_name(placed[t.name]): d
        for d in setup.devices
        for t in setup.tenants
        if t.device == d["name"]
    }
    doc = scenario_from_plan(
        plan,
        {t.name: t.trace for t in setup.tenants},
        link_bandwidth_bytes_per_s=BANDWIDTH,
        devices=devices,
        mtu_bytes=MTU,
        propagation_s=5e-6,
        duration_s=setup.duration_s,
        issue={
            t.name: {"closed": {"outstanding": t.outstanding}}
            for t in setup.tenants
            if t.outstanding is not None
        },
    )
    return Scenario.from_dict(doc).simulator()


# ------------------------------------------------------------------------ PriorityMeister
def pm_tenants(setup: Setup, profile: SsdProfile | None, k: int = 3) -> list[PmTenant]:
    """Every tenant as PriorityMeister sees it: the plan's queues
    (:func:`~tailbound.plan.stage_queues`), ``k`` buckets per stage from its trace's r-b curve
    (:func:`~tailbound.policies.prioritymeister.rate_limits`), its largest request per stage (one
    packet on a link: links interleave messages by packet), its SLO (none: infinite). A stage
    without work (a memory device) is left out of the analysis; a disk's work is its
    ``DiskModel``'s (the device's inline profile)."""
    memory = {d["name"] for d in setup.devices if d.get("kind") == "memory"}
    disks = {
        d["name"]: DiskProfile.from_json(d["profile"])
        for d in setup.devices
        if d.get("kind") == "disk"
    }
    placed = {t.name: t for t in placed_plan(setup).tenants}
    sharing = Counter(t.device for t in setup.tenants)
    out = []
    for t in setup.tenants:
        queues = stage_queues(placed[t.name])
        buckets: dict[Stage, tuple[tuple[float, float], ...]] = {}
        biggest: dict[Stage, float] = {}
        models: dict[Stage, object] = {}
        for stage in STORAGE_PATH:
            if stage == Stage.STORAGE and t.device in memory:
                queues.pop(stage)
                continue
            device_profile = disks.get(t.device, profile)
            model = stage_model(stage, link_bandwidth_bytes_per_s=BANDWIDTH, profile=device_profile)
            if stage == Stage.STORAGE and t.device in disks and sharing[t.device] > 1:
                # every write at its worst on a shared disk (another tenant may interrupt a
                # sequential stream: the simulator then charges a reposition)
                model = DiskModel(disks[t.device], shared_gap_bytes=DISK_GAP_BYTES)
            tokens = model.tokens(t.trace)
            biggest[stage] = float(tokens.max()) if stage == Stage.STORAGE else MTU / BANDWIDTH
            models[stage] = model
            if t.outstanding is None:
                buckets[stage] = rate_limits(rb_curve(t.trace, model), k)
            else:
                buckets[stage] = ()  # closed loop: no arrival curve; placed lowest (no SLO)
        path: tuple[tuple[float, float], ...] = ()
        work: dict[Stage, float] = {}
        if t.outstanding is None:  # end to end (prioritymeister.path_limits)
            path, work = path_limits(t.trace, models, k)
        slo = t.slo.latency_s if t.slo is not None else float("inf")
        out.append(PmTenant(t.name, slo, queues, buckets, biggest, path, work))
    return out


def priority_plan(
    placed: Plan, result: Prioritized, tenants: Sequence[PmTenant], *, buckets: bool, name: str
) -> Plan:
    """``placed`` with the analysis' priorities (a stage it leaves out, a memory device, is best
    effort), every bucket when ``buckets`` (else none) and the LP bounds; rate limiters demote
    (thesis §2.2.1: traffic over its limits is served below every level)."""
    by_name = {t.name: t for t in tenants}
    out = []
    for tp in placed.tenants:
        prio = result.priorities.get(tp.name, {})
        limits, extra = stage_limits(by_name[tp.name].buckets if buckets else {}, BANDWIDTH)
        out.append(
            dataclasses.replace(
                tp,
                priority={s: prio.get(s) for s in tp.stages},
                limits=limits,
                extra_limits=extra,
                bound=Bound(result.bounds[tp.name], PM_ANALYSIS),
            )
        )
    disciplines = dict.fromkeys(STORAGE_PATH, Discipline("priority", "demotion"))
    return dataclasses.replace(placed, policy=name, tenants=out, disciplines=disciplines)


#: The choices of ``--server-model`` (as the ``wc_*`` experiments'; here ``reference`` is the
#: default, the model every table of docs/results-pm.md was measured with unless it says):
#: ``sound`` gives PriorityMeister's LP the device model of docs/dnc.md (blocking by what the
#: dispatcher keeps in service, processor sharing inside a level); ``reference`` is the LP
#: without it (one request of a less important tenant blocks, docs/dnc.md "Known gaps").
SERVER_MODELS = ("reference", "sound")


def disk_limits(disk: DiskProfile, read_mpl: int = 1, write_mpl: int = 1) -> DeviceLimits:
    """A disk as the sound device model sees it: ``read_mpl`` reads and ``write_mpl`` writes in
    service, no byte limit, and every request priced as a random access,
    ``size / bandwidth(size)`` with ``bandwidth(s) = s / (seek + half a revolution + s /
    transfer)`` (a sequential request costs less: an upper bound). Sampled every 4 KiB up to
    16 MiB; linear interpolation of this concave bandwidth, and holding it past the last size,
    only overestimate the work."""
    sizes = np.arange(4096.0, 16 * 2**20 + 1, 4096.0)
    positioning = disk.average_seek_s + disk.rotational_latency_s
    bandwidth = sizes / (positioning + sizes / disk.transfer_bandwidth)
    return DeviceLimits(
        read_mpl=read_mpl,
        write_mpl=write_mpl,
        max_read_bytes=float("inf"),
        max_write_bytes=float("inf"),
        sizes=sizes,
        read_bandwidth=bandwidth,
        write_bandwidth=bandwidth,
    )


def device_limits(setup: Setup) -> dict[str, DeviceLimits]:
    """The sound device model of every storage device of ``setup`` by queue name (a memory
    device has no storage stage in the analysis): an SSD's profile
    (:meth:`~tailbound.dnc.device.DeviceLimits.of`, with the device table's MPLs), a disk's
    :func:`disk_limits`."""
    out = {}
    for d in setup.devices:
        name = f"{SERVER}.{d['name']}"
        if d.get("kind") == "disk":
            disk = DiskProfile.from_json(d["profile"])
            out[name] = disk_limits(disk, int(d.get("read_mpl", 1)), int(d.get("write_mpl", 1)))
        elif d.get("kind", "ssd") == "ssd":
            limits = DeviceLimits.of(SsdProfile.load(d["profile"]))
            out[name] = dataclasses.replace(
                limits,
                read_mpl=int(d.get("read_mpl", limits.read_mpl)),
                write_mpl=int(d.get("write_mpl", limits.write_mpl)),
            )
    return out


# ----------------------------------------------------------------------------- policies
@dataclass(frozen=True)
class PolicyRun:
    """One policy's result: per tenant the latencies (s) of requests issued in the second half,
    the plan it enforced, and PriorityMeister's or bySLO's analysis when it has one."""

    policy: str
    latency: dict[str, NDArray[np.float64]]
    analysis: Prioritized | None = None
    plan: Plan | None = None


def run_policy(
    setup: Setup,
    policy: str,
    profile_path: Path,
    *,
    k: int = 3,
    declared: Setup | None = None,
    server_model: str = "reference",
) -> PolicyRun:
    """Simulate ``setup`` under ``policy`` (one of :data:`POLICIES`, built by the policy
    registry: a scheduling policy with its defaults, or a prioritizer).

    ``declared`` is what the tenants' traces looked like when PriorityMeister and bySLO
    configured the system (default: ``setup`` itself); Fig. 3.6 runs a misbehaving trace against
    the limits of a well-behaved one. ``server_model`` (:data:`SERVER_MODELS`) is the device
    model PriorityMeister's and bySLO's LP bounds use."""
    if server_model not in SERVER_MODELS:
        raise ValueError(f"--server-model: expected one of {SERVER_MODELS}, got {server_model!r}")
    if policy not in ENTRIES:
        raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")
    entry = ENTRIES[policy]
    placed = placed_plan(setup)
    analysis = None
    controller: RuntimeController | None = None
    if entry.kind == "scheduling":
        controller = entry.build()
        plan = controller.plan(placed)
    else:
        profile = SsdProfile.load(profile_path)
        tenants = pm_tenants(declared or setup, profile, k)
        devices = device_limits(declared or setup) if server_model == "sound" else None
        analysis = entry.build()(tenants, devices=devices)
        missed = analysis.violations(tenants)
        if missed:  # the order is used anyway, so the run shows what it does; flagged here
            late = ", ".join(f"{n} by {1e3 * v:.3g} ms" for n, v in missed.items())
            print(f"{policy}: the analysis does not guarantee every SLO ({late})", file=sys.stderr)
        plan = priority_plan(placed, analysis, tenants, buckets=policy == "pm", name=policy)
    sim = simulator(setup, plan)
    if controller is not None:
        controller.run(sim, plan, setup.duration_s)
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
    return PolicyRun(policy, latency, analysis, plan)


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
