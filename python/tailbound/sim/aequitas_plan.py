"""An Aequitas plan replayed in the packet-level network simulator: the one translation of a
plan's ``aequitas`` section into RPCs and a network (``docs/aequitas.md``, "How a user states
it").

The simulator is :mod:`tailbound.sim.network_rpc` (``tailbound_core::netsim``): one big switch
of the plan's hosts, WFQ with the classes' weights at every port, the controller of the plan
(``control::aequitas``, the same code a live client runs) in-process at every sender. This
module turns a plan and its tenants' traces into its input:

- :func:`read_rpc_trace`: a tenant's trace as RPCs in bytes (an Azure LLM trace's token counts
  times ``bytes_per_token``; any other format's sizes are bytes);
- :func:`tenant_rpcs`: every tenant's RPCs on the network. Tenant ``k`` (in the order given)
  starts at time 0 (its trace's first request); with ``load`` its times are scaled by one
  factor so that its mean load per destination of its pattern over the trace is ``load`` of a
  link (the order and relative gaps kept); each RPC gets a destination of the pattern and one
  of its senders uniformly and a class from the class mix, from the generator seeded with
  ``(network.seed, k)``. Deterministic;
- :func:`network_config`: the simulator's configuration (hosts, weights, link, buffer, MTU,
  seed, and the controller by :meth:`~tailbound.plan_aequitas.AequitasPlan.admission_config`);
- :func:`replay_aequitas`: the plan replayed, an :class:`AequitasReplay`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from tailbound.errors import ConfigError
from tailbound.plan import Plan
from tailbound.plan_aequitas import AequitasPlan
from tailbound.rpc_network import RpcNetwork, RpcTraffic
from tailbound.sim.network_rpc import NetworkAdmission, NetworkConfig, NetworkRun, simulate_rpcs
from tailbound.traces.readers import read_trace
from tailbound.traces.rpc_arrivals import Pattern, RpcArrivals, all_to_all, incast
from tailbound.traces.trace import Trace


def read_rpc_trace(path: str | Path, fmt: str | None, traffic: RpcTraffic) -> Trace:
    """The trace at ``path`` (format ``fmt``; detected when ``None``) with sizes in bytes: an
    Azure LLM trace's ``traffic.tokens`` count times ``traffic.bytes_per_token`` (at least 1
    byte), any other trace as read."""
    from tailbound.traces.detect import detect_format
    from tailbound.traces.native import read_azure_llm

    name = fmt if fmt is not None else detect_format(Path(path))
    if name != "azure-llm":
        return read_trace(path, name)
    t = read_azure_llm(Path(path), size=traffic.tokens)  # type: ignore[arg-type]
    size = np.maximum(t.size * traffic.bytes_per_token, 1)
    return Trace(
        time=t.time, op=t.op, size=size, origin_s=t.origin_s, duration_s=t.duration_s, name=t.name
    )


def pattern_of(traffic: RpcTraffic, network: RpcNetwork) -> Pattern:
    """Who sends to whom for ``traffic`` on ``network``'s hosts."""
    if traffic.pattern == "incast":
        assert traffic.destination is not None
        return incast(network.hosts, dst=traffic.destination)
    return all_to_all(network.hosts)


@dataclass(frozen=True)
class TenantRpcs:
    """The RPCs of several tenants on one network: ``rpcs`` sorted by issue time and
    ``tenant[j]`` the index in ``names`` of RPC ``j``'s tenant."""

    rpcs: RpcArrivals
    tenant: NDArray[np.int32]
    names: tuple[str, ...]


def tenant_rpcs(
    network: RpcNetwork,
    traffic: Mapping[str, RpcTraffic],
    traces: Mapping[str, Trace],
    *,
    first: int = 0,
) -> TenantRpcs:
    """Every tenant's RPCs (module documentation), tenants in the order of ``traffic``;
    ``traces[name]`` sizes in bytes (:func:`read_rpc_trace`). ``first``: the place of the first
    of them in the plan's order (their generators are seeded with ``(seed, first + k)``: a
    tenant's RPCs are the same drawn alone at its place as among all)."""
    names = tuple(traffic)
    parts = []
    for k0, name in enumerate(names):
        k = first + k0
        t, trace = traffic[name], traces[name]
        if len(trace) == 0:
            raise ConfigError(None, f"tenant {name}: the trace has no requests", field="trace")
        pattern = pattern_of(t, network)
        time = np.asarray(trace.time, dtype=np.float64) - float(trace.time[0])
        size = np.asarray(trace.size, dtype=np.int64)
        if np.any(size <= 0):
            raise ConfigError(None, f"tenant {name}: an RPC of 0 bytes", field="trace")
        if t.onoff is not None:
            g = onoff_rpcs(network, t, name, float(time[-1]), size, pattern, [network.seed, k])
            src_g, dst_g = g.src.astype(np.int64), g.dst.astype(np.int64)
            parts.append((g.time_s, src_g, dst_g, g.size_bytes, g.cls, np.full(len(g), k0)))
            continue
        span = float(time[-1])
        if t.load is not None:
            if not span > 0:
                raise ConfigError(
                    None,
                    f"tenant {name}: the trace spans no time, cannot scale it to a load",
                    field="rpc.load",
                )
            natural = 8.0 * float(size.sum()) / (network.link_rate_bps * span * len(pattern.dests))
            time = time * (natural / t.load)
        rng = np.random.default_rng([network.seed, k])
        d = rng.integers(0, len(pattern.dests), size=time.size)
        counts = np.array([len(s) for s in pattern.senders], dtype=np.int64)
        table = np.full((len(pattern.dests), int(counts.max())), -1, dtype=np.int64)
        for i, s in enumerate(pattern.senders):
            table[i, : len(s)] = s
        src = table[d, np.floor(rng.random(time.size) * counts[d]).astype(np.int64)]
        dst = np.asarray(pattern.dests, dtype=np.int64)[d]
        edges = np.cumsum(t.mix(network))
        edges[-1] = 1.0
        cls = np.searchsorted(edges, rng.random(time.size), side="right").astype(np.uint8)
        parts.append((time, src, dst, size, cls, np.full(time.size, k0, dtype=np.int32)))
    time, src, dst, size, cls, tenant = (np.concatenate(c) for c in zip(*parts, strict=True))
    if time.size == 0:
        raise ConfigError(None, "the tenants' arrivals hold no RPC", field="rpc.onoff")
    order = np.argsort(time, kind="stable")
    end = float(time.max())
    rpcs = RpcArrivals(
        time_s=np.ascontiguousarray(time[order]),
        src=src[order].astype(np.int32),
        dst=dst[order].astype(np.int32),
        size_bytes=size[order].astype(np.int64),
        cls=cls[order].astype(np.uint8),
        n_hosts=network.hosts,
        duration_s=float(np.nextafter(end, np.inf)) if end > 0 else 1e-9,
    )
    return TenantRpcs(rpcs, tenant[order].astype(np.int32), names)


def onoff_rpcs(
    network: RpcNetwork,
    traffic: RpcTraffic,
    name: str,
    span_s: float,
    size_bytes: NDArray[np.int64],
    pattern: Pattern,
    seed: Sequence[int],
) -> RpcArrivals:
    """A tenant's RPCs generated by its ``rpc.onoff`` process (:class:`~tailbound.rpc_network.
    OnOff`): ``OnOffRpcs`` or ``PairOnOffRpcs`` over ``pattern`` at the network's link rate,
    sizes drawn from ``size_bytes`` (its trace's), classes from its mix, for ``duration_s`` or
    the trace's ``span_s``, seeded with ``seed``. A :class:`ConfigError` naming ``rpc.onoff``'s
    field when the process cannot run (no duration; a generated run without RPCs)."""
    from tailbound.traces.rpc_arrivals import OnOffRpcs, PairOnOffRpcs
    from tailbound.traces.sizes import EmpiricalSizes

    o = traffic.onoff
    assert o is not None
    mu = traffic.mean_load
    assert mu is not None
    values, counts = np.unique(size_bytes, return_counts=True)
    sizes = EmpiricalSizes(values, counts.astype(np.float64))
    burst = o.burst_rpcs
    if burst is None:
        assert o.burst_bytes is not None
        burst = max(1, round(o.burst_bytes / sizes.mean_bytes))
    duration = o.duration_s if o.duration_s is not None else span_s
    if not duration > 0:
        raise ConfigError(
            None,
            f"tenant {name}: the trace spans no time; give the arrivals' duration_s",
            field="rpc.onoff.duration_s",
        )
    mix = traffic.mix(network)
    common = {"sizes": sizes, "class_mix": mix, "rpcs_per_burst": burst,
              "link_rate_bps": network.link_rate_bps}  # fmt: skip
    gen: OnOffRpcs | PairOnOffRpcs
    if o.process == "pair":
        gen = PairOnOffRpcs(o.burst_load, mu, poisson=o.poisson, **common)  # type: ignore[arg-type]
    else:
        gen = OnOffRpcs(o.burst_load, mu, bursts_per_on=o.bursts_per_on, **common)  # type: ignore[arg-type]
    state = int(np.random.default_rng(list(seed)).integers(0, 2**63 - 1))
    return gen.generate(pattern, duration, seed=state)


def network_config(section: AequitasPlan) -> NetworkConfig:
    """The simulator's network for ``section`` (module documentation)."""
    n = section.network
    a = section.admission_config()
    admission = NetworkAdmission(
        latency_target_s=tuple(a["latency_target_s"]),
        target_percentile=tuple(a["target_percentile"]),
        increment_window_s=(
            None if "increment_window_s" not in a else tuple(a["increment_window_s"])
        ),
        alpha=a["alpha"],
        beta=a["beta"],
        floor=a["floor"],
        per_mtu=a["per_mtu"],
        rules=a["rules"],
    )
    return NetworkConfig(
        n_hosts=n.hosts,
        weights=tuple(c.weight for c in n.classes),
        link_rate_bps=n.link_rate_bps,
        propagation_s=n.propagation_s,
        mtu_bytes=n.mtu_bytes,
        header_bytes=n.header_bytes,
        buffer_bytes=n.buffer_bytes,
        admission=admission,
        seed=n.seed,
    )


@dataclass(frozen=True)
class AequitasReplay:
    """A replayed Aequitas plan: the simulator's ``run`` over ``rpcs`` (with each RPC's tenant)."""

    plan: Plan
    rpcs: TenantRpcs
    run: NetworkRun


def replay_aequitas(
    plan: Plan, traces: Mapping[str, Trace], tenants: Sequence[str] | None = None
) -> AequitasReplay:
    """Replay ``plan``'s RPC tenants (``tenants``, default every tenant of its ``aequitas``
    section) with ``traces`` (bytes, :func:`read_rpc_trace`) in the network simulator."""
    section = plan.aequitas
    if section is None:
        raise ConfigError(
            None, f"missing (a plan of {plan.policy!r} has no Aequitas section)", field="aequitas"
        )
    names = list(section.tenants if tenants is None else tenants)
    rpcs = tenant_rpcs(section.network, {n: section.tenants[n] for n in names}, traces)
    return AequitasReplay(plan, rpcs, simulate_rpcs(rpcs.rpcs, network_config(section)))
