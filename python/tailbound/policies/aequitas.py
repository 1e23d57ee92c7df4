"""The ``aequitas`` policy: RPC classes over WFQ with admission by downgrading, written as a
Plan (Zhang et al., *Aequitas: Admission Control for Performance-Critical RPCs in Datacenters*,
SIGCOMM 2022; issue 24, ``docs/aequitas.md``, "How a user states it").

Aequitas decides admission **per RPC at run time**: a controller at each sender admits an RPC at
its requested class with probability ``p_admit`` (AIMD on the measured RNL) and otherwise
downgrades it to the lowest class; no tenant is ever rejected. The policy therefore admits every
RPC tenant and writes a Plan that makes the classes and the controller run wherever it is
enforced or replayed:

- the network stages are ``wfq`` with the classes' weights (:class:`~tailbound.plan.Discipline`,
  ``class_weight``), and the plan's ``aequitas`` section
  (:class:`~tailbound.plan_aequitas.AequitasPlan`) holds the classes (name, weight, SLO and its
  unit, percentile, DSCP), the controller by the core's names and each tenant's class mix and
  traffic, every default written out;
- the **prediction** (the analogue of a bound, :class:`~tailbound.plan_aequitas.Prediction`) is
  the guaranteed admitted share per class from the closed forms (§4.2, §6.4;
  :func:`tailbound.dnc.wfq_delay.guaranteed_admitted_share`), computed for the busiest link of
  the RPCs the plan replays (:func:`tailbound.sim.aequitas_plan.tenant_rpcs`): its mean load
  ``μ`` (clipped to 1) and burst ``ρ`` (the file's ``burst_load``, or the largest load of any
  window of ``burst_window_s`` at that link — by default the highest class's SLO as a time —,
  at least 1, and at least ``μ``), the class's share
  ``x_i`` of its bytes; the class is guaranteed ``φ_i/Σφ · μ/ρ`` of the link, so at least
  ``min(1, φ_i/Σφ / (ρ · x_i))`` of its RPCs can run at the class with the SLO kept. It is a
  steady-state share with probability in the paper's model, not a worst case: ``verify``
  compares the admitted share of a replay with it (and the 99.9p RNL with the class SLO);
- each tenant's ``bound`` is the SLO of the highest class it asks for (``analysis`` ``aequitas``):
  a promise the replay checks, not a proof.

What an Aequitas tenants file must give, refused otherwise naming the field (exit status 2 from
the CLI): the file's ``rpc_network`` (two or more classes, each with a weight > 0, every class
above the lowest an SLO > 0) and every tenant's ``rpc`` (a class mix of known classes, each share
in (0, 1], summing to 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.dnc.wfq_delay import guaranteed_admitted_share
from tailbound.errors import ConfigError
from tailbound.model import TenantSet
from tailbound.plan import Bound, Discipline, Plan, TenantPlan
from tailbound.plan_aequitas import AequitasPlan, Prediction
from tailbound.rpc_network import RpcNetwork, RpcTraffic
from tailbound.sim.aequitas_plan import TenantRpcs, read_rpc_trace, tenant_rpcs
from tailbound.stages import NETWORK_PATH, Stage
from tailbound.traces.trace import Trace

NAME = "aequitas"


def check_tenants(tset: TenantSet) -> RpcNetwork:
    """The file's network, every tenant an RPC tenant (module documentation), else a
    :class:`ConfigError` naming the field."""
    if tset.rpc_network is None:
        raise ConfigError(
            tset.path,
            f"missing ({NAME} needs the network its RPC tenants share)",
            field="rpc_network",
        )
    for i, t in enumerate(tset.tenants):
        if t.rpc is None:
            raise ConfigError(
                tset.path,
                f"missing ({NAME} needs every tenant's RPC classes)",
                field=f"tenants[{i}].rpc",
            )
    return tset.rpc_network


@dataclass(frozen=True)
class LinkLoad:
    """One destination link's part of the prediction (:func:`predict`): its burst ``rho`` and
    mean load ``mu`` (fractions of the link), and per class above the lowest its share ``x`` of
    the link's bytes and the share of its RPCs guaranteed admission (``None`` where ``x = 0``)."""

    rho: float
    mu: float
    x: tuple[float, ...]
    share: tuple[float | None, ...]


def burst_window(network: RpcNetwork, size_bytes: NDArray[np.int64] | None) -> float:
    """The window ``ρ`` is measured over (s): ``burst_window_s``, else the highest class's SLO
    as a time — per RPC, or per MTU times the mean size in MTUs of ``size_bytes`` (every RPC
    of the plan)."""
    if network.burst_window_s is not None:
        return network.burst_window_s
    top = network.classes[0]
    assert top.slo_s is not None
    if top.slo_unit != "mtu":
        return top.slo_s
    assert size_bytes is not None
    mtus = np.ceil(size_bytes / (network.mtu_bytes - network.header_bytes))
    return top.slo_s * float(mtus.mean())


def fixed_window(network: RpcNetwork) -> float | None:
    """The window when it depends on no RPC (given, or an SLO per RPC); ``None`` otherwise."""
    if network.burst_window_s is not None or network.classes[0].slo_unit != "mtu":
        return burst_window(network, None)
    return None


def link_load(
    network: RpcNetwork,
    window: float,
    time: NDArray[np.float64],
    size: NDArray[np.int64],
    cls: NDArray[np.uint8],
) -> LinkLoad | None:
    """The :class:`LinkLoad` of the RPCs reaching one link (any order: ``time``, ``size`` and
    requested class ``cls`` of each), over their span; ``None`` when they span no time."""
    t0, t1 = float(time.min()), float(time.max())
    span = t1 - t0
    if not span > 0:
        return None
    total = float(size.sum())
    mu = min(1.0, 8.0 * total / (network.link_rate_bps * span))
    if network.burst_load is not None:
        rho = network.burst_load
    else:
        slot = np.floor((time - t0) / window).astype(np.int64)
        peak = float(np.bincount(slot, weights=size).max())
        rho = 8.0 * peak / (network.link_rate_bps * window)
    rho = max(1.0, rho, mu)
    guaranteed = guaranteed_admitted_share([c.weight for c in network.classes], rho, mu)
    xs, shares = [], []
    for i in range(len(network.classes) - 1):
        x = float(size[cls == i].sum()) / total
        xs.append(x)
        shares.append(None if x == 0 else min(1.0, float(guaranteed[i]) / (x * mu)))
    return LinkLoad(float(rho), float(mu), tuple(xs), tuple(shares))


def combine(network: RpcNetwork, links: Mapping[int, LinkLoad | None]) -> Prediction:
    """The prediction of the links (by destination host, taken in increasing order): a class's
    share its smallest over the links, its offered share its largest, ``burst_load`` and
    ``load`` those of the link deciding the highest class's share (the first of equal ones)."""
    controlled = network.classes[:-1]
    admitted = dict.fromkeys((c.name for c in controlled), 1.0)
    offered = dict.fromkeys((c.name for c in controlled), 0.0)
    deciding: tuple[float, float] | None = None
    for d in sorted(links):
        link = links[d]
        if link is None:
            continue
        for i, c in enumerate(controlled):
            share = link.share[i]
            if share is None:
                continue
            if link.x[i] > offered[c.name]:
                offered[c.name] = link.x[i]
            if share < admitted[c.name] or (i == 0 and deciding is None):
                admitted[c.name] = share
                if i == 0:
                    deciding = (link.rho, link.mu)
    rho, mu = deciding if deciding is not None else (1.0, 1.0)
    return Prediction(float(rho), float(mu), admitted, offered)


def predict(network: RpcNetwork, rpcs: TenantRpcs) -> Prediction:
    """The guaranteed admitted share per class (module documentation) for ``rpcs`` on
    ``network``: at every destination link, over the span of the RPCs reaching it, its load
    ``μ``, burst ``ρ`` and each class's share ``x_i`` of its bytes give ``min(1, φ_i/Σφ · μ/ρ /
    (x_i · μ))`` (:func:`link_load`); a class's prediction is its smallest over the links (the
    most loaded for it), and ``burst_load`` and ``load`` are those of the link deciding the
    highest class's (:func:`combine`)."""
    r = rpcs.rpcs
    window = burst_window(network, r.size_bytes)
    links = {}
    for d in np.unique(r.dst):
        at = r.dst == d
        links[int(d)] = link_load(network, window, r.time_s[at], r.size_bytes[at], r.cls[at])
    return combine(network, links)


@dataclass(frozen=True)
class LinkPredictor:
    """The prediction kept per destination link, so that an arrival re-reads only the links
    the newcomer's RPCs reach (the service's decisions, docs/service.md): each admitted
    tenant's RPCs (``tenant_rpcs``' for its place in the arrival order, drawn once) split by
    destination, and each link's :class:`LinkLoad`. When the window ``ρ`` is measured over
    depends on every RPC (per-MTU SLOs without ``burst_window_s``: the mean RPC size) every link
    is re-read. :meth:`prediction` equals :func:`predict` of the same tenants, exactly (the
    sums are of integers; tested)."""

    network: RpcNetwork
    tenants: tuple[tuple[str, Mapping[int, tuple[Any, Any, Any]]], ...] = ()
    links: Mapping[int, LinkLoad | None] = field(default_factory=dict)

    def add(self, name: str, traffic: RpcTraffic, trace: Trace) -> LinkPredictor:
        """The predictor with tenant ``name`` arrived last (its trace's sizes in bytes)."""
        mine = tenant_rpcs(self.network, {name: traffic}, {name: trace}, first=len(self.tenants))
        r = mine.rpcs
        parts = {
            int(d): (r.time_s[r.dst == d], r.size_bytes[r.dst == d], r.cls[r.dst == d])
            for d in np.unique(r.dst)
        }
        return LinkPredictor(self.network, (*self.tenants, (name, parts)), self.links)._relink(
            set(parts)
        )

    def without(
        self, name: str, source: Callable[[str], tuple[RpcTraffic, Trace]]
    ) -> LinkPredictor:
        """The predictor with tenant ``name`` departed: the tenants before it keep their RPCs
        (their places are unchanged), those after it move up one place and draw theirs again
        (``source(name)``: a tenant's traffic and trace), and every link is re-read."""
        at = [n for n, _ in self.tenants].index(name)
        out = LinkPredictor(self.network, self.tenants[:at], {})._relink(None)
        for later, _ in self.tenants[at + 1 :]:
            out = out.add(later, *source(later))
        return out

    def _relink(self, touched: set[int] | None) -> LinkPredictor:
        """The links ``touched`` (``None``: all) re-read from the tenants' RPCs."""
        window = fixed_window(self.network)
        every = {d for _, ps in self.tenants for d in ps}
        if window is None:  # the window is the mean RPC size's: every link moves
            sizes = [p[1] for _, ps in self.tenants for p in ps.values()]
            window = burst_window(self.network, np.concatenate(sizes)) if sizes else 0.0
            touched = None
        links = {} if touched is None else dict(self.links)
        for d in every if touched is None else touched:
            at = [ps[d] for _, ps in self.tenants if d in ps]
            time, size, cls = (np.concatenate(column) for column in zip(*at, strict=True))
            links[d] = link_load(self.network, window, time, size, cls)
        return LinkPredictor(self.network, self.tenants, links)

    def prediction(self) -> Prediction:
        """The admitted tenants' prediction (:func:`combine` of the links)."""
        return combine(self.network, self.links)


class AequitasPolicy:
    """Aequitas (module documentation) over the RPC tenants of ``tset``."""

    analysis = NAME

    def __init__(self, tset: TenantSet) -> None:
        self.tset = tset

    def plan(
        self, meta: dict[str, Any] | None = None, *, prediction: Prediction | None = None
    ) -> Plan:
        """Every tenant admitted, the classes, controller and prediction written
        (:func:`check_tenants` first); ``prediction`` when it is known already (a
        :class:`LinkPredictor`'s), else :func:`predict` of every tenant's trace."""
        network = check_tenants(self.tset)
        traffic = {t.name: t.rpc for t in self.tset.tenants if t.rpc is not None}
        if prediction is None:
            traces = {
                t.name: read_rpc_trace(t.trace, None, traffic[t.name]) for t in self.tset.tenants
            }
            prediction = predict(network, tenant_rpcs(network, traffic, traces))
        tenants = []
        for t in self.tset.tenants:
            assert t.rpc is not None
            promised = any(
                c.slo_s is not None and t.rpc.class_mix.get(c.name, 0.0) > 0
                for c in network.classes
            )
            slo = t.slo if promised else None
            tenants.append(
                TenantPlan(
                    t.name,
                    slo,
                    t.server or "",
                    None,
                    dict.fromkeys(NETWORK_PATH, None),
                    {},
                    Bound(
                        slo.latency_s if slo is not None else float("inf"),
                        NAME,
                        slo.percentile if slo is not None else 1.0,
                    ),
                    client_host=t.client_host,
                    client_vm=t.client_vm,
                )
            )
        weights = {c.name: c.weight for c in network.classes}
        return Plan(
            NAME,
            0,
            tenants,
            disciplines={
                Stage.NET_IN: Discipline("wfq", class_weight=weights),
                Stage.STORAGE: Discipline("fifo"),
                Stage.NET_OUT: Discipline("wfq", class_weight=weights),
            },
            aequitas=AequitasPlan(network, traffic, prediction),
            meta=dict(meta or {}),
        )


def aequitas(tset: TenantSet) -> AequitasPolicy:
    """The ``aequitas`` admission policy (registry factory)."""
    return AequitasPolicy(tset)
