"""Placement of 10⁴–10⁵ tenants in parallel: partition, place each partition, reconcile.

First-fit places one tenant at a time against the whole cluster, so it does not parallelise as
it stands. For large fleets the cluster and the tenants are split into ``P`` independent
partitions, each placed by the ordinary placer (:func:`~tailbound.policies.placement.place`, any
policy, fast-first-fit or not) as one task of a :class:`~tailbound.executor.Runner` (a local
process pool or a Dask cluster), and the partitions are then reconciled into one placement:

1. **Partitioning.** Tenant ``i`` (arrival order) goes to partition ``i mod P``, so every
   partition sees the same mix of tenants in the same relative order; the servers are dealt in
   ``P`` contiguous blocks (with ``grow``, a partition whose block is empty starts from one
   server like the cluster's last, and grows like the single placer).
2. **Placement.** Each partition is placed alone; only its tenants are shipped to its worker,
   packed into a few arrays (:class:`_Tenants`: the curves end to end, each distinct curves
   dict and SLO once; ≈5 µs per tenant to pack, ≈7 µs to unpack, against ≈37 and ≈27 µs to
   pickle each tenant's objects), and only indices and limits come back (≈3 ms per partition
   of 2,000 tenants each way). Run in this process (one partition, or a runner of one job),
   the tenants are not packed at all.
3. **Reconciliation.** The partitions' servers are concatenated in partition order (grown
   servers renamed ``server<index>`` in that order). What partitioning costs lies at the seams:
   each partition ends with its own half-empty servers, and with a fixed cluster a tenant may be
   refused by its partition while another partition has room. So (a) the tenants of the last
   ``tail`` servers each partition opened are re-placed together by first-fit on fresh servers,
   kept only if that uses fewer servers; (b) every tenant a partition refused is offered, in
   arrival order, to the whole merged cluster by the same placer (it is rejected only if it fits
   nowhere there either, with the placer's reason).

**Cost in servers.** Measured on the synthetic WorkloadCompactor fleets of
``benchmarks/bench_scale.py`` (benchmarks/README.md, "bench_scale"): with partitions of
1,000–2,500 tenants the reconciled placement uses between 0.2 % fewer and 0.3 % more servers than
one first-fit placement of the same tenants (+0.13 % for 10⁴ tenants in partitions of 2,000),
partitions of 500 about 1 % more; the loss grows as partitions shrink (each partition's last,
partly filled servers are the seam the reconciliation works on), so choose partitions of at least
~1,000 tenants. A tenant's limits and bound are those of the server it ends on, computed by the
same policy as a single placement: partitioning changes how many servers are used, never whether
a placed tenant meets its SLO.

Departures and admission one arrival at a time stay with the single placer
(:class:`~tailbound.policies.placement.Placer`): a partitioned placement is a batch of arrivals.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from tailbound.characterize import RbCurve
from tailbound.executor import Runner
from tailbound.model import Cluster, Slo
from tailbound.model import Server as ServerConfig
from tailbound.policies.placement import (
    PlacementResult,
    Placer,
    Policy,
    ServerState,
    place,
)
from tailbound.policies.server import REFERENCE, Placed
from tailbound.policies.workload import TenantCurves
from tailbound.stages import Stage

#: Servers at the end of each partition whose tenants the reconciliation re-places together.
TAIL = 8


@dataclass(frozen=True)
class _Options:
    """What every partition's task shares: how to place (a picklable policy factory)."""

    policy: Callable[[], Policy]
    fast_first_fit: bool
    grow: bool
    link_bytes_per_s: float
    window: int | None = None
    #: Forget tailbound's module-level caches after each partition
    #: (:func:`forget_tenant_caches`): set when the partitions run in worker processes.
    forget: bool = False


@dataclass(frozen=True)
class _Tenants:
    """A partition's tenants packed into a few arrays for the trip to a worker: pickling
    10⁵ :class:`TenantCurves` one object at a time costs ≈37 µs each in the caller and ≈27 µs
    in the workers (measured, docs/scale-out.md), these arrays a few µs.

    Tenants sharing one curves dict share it after the trip too (the placer's remembered
    refusals are keyed by it, :func:`~tailbound.policies.placement.refusal_key`): ``curves_of``
    indexes the distinct dicts, whose curves lie end to end in ``rates`` and ``buckets``
    (``lengths`` points per dict and stage, in the order of ``stages``)."""

    names: list[str]
    slos: list[Slo]
    slo_of: NDArray[np.int64]
    largest: NDArray[np.float64]
    stages: tuple[Stage, ...]
    curves_of: NDArray[np.int64]
    lengths: NDArray[np.int64]
    mean: NDArray[np.float64]
    #: Each curve's ``stage`` and ``name`` (distinct dict by distinct dict, stage by stage).
    labels: list[tuple[Stage | None, str]]
    rates: NDArray[np.float64]
    buckets: NDArray[np.float64]

    @classmethod
    def pack(cls, workloads: Sequence[TenantCurves]) -> _Tenants | None:
        """``workloads`` packed; ``None`` when their curves are not all of the same stages."""
        stages = tuple(workloads[0].curves) if workloads else ()
        index: dict[int, int] = {}
        dicts: list[dict[Stage, RbCurve]] = []
        slo_index: dict[Slo, int] = {}
        curves_of = np.empty(len(workloads), dtype=np.int64)
        slo_of = np.empty(len(workloads), dtype=np.int64)
        for j, w in enumerate(workloads):
            k = index.get(id(w.curves))
            if k is None:
                if tuple(w.curves) != stages:
                    return None
                k = index[id(w.curves)] = len(dicts)
                dicts.append(w.curves)
            curves_of[j] = k
            slo_of[j] = slo_index.setdefault(w.slo, len(slo_index))
        every = [d[stage] for d in dicts for stage in stages]
        return cls(
            [w.name for w in workloads],
            list(slo_index),
            slo_of,
            np.array([w.largest for w in workloads], dtype=np.float64).reshape(-1, 2),
            stages,
            curves_of,
            np.array([len(c) for c in every], dtype=np.int64),
            np.array([c.mean_rate for c in every], dtype=np.float64),
            [(c.stage, c.name) for c in every],
            np.concatenate([c.rates for c in every]) if every else np.zeros(0),
            np.concatenate([c.buckets for c in every]) if every else np.zeros(0),
        )

    def unpack(self) -> list[TenantCurves]:
        """The tenants again: the same names, SLOs, largest requests and curves (equal arrays,
        read-only views into ``rates`` and ``buckets``)."""
        self.rates.flags.writeable = False
        self.buckets.flags.writeable = False
        ends = np.cumsum(self.lengths).tolist()
        starts = [0, *ends[:-1]]
        curves = [
            _curve(self.rates[a:b], self.buckets[a:b], m, stage, name)
            for a, b, m, (stage, name) in zip(
                starts, ends, self.mean.tolist(), self.labels, strict=True
            )
        ]
        width = len(self.stages)
        dicts = [
            dict(zip(self.stages, curves[k : k + width], strict=True))
            for k in range(0, len(curves), width)
        ]
        return [
            TenantCurves(name, self.slos[s], dicts[c], (big[0], big[1]))
            for name, s, c, big in zip(
                self.names,
                self.slo_of.tolist(),
                self.curves_of.tolist(),
                self.largest.tolist(),
                strict=True,
            )
        ]


def _curve(
    rates: NDArray[np.float64],
    buckets: NDArray[np.float64],
    mean_rate: float,
    stage: Stage | None,
    name: str,
) -> RbCurve:
    """An :class:`RbCurve` rebuilt as unpickling rebuilds one, without re-checking its points
    (they were checked when the curve was built in the caller's process)."""
    curve = object.__new__(RbCurve)
    for field_name, value in (
        ("rates", rates),
        ("buckets", buckets),
        ("mean_rate", mean_rate),
        ("stage", stage),
        ("name", name),
    ):
        object.__setattr__(curve, field_name, value)
    return curve


@dataclass(frozen=True)
class _Server:
    """A placed server as a task returns it: tenant indices (into the partition), their
    devices and limits."""

    config: ServerConfig
    tenants: tuple[int, ...]
    devices: tuple[int, ...]
    rate: NDArray[np.float64]
    bucket: NDArray[np.float64]


@dataclass(frozen=True)
class _Part:
    """A partition's placement, as compact as it can travel back."""

    servers: tuple[_Server, ...]
    rejected: tuple[int, ...]
    reasons: dict[int, str]
    calls: int
    screened: int
    certified: int
    seconds: float
    cpu_s: float
    #: CPU seconds of ``cpu_s`` spent unpacking the tenants.
    unpack_s: float


def _place_part(
    options: _Options,
    item: tuple[_Tenants | list[TenantCurves], tuple[ServerConfig, ...]],
) -> _Part:
    """Place one partition (the task run by the runner's workers)."""
    packed, block = item
    cpu = time.process_time()
    workloads = packed.unpack() if isinstance(packed, _Tenants) else packed
    unpack_s = time.process_time() - cpu
    result = place(
        workloads,
        Cluster(options.link_bytes_per_s, block),
        options.policy(),
        fast_first_fit=options.fast_first_fit,
        grow=options.grow,
        window=options.window,
    )
    index = {w.name: i for i, w in enumerate(workloads)}
    servers = tuple(
        _Server(
            s.config,
            tuple(index[p.workload.name] for p in s.tenants),
            tuple(p.device for p in s.tenants),
            s.rate,
            s.bucket,
        )
        for s in result.servers
    )
    part = _Part(
        servers,
        tuple(index[name] for name in result.rejected),
        {index[name]: why for name, why in result.reasons.items()},
        result.configure_calls,
        result.cluster_screened,
        result.certified,
        result.seconds,
        time.process_time() - cpu,
        unpack_s,
    )
    if options.forget:
        forget_tenant_caches()
    return part


def forget_tenant_caches() -> None:
    """Empty tailbound's per-tenant caches: every ``functools.lru_cache`` at module level in
    its loaded modules (the per-tenant caches are all such functions: keep it so).

    These caches of the LP, the screens and the exact check, keyed by a workload or a curve
    (65,536 to 262,144 entries), keep every tenant a worker has placed alive: a worker grew by
    ≈ 12 MB and ≈ 9,500 objects per partition of 500 tenants (measured), toward 1 GB over the
    50,000 tenants each worker places in a 10⁵ run, with a garbage collector walking an ever
    larger heap (the pool's CPU outside placing fell from 16.6 to 3.4 s at 10⁵ with this and
    the packing, benchmarks/README.md). A partition's tenants never come back, so its worker
    forgets them; the values are recomputed when asked again (the same floats)."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("tailbound.") or module is None:
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == name:
                clear()


@dataclass
class PartitionedPlacement:
    """A reconciled partitioned placement and what each step cost."""

    result: PlacementResult
    partitions: int
    #: Each partition's placement time (s), as measured by its worker.
    part_seconds: list[float] = field(default_factory=list)
    #: CPU seconds the partitions took in their workers, summed (independent of the load),
    #: and the part of it spent unpacking their tenants; CPU seconds this process spent
    #: packing them.
    cpu_s: float = 0.0
    unpack_s: float = 0.0
    pack_s: float = 0.0
    #: Wall-clock seconds of the parallel step and of the reconciliation.
    parallel_s: float = 0.0
    reconcile_s: float = 0.0
    #: Servers the tail re-placement saved; tenants refused by a partition placed elsewhere.
    tail_saved: int = 0
    rescued: int = 0


def blocks(servers: Sequence[ServerConfig], partitions: int) -> list[tuple[ServerConfig, ...]]:
    """``servers`` dealt into ``partitions`` contiguous blocks (sizes differing by at most one).

    >>> [len(b) for b in blocks([ServerConfig(f"s{i}", ("d",)) for i in range(5)], 3)]
    [1, 2, 2]
    """
    n = len(servers)
    return [
        tuple(servers[k * n // partitions : (k + 1) * n // partitions]) for k in range(partitions)
    ]


def place_partitioned(
    workloads: Sequence[TenantCurves],
    cluster: Cluster,
    policy: Callable[[], Policy],
    *,
    partitions: int,
    runner: Runner | None = None,
    fast_first_fit: bool = True,
    grow: bool = False,
    tail: int = TAIL,
    window: int | None = None,
) -> PartitionedPlacement:
    """Place ``workloads`` (in arrival order) in ``partitions`` parallel partitions on
    ``runner`` (default: this process) and reconcile them (module docstring).

    ``policy`` builds a fresh policy for each partition and for the reconciliation (a class or a
    :func:`functools.partial`: it is pickled to the workers). Without ``grow`` every partition
    needs at least one server, so ``partitions`` is capped by the cluster's servers.
    ``window`` makes each partition (and the tail re-placement) try only its last ``window``
    servers (:class:`~tailbound.policies.placement.Placer`); the rescue of refused tenants
    still sees the whole merged cluster.
    """
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, got {partitions}")
    if not grow:
        partitions = min(partitions, len(cluster.servers))
    partitions = max(1, min(partitions, len(workloads)))
    start = time.perf_counter()
    template = cluster.servers[-1]
    parts_of = [list(range(k, len(workloads), partitions)) for k in range(partitions)]
    server_blocks = blocks(cluster.servers, partitions)
    if grow:
        server_blocks = [
            b or (ServerConfig(template.name, template.devices),) for b in server_blocks
        ]
    runner = runner if runner is not None else Runner()
    # packed for a trip to other processes (in this one, the tenants themselves)
    travel = runner.distributed or (runner.jobs > 1 and partitions > 1)
    pack_cpu = time.process_time()
    items: list[tuple[_Tenants | list[TenantCurves], tuple[ServerConfig, ...]]] = []
    for members, block in zip(parts_of, server_blocks, strict=True):
        mine = [workloads[i] for i in members]
        items.append(((travel and _Tenants.pack(mine)) or mine, block))
    pack_s = time.process_time() - pack_cpu
    options = _Options(policy, fast_first_fit, grow, cluster.link_bytes_per_s, window, travel)
    parts = runner.map(_place_part, items, shared=options, desc="partitions", unit="partition")
    parallel_s = time.perf_counter() - start

    out = PartitionedPlacement(
        PlacementResult([], [], 0, 0, 0.0), partitions, parallel_s=parallel_s
    )
    out.part_seconds = [p.seconds for p in parts]
    out.cpu_s = sum(p.cpu_s for p in parts)
    out.unpack_s = sum(p.unpack_s for p in parts)
    out.pack_s = pack_s
    configured = {s.name for s in cluster.servers}
    merged: list[ServerState] = []
    ends: list[int] = []  # where each partition's servers end in ``merged``
    refused: list[int] = []  # global indices of the tenants a partition refused
    reasons: dict[int, str] = {}
    calls = screened = certified = 0
    for members, part in zip(parts_of, parts, strict=True):
        for s in part.servers:
            tenants = [
                Placed(workloads[members[t]], d) for t, d in zip(s.tenants, s.devices, strict=True)
            ]
            config = s.config
            if config.name not in configured or any(m.config.name == config.name for m in merged):
                config = ServerConfig(f"server{len(merged):03d}", config.devices)
            merged.append(ServerState(config, tenants, s.rate, s.bucket))
        ends.append(len(merged))
        refused.extend(members[t] for t in part.rejected)
        reasons.update({members[t]: why for t, why in part.reasons.items()})
        calls, screened, certified = (
            calls + part.calls,
            screened + part.screened,
            certified + part.certified,
        )
    reconcile_start = time.perf_counter()
    if grow and tail > 0 and partitions > 1:
        order = {w.name: i for i, w in enumerate(workloads)}
        merged, out.tail_saved, tail_calls = _repack_tails(
            merged, ends, tail, cluster, options, order
        )
        calls += tail_calls
    if grow:
        # a growing partition refuses only a tenant that an empty server refused: so would
        # every server of the merged cluster
        rejected = [workloads[t].name for t in sorted(refused)]
        final_reasons = {workloads[t].name: reasons.get(t, "") for t in sorted(refused)}
    else:
        rejected, final_reasons, rescue_calls = _rescue(
            merged, sorted(refused), workloads, cluster, options
        )
        calls += rescue_calls
    out.rescued = len(refused) - len(rejected)
    out.reconcile_s = time.perf_counter() - reconcile_start
    used = sum(1 for s in merged if s.tenants)
    out.result = PlacementResult(
        merged,
        rejected,
        used,
        calls,
        time.perf_counter() - start,
        screened,
        certified,
        getattr(policy(), "model", REFERENCE),
        final_reasons,
    )
    return out


def _repack_tails(
    merged: list[ServerState],
    ends: list[int],
    tail: int,
    cluster: Cluster,
    options: _Options,
    order: dict[str, int],
) -> tuple[list[ServerState], int, int]:
    """Re-place the tenants of each partition's last ``tail`` servers together on fresh servers,
    in arrival order (``order``: name → position); the new servers replace the old ones when
    they are fewer. Returns the servers, how many were saved and the configure calls spent."""
    picked: list[int] = []
    begin = 0
    for end in ends:
        used = [i for i in range(begin, end) if merged[i].tenants]
        picked.extend(used[-tail:])
        begin = end
    tenants = sorted(
        (p for i in picked for p in merged[i].tenants),
        key=lambda p: order[p.workload.name],
    )
    if not tenants:
        return merged, 0, 0
    template = cluster.servers[-1]
    result = place(
        [p.workload for p in tenants],
        Cluster(options.link_bytes_per_s, (ServerConfig(template.name, template.devices),)),
        options.policy(),
        fast_first_fit=options.fast_first_fit,
        grow=True,
        window=options.window,
    )
    fresh = [s for s in result.servers if s.tenants]
    if result.rejected or len(fresh) >= len(picked):
        return merged, 0, result.configure_calls
    drop = set(picked)
    kept = [s for i, s in enumerate(merged) if i not in drop]
    for s in fresh:
        kept.append(ServerState(ServerConfig("", s.config.devices), s.tenants, s.rate, s.bucket))
    renamed = [
        ServerState(ServerConfig(f"server{i:03d}", s.config.devices), s.tenants, s.rate, s.bucket)
        if not s.config.name or s.config.name.startswith("server")
        else s
        for i, s in enumerate(kept)
    ]
    return renamed, len(picked) - len(fresh), result.configure_calls


def _rescue(
    merged: list[ServerState],
    refused: list[int],
    workloads: Sequence[TenantCurves],
    cluster: Cluster,
    options: _Options,
) -> tuple[list[str], dict[str, str], int]:
    """Offer each tenant its partition refused to the whole merged cluster, in arrival order;
    the still-refused tenants' names, their reasons, and the configure calls spent."""
    if not refused:
        return [], {}, 0
    placer = Placer(
        Cluster(options.link_bytes_per_s, tuple(s.config for s in merged)),
        options.policy(),
        fast_first_fit=options.fast_first_fit,
        grow=False,
    )
    for i, s in enumerate(merged):
        if s.tenants:
            placer.load(i, s.tenants, s.rate, s.bucket)
    for t in refused:
        placer.add(workloads[t])
    for i, s in enumerate(placer.servers):
        merged[i] = s
    return list(placer.rejected), dict(placer.reasons), placer.calls
