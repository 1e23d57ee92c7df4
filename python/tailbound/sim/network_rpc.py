"""RPCs over a packet-level datacenter network with WFQ classes: the network Aequitas runs on.

A thin face of the Rust core's ``tailbound_core::netsim`` (``_core.simulate_network_rpcs``):
one big switch joining ``n_hosts`` hosts, WFQ over classes at every port with a shared
drop-tail buffer, a Swift-like congestion window per (source, destination, class) channel,
ACKs in the RPC's class, go-back-N after a retransmission timeout, one FIFO of RPCs per
channel, and Aequitas' admission control called in-process at each RPC's issue and last ACK
(Zhang et al., "Aequitas: Admission Control for Performance-Critical RPCs in Datacenters",
SIGCOMM 2022, §5–6). The defaults are the authors' simulator's (SymbioticLab/Aequitas,
``artifact-eval``): 100 Gb/s links, 0.2 µs a link, MTU 5120 B with a 40 B header, window
2 → 1–30 packets, delay target 10 µs, RTO 450 µs; ``docs/aequitas.md`` has the model.

Times in seconds, sizes in bytes, RNL (RPC network latency) from the RPC's issue (its wait in
its channel's FIFO included) to the ACK of its last packet.

>>> import numpy as np
>>> from tailbound.traces.rpc_arrivals import RpcArrivals
>>> one = RpcArrivals(np.array([0.0]), np.array([0], np.int32), np.array([1], np.int32),
...                   np.array([1000], np.int64), np.array([0], np.uint8), 2, 1e-3)
>>> run = simulate_rpcs(one, NetworkConfig(n_hosts=2, weights=(4.0, 1.0)))
>>> round(float(run.rnl_s[0]) * 1e6, 4)  # 4 × 0.2 µs + 2 × 1040 B + 2 × 40 B at 100 Gb/s
0.9728
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np
from numpy.typing import NDArray

from tailbound import _core
from tailbound.errors import ConfigError
from tailbound.traces.rpc_arrivals import RpcArrivals

#: The authors' shared buffer per port in their 33-host runs, bytes (1 MiB in the 3-host runs).
DEFAULT_BUFFER_BYTES = 512 * 1024


@dataclass(frozen=True)
class CongestionWindow:
    """A channel's Swift-like delay-based window (the authors' ``coresim/channel.cpp``).

    Per new ACK of a packet sent ``delay`` s ago: below ``target_delay_s`` the window grows by
    ``ai / ⌊cwnd⌋``; otherwise, at most once per round trip, it shrinks by the factor
    ``max(1 − beta · (delay − target) / delay, 1 − max_mdf)``; within ``[min_cwnd, max_cwnd]``
    packets. A timeout halves it (``max_mdf``), the ``rto_reset_after``-th in a row resets it.
    ``enabled=False`` keeps ``max_cwnd`` (the authors' ``disable_aequitas_cc``).
    ``loss_based=True`` is pFabric's TCP-like rate control instead of the delay rule: slow
    start (+1 an ACK) to a threshold, then ``+ai/⌊cwnd⌋``; a timeout sets the threshold to
    half the window (≥ 2) and the window to ``min_cwnd``.
    """

    enabled: bool = True
    init_cwnd: float = 2.0
    min_cwnd: float = 1.0
    max_cwnd: float = 30.0
    target_delay_s: float = 10e-6
    ai: float = 1.0
    beta: float = 0.8
    max_mdf: float = 0.5
    rto_s: float = 450e-6
    rto_reset_after: int = 5
    loss_based: bool = False


@dataclass(frozen=True)
class NetworkAdmission:
    """Aequitas' admission control (``_core.AequitasAdmission``'s fields, docs/aequitas.md).

    ``latency_target_s`` has one target per class above the lowest, seconds per MTU (per RPC
    when ``per_mtu`` is false, as the authors' configurations with ``normalized_lat: 0``).
    """

    latency_target_s: tuple[float, ...]
    target_percentile: tuple[float, ...] | None = None
    increment_window_s: tuple[float, ...] | None = None
    alpha: float = 0.01
    beta: float = 0.01
    floor: float = 0.1
    per_mtu: bool = True
    rules: str = "paper"


#: The port kinds of ``NetworkConfig.scheduling`` (``docs/aequitas.md``, "Port kinds").
SCHEDULING_KINDS = ("wfq", "strict_priority", "pfabric", "qjump")
#: The authors' pFabric priority thresholds, bytes (``PFabricFlow::priority_thresholds``,
#: ``ext/pfabric_flow.cpp`` of the artifact, used with ``pfabric_limited_priority: 1``): eight
#: levels, level ``i`` for an RPC with at most ``thresholds[i]`` bytes not yet acknowledged.
PFABRIC_ARTIFACT_THRESHOLDS = (4096, 8192, 16384, 32768, 65536, 131072, 262144)


@dataclass(frozen=True)
class QjumpLevels:
    """QJump's levels (Grosvenor et al., NSDI 2015): each host sends class ``c``'s packets at
    most one per epoch ``2 · (n_hosts / f_c) · MSS · 8 / link_rate + processing_delay_s``,
    ``f_c = throughput_factors[c]`` (the authors' artifact: ``(32, 16, 1)`` and 1 µs)."""

    throughput_factors: tuple[float, ...]
    processing_delay_s: float = 1e-6


@dataclass(frozen=True)
class NetworkConfig:
    """A one-big-switch network of ``n_hosts`` hosts with WFQ ``weights`` (class 0 highest).

    ``buffer_bytes`` is each switch port's (and receiving queue's) shared drop-tail buffer;
    ``host_egress`` adds a WFQ port of the link rate at each sender (the authors' simulator has
    none); ``receiver_queue`` passes packets through the receiving host's queue after the switch
    port (the authors' simulator does). ``admission=None`` runs every RPC at its class.
    ``scheduling`` is the port kind (:data:`SCHEDULING_KINDS`): ``"wfq"`` (the default, with
    ``weights``), ``"strict_priority"`` (class 0 first, drop-tail), ``"pfabric"`` (the packet
    of the RPC with the fewest bytes left first, ACKs first, the most left dropped on
    overflow; run it with ``cc=CongestionWindow(init_cwnd=30, loss_based=True)`` for
    pFabric's line-rate start and minimal rate control) or ``"qjump"`` (strict priority
    pushing out the lowest class, and ``qjump``'s per-host pacing of each class in place of
    the window); ``weights`` still count the classes for every kind.
    ``channels_per_class`` parallel channels (sub-queues, each with its own window and timer)
    per (source, destination, class): an RPC is issued on an idle one, else on the one with
    the fewest unacknowledged packets; 1 (the default) is the authors' one channel and RPC
    FIFO per triple, a number above the RPCs a triple has in progress gives each RPC its own
    flow (pFabric's hosts, :data:`~tailbound.experiments.aequitas_baselines.PFABRIC_FLOWS`).
    ``pfabric_priority_thresholds`` (bytes, ascending; ``"pfabric"`` only): pFabric with a
    limited number of priority levels, a packet stamped with the index of the first threshold
    at or above its RPC's remaining bytes (:data:`PFABRIC_ARTIFACT_THRESHOLDS`: the
    artifact's eight); empty (the default): the exact remaining bytes.
    """

    n_hosts: int
    weights: tuple[float, ...]
    link_rate_bps: float = 100e9
    propagation_s: float = 0.2e-6
    mtu_bytes: int = 5120
    header_bytes: int = 40
    buffer_bytes: int = DEFAULT_BUFFER_BYTES
    host_egress: bool = False
    receiver_queue: bool = True
    cc: CongestionWindow = field(default_factory=CongestionWindow)
    admission: NetworkAdmission | None = None
    seed: int = 0
    scheduling: str = "wfq"
    qjump: QjumpLevels | None = None
    channels_per_class: int = 1
    pfabric_priority_thresholds: tuple[int, ...] = ()

    def to_json(self) -> str:
        """The core's ``NetConfig`` JSON."""
        doc = asdict(self)
        if self.admission is not None:
            doc["admission"] = {k: v for k, v in doc["admission"].items() if v is not None}
        return json.dumps(doc)


@dataclass(frozen=True)
class NetworkRun:
    """The outcome of :func:`simulate_rpcs`: per RPC (in the order of ``rpcs``) and counters.

    ``class_run`` the class each RPC ran at, ``downgraded`` whether admission control moved it
    to the lowest class, ``p_admit`` its channel's admit probability at issue, ``finish_s`` the
    ACK of its last packet (NaN: unfinished), ``rnl_s`` its RNL, ``size_mtus`` ``⌈size / MSS⌉``.
    ``counters``: ``events``, ``data_packets``, ``retransmitted``, ``acks``, ``data_drops``,
    ``ack_drops``, ``timeouts``, ``downgrades``, ``unfinished``, ``end_s``; ``drops`` per class.
    """

    rpcs: RpcArrivals
    class_run: NDArray[np.uint8]
    downgraded: NDArray[np.bool_]
    p_admit: NDArray[np.float64]
    finish_s: NDArray[np.float64]
    rnl_s: NDArray[np.float64]
    size_mtus: NDArray[np.uint32]
    drops: NDArray[np.uint64]
    counters: dict[str, float]

    def rnl_tail(
        self, cls: int, p: float = 0.999, *, keep: float = 0.8, per_mtu: bool = False
    ) -> float:
        """The ``p``-percentile RNL (s; s per MTU with ``per_mtu``) of the RPCs that ran at
        ``cls``, over the middle ``keep`` of them by issue time (the authors' middle 80%);
        NaN when none ran there. Unfinished RPCs count as infinitely late."""
        m = self.class_run == cls
        values = np.where(np.isnan(self.rnl_s[m]), np.inf, self.rnl_s[m])
        if per_mtu:
            values = values / self.size_mtus[m]
        return float(_core.rnl_tail(self.rpcs.time_s[m], values, p, keep))

    def admitted_share(self, cls: int) -> float:
        """Of the RPCs that requested ``cls``, the fraction that ran at it (NaN: none asked)."""
        asked = self.rpcs.cls == cls
        n = int(asked.sum())
        return float((self.class_run[asked] == cls).sum() / n) if n else math.nan

    def run_share(self, cls: int) -> float:
        """The fraction of all RPCs that ran at ``cls``."""
        return float((self.class_run == cls).mean()) if len(self.rpcs) else math.nan


def simulate_rpcs(
    rpcs: RpcArrivals, config: NetworkConfig, *, until_s: float = math.inf
) -> NetworkRun:
    """Run ``rpcs`` on the network ``config`` until every RPC is acknowledged (or ``until_s``).

    Raises :class:`~tailbound.errors.ConfigError` naming the field of a bad configuration
    (``weights[1]``, ``cc.max_cwnd``, ``admission.latency_target_s``) or RPC (``dst[7]``).
    """
    try:
        out = _core.simulate_network_rpcs(
            config.to_json(),
            np.ascontiguousarray(rpcs.time_s, dtype=np.float64),
            np.ascontiguousarray(rpcs.src, dtype=np.int64),
            np.ascontiguousarray(rpcs.dst, dtype=np.int64),
            np.ascontiguousarray(rpcs.size_bytes, dtype=np.int64),
            np.ascontiguousarray(rpcs.cls, dtype=np.uint8),
            until_s,
        )
    except _core.FieldError as e:
        name, message = e.args
        raise ConfigError(None, message, field=name) from None
    arrays = ("class_run", "downgraded", "p_admit", "finish_s", "rnl_s", "size_mtus", "drops")
    counters = {k: float(np.asarray(v)) for k, v in out.items() if k not in arrays}
    return NetworkRun(
        rpcs=rpcs,
        class_run=np.asarray(out["class_run"], dtype=np.uint8),
        downgraded=np.asarray(out["downgraded"], dtype=np.bool_),
        p_admit=np.asarray(out["p_admit"], dtype=np.float64),
        finish_s=np.asarray(out["finish_s"], dtype=np.float64),
        rnl_s=np.asarray(out["rnl_s"], dtype=np.float64),
        size_mtus=np.asarray(out["size_mtus"], dtype=np.uint32),
        drops=np.asarray(out["drops"], dtype=np.uint64),
        counters=counters,
    )
